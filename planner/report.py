"""Render results as an aligned text table, JSON or CSV.

:func:`emit` takes a dict (one record), a list of dicts (rows) or a pandas
DataFrame. Table mode is for people: byte counts in kB/MB/GB (decimal), times in
ms or s, FLOPs in GFLOP/TFLOP, large integers with thousands separators. JSON and
CSV are for programs: raw SI numbers (bytes, seconds, FLOPs), exactly as computed.
Cells of multi-row tables are cut at :data:`MAX_CELL` characters (use JSON or CSV for
the full text of sources and notes).

The unit of a value is read from its key, following the naming rule of the
package (``_bytes``, ``_s``, ``_flops``, ...). pandas is never imported here; a
DataFrame is recognised by its ``to_dict`` method.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from planner import fmt

FORMATS = ("table", "json", "csv")
#: widest cell of a multi-row table [characters]; longer text (sources, notes) is cut with "…"
MAX_CELL = 48


# --------------------------------------------------------------------------- plain values
def _plain(v: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and dataclass-like objects to JSON-able values."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_plain(x) for x in v]
    if hasattr(v, "tolist"):  # numpy scalar or array
        return _plain(v.tolist())
    if hasattr(v, "item"):
        return _plain(v.item())
    if hasattr(v, "as_dict"):
        return _plain(v.as_dict())
    if hasattr(v, "isoformat"):  # date / datetime
        return v.isoformat()
    return str(v)


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested mappings with dotted keys: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


# --------------------------------------------------------------------------- human units
def _si(value: float, unit: str, steps: tuple[tuple[float, str], ...]) -> str:
    a = abs(value)
    for scale, prefix in steps:
        if a >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    scale, prefix = steps[-1]
    return f"{value / scale:.4g} {prefix}{unit}"


_BYTES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_FLOPS = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1.0, ""))


def human(key: str, value: Any) -> str:
    """Format one value for a table cell, choosing the unit from the key name.

    Parameters
    ----------
    key : the field name; its suffix gives the unit (``_bytes``, ``_bytes_per_token``,
        ``_bytes_s``, ``_s``, ``_flops``, ``_tflops``, ``_tops``, ``_gbs``, ``_gb``, ``_w``,
        ``_pct``, ``_tok_s``, ``usd_*`` money); a ``_low`` / ``_high`` suffix (the ends
        of an error band) keeps the unit of the name before it
    value : the raw value (SI units for numbers)

    Returns
    -------
    str
        e.g. ``"35.28 GB"``, ``"12.3 ms"``, ``"989 TFLOPS"``, ``"1,234"``, ``"yes"``, ``"-"``.
    """
    v = _plain(value)
    if v is None or v == "":
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return "; ".join(human(key, x) for x in v) if v else "-"
    if isinstance(v, dict):
        return ", ".join(f"{k}={human(k, x)}" for k, x in v.items())
    if isinstance(v, str):
        return v
    k = key.rsplit(".", 1)[-1].lower()
    k = k.removesuffix("_low").removesuffix("_high")  # an error band's ends: the value's unit
    if "bytes" in k and (k.endswith("_s") or k.endswith("_bytes_per_s")):
        return _si(v, "B/s", _BYTES)
    if "bytes" in k:
        if k.endswith("per_token"):
            return _si(v, "B/token", _BYTES)
        return _si(v, "B", _BYTES)
    if k.endswith("_tflops"):
        return f"{fmt.num(v)} TFLOPS"
    if k.endswith("_tops"):
        return f"{fmt.num(v)} TOPS"
    if k.endswith("_gbs") or "_gbs_" in k:  # interconnect_gbs_unidir too
        return f"{fmt.num(v)} GB/s"
    if k.endswith("_w"):
        return f"{fmt.num(v)} W"
    if k.endswith("_pct"):  # signed for differences and biases, plain for error sizes
        signed = "diff" in k or "bias" in k
        return f"{v:+.2f} %" if signed else f"{v:.2f} %"
    if k.endswith("flops"):
        return _si(v, "FLOP", _FLOPS)
    if k.endswith("_tok_s") or k.endswith("tok_s_per_gpu"):
        return f"{v:,.1f} tok/s"
    if k.endswith("_gb"):
        return f"{fmt.num(v)} GB"
    if k.startswith("usd") and isinstance(v, (int, float)):  # money (planner.fmt.usd)
        return fmt.usd(v)
    if k.endswith("_s") and isinstance(v, (int, float)):
        if abs(v) < 10:
            return f"{fmt.num(v * 1e3)} ms"
        return f"{fmt.num(v)} s"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        return fmt.num(v)
    return str(v)


# --------------------------------------------------------------------------- records
def _records(obj: Any) -> tuple[list[dict[str, Any]], list[str], bool]:
    """(rows, columns, is_single_record) for a dict, list of dicts or DataFrame."""
    if hasattr(obj, "to_dict") and hasattr(obj, "columns"):  # pandas DataFrame
        cols = [str(c) for c in obj.columns]
        rows = [{str(k): v for k, v in r.items()} for r in obj.to_dict(orient="records")]
        return rows, cols, False
    if isinstance(obj, Mapping):
        return [dict(obj)], list(obj.keys()), True
    if isinstance(obj, Iterable) and not isinstance(obj, (str, bytes)):
        rows = [dict(r) for r in obj]
        cols: list[str] = []
        seen: set[str] = set()
        for r in rows:
            for k in r:
                if k not in seen:
                    seen.add(k)
                    cols.append(k)
        return rows, cols, False
    raise TypeError(
        f"emit() takes a dict, a list of dicts or a DataFrame, not {type(obj).__name__}"
    )


def _table(lines: list[list[str]], header: bool) -> str:
    widths = [max(len(r[i]) for r in lines) for i in range(len(lines[0]))]
    out = []
    for n, r in enumerate(lines):
        cells = [c.ljust(w) for c, w in zip(r, widths, strict=True)]
        out.append("  ".join(cells).rstrip())
        if header and n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out) + "\n"


def _csv_cell(v: Any) -> Any:
    v = _plain(v)
    if v is None:
        return ""
    if isinstance(v, list):
        return "; ".join(str(_csv_cell(x)) for x in v)
    if isinstance(v, float):
        return repr(v)
    return v


def render(obj: Any, fmt: str = "table") -> str:
    """Return the text :func:`emit` would write (see there)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if fmt == "json":
        if hasattr(obj, "to_dict") and hasattr(obj, "columns"):
            obj = obj.to_dict(orient="records")
        return json.dumps(_plain(obj), indent=2, allow_nan=False) + "\n"
    rows, cols, single = _records(obj)
    flat = [flatten(_plain(r)) for r in rows]
    cols = list(dict.fromkeys(k for r in flat for k in r)) if flat else cols
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        for r in flat:
            w.writerow({k: _csv_cell(r.get(k)) for k in cols})
        return buf.getvalue()
    # table
    if not flat or not cols:
        return "(no rows)\n"
    if single:
        r = flat[0]
        return _table([[k, human(k, r[k])] for k in cols], header=False)
    lines = [cols] + [[_cut(human(k, r.get(k))) for k in cols] for r in flat]
    return _table(lines, header=True)


def _cut(text: str, width: int = MAX_CELL) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def emit(obj: Any, fmt: str = "table", stream: TextIO | None = None) -> None:
    """Write a dict, a list of dicts or a DataFrame as a table, JSON or CSV.

    Parameters
    ----------
    obj : one record (dict, shown as ``key  value`` lines in a table), a list of
        records (one row each) or a pandas DataFrame
    fmt : ``"table"`` (human units: GB, ms, ...), ``"json"`` or ``"csv"`` (raw SI
        numbers: bytes, seconds, FLOPs). Nested dicts are kept in JSON and
        flattened to dotted column names in table and CSV.
    stream : where to write; default ``sys.stdout`` (looked up at call time)
    """
    (stream or sys.stdout).write(render(obj, fmt))
