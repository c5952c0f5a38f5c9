"""Numbers for people: one formatter for the app, the CLI tables and the Markdown report.

Thousands separators, dollars with sensible precision, no scientific notation for counts,
money or rates. Every function takes a raw value in SI units (seconds, dollars, req/s) and
returns text; ``None``, NaN and infinities are ``"-"``.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

MISSING = "-"


def _finite(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _fixed(x: float, decimals: int) -> str:
    """``x`` with ``decimals`` decimals and thousands separators, ties rounded half away from
    zero on the shortest decimal form (as the app's tables and charts round: 1350.5 ->
    1,351, where Python's format would give 1,350)."""
    q = Decimal(repr(x)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return f"{q:,.{decimals}f}"


def num(v: Any, sig: int = 4) -> str:
    """A number with ``sig`` significant digits, thousands separators and no exponent.

    Whole numbers of ``sig`` digits or more are shown whole (``12,966``, ``10,000``);
    smaller ones keep ``sig`` significant digits without trailing zeros (``2.701``,
    ``0.05``). Only magnitudes below 1e-6 fall back to an exponent.

    Parameters
    ----------
    v : the value (any real number; ``None``/NaN/inf give ``"-"``)
    sig : significant digits kept below ``10**sig``
    """
    x = _finite(v)
    if x is None:
        return MISSING
    if x == 0:
        return "0"
    a = abs(x)
    if a < 1e-6:
        return f"{x:.{sig - 1}e}"
    decimals = max(sig - 1 - math.floor(math.log10(a)), 0)
    text = _fixed(x, decimals)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def fixed(v: Any, decimals: int) -> str:
    """A number with exactly ``decimals`` decimals and thousands separators: ``fixed(1234.56,
    1)`` is ``1,234.6``, ``fixed(723.4, 0)`` is ``723`` (ties half away from zero)."""
    x = _finite(v)
    return MISSING if x is None else _fixed(x, decimals)


def count(v: Any) -> str:
    """A count (GPUs, requests, options) as a whole number: ``12,966``."""
    x = _finite(v)
    return MISSING if x is None else _fixed(x, 0)


def usd(v: Any) -> str:
    """Dollars: whole dollars from $1,000 (``$17,510``), cents from $1 (``$31.71``), three
    significant digits below $1 (``$0.0875``); never an exponent."""
    x = _finite(v)
    if x is None:
        return MISSING
    sign, a = ("-" if x < 0 else ""), abs(x)
    if a >= 1000:
        return f"{sign}${_fixed(a, 0)}"
    if a >= 1 or a == 0:
        return f"{sign}${_fixed(a, 2)}"
    return f"{sign}${num(a, 3)}"


def seconds(v: Any) -> str:
    """A duration: milliseconds below 1 s (``723 ms``, ``41.57 ms``), else seconds."""
    x = _finite(v)
    if x is None:
        return MISSING
    if abs(x) < 1:
        return f"{num(x * 1e3, 4)} ms"
    return f"{num(x, 4)} s"


def rate(v: Any, unit: str = "req/s") -> str:
    """A rate with its unit: ``1,000,000 req/s``, ``2.5 req/s``."""
    x = _finite(v)
    return MISSING if x is None else f"{num(x, 4)} {unit}"
