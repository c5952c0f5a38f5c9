"""Traffic month by month: a scenario's traffic grown by a rate, or a series from a file.

A month's :class:`~planner.workload.traffic.Traffic` is the scenario's, with its mean (and its
peak, where given) replaced; the daily profile, the arrival process and the lengths stay.

* :func:`grown_traffic`: month ``m`` (1-based) runs at ``(1 + g) ** (m - 1)`` times month 1
  (the scenario's own traffic, unchanged).
* :func:`read_traffic_series` reads a file of monthly peaks (and optionally means) [req/s],
  CSV or YAML, every value checked; :func:`series_traffic` turns its rows into traffic: a
  row with only ``peak_rps`` scales the scenario's traffic to that peak (the mean and the
  daily profile follow); a row with both sets both.

Every failure is one :class:`~planner.errors.PlannerError` naming the file, the month and the
field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from ..catalog import Frozen
from ..errors import PlannerError, read_text, shown
from ..files import iter_lines, load_yaml
from .lengths import MIN_RPS
from .traffic import Traffic

__all__ = [
    "MAX_GROWTH_PER_MONTH",
    "MAX_MONTHS",
    "MIN_GROWTH_PER_MONTH",
    "MonthTraffic",
    "grown_traffic",
    "read_traffic_series",
    "series_notes",
    "series_traffic",
    "traffic_at",
]

#: longest plan [months]: ten years
MAX_MONTHS = 120
#: growth per month [fraction]: -0.99 (traffic falls 99 % a month) to 10 (x11 a month)
MIN_GROWTH_PER_MONTH = -0.99
MAX_GROWTH_PER_MONTH = 10.0
#: the largest traffic series file read [bytes]
SERIES_LIMIT_BYTES = 1_000_000
SERIES_FIELDS = ("month", "peak_rps", "mean_rps")
#: the largest rate a traffic takes [req/s] (Traffic's own bound)
MAX_RPS = 1e7


class MonthTraffic(Frozen):
    """One month of a traffic series: its planning peak and, optionally, its mean [req/s]."""

    month: int = Field(ge=1, le=MAX_MONTHS)
    peak_rps: float = Field(gt=0)
    mean_rps: float | None = Field(None, gt=0)


def _invalid(e: ValidationError) -> str:
    err = e.errors()[0] if e.errors() else {}
    msg = str(err.get("msg", e)).removeprefix("Value error, ")
    loc = ".".join(str(x) for x in err.get("loc", ()))
    return f"{loc}: {msg}" if loc else msg


def traffic_at(traffic: Traffic, mean_rps: float, peak_rps: float | None, where: str) -> Traffic:
    """``traffic`` with its mean and peak replaced [req/s] (profile and arrivals kept).

    Raises
    ------
    PlannerError
        the new traffic breaks a rule of :class:`Traffic` (a peak below the mean, a rate
        beyond 1e7 req/s); the message starts with ``where``.
    """
    for name, v in (("mean_rps", mean_rps), ("peak_rps", peak_rps)):
        if v is not None and not MIN_RPS <= v <= MAX_RPS:
            raise PlannerError(
                f"{where}: traffic {name} {v:.4g} req/s is outside [{MIN_RPS:g}, {MAX_RPS:g}] req/s"
            )
    d = traffic.model_dump()
    d["mean_rps"] = mean_rps
    d["peak_rps"] = peak_rps
    try:
        return Traffic.model_validate(d)
    except ValidationError as e:
        raise PlannerError(f"{where}: traffic {_invalid(e)}") from None


def _check_growth(growth_per_month: float, months: int) -> None:
    g = growth_per_month
    if isinstance(g, bool) or not isinstance(g, (int, float)) or not math.isfinite(g):
        raise PlannerError(f"growth_per_month must be a finite number, got {shown(g)}")
    if not MIN_GROWTH_PER_MONTH <= g <= MAX_GROWTH_PER_MONTH:
        raise PlannerError(
            f"growth_per_month must be between {MIN_GROWTH_PER_MONTH:g} and "
            f"{MAX_GROWTH_PER_MONTH:g} (a fraction per month: 0.1 is +10 %), got {g:g}"
        )
    if isinstance(months, bool) or not isinstance(months, int) or not 1 <= months <= MAX_MONTHS:
        raise PlannerError(f"months must be a whole number from 1 to {MAX_MONTHS}, got {months!r}")


def grown_traffic(traffic: Traffic, growth_per_month: float, months: int) -> list[Traffic]:
    """Month 1 is ``traffic``; month ``m`` runs at ``(1 + growth_per_month) ** (m - 1)`` times
    its mean and peak [req/s].

    Parameters
    ----------
    traffic : month 1's traffic (a scenario's)
    growth_per_month : growth of the traffic per month [fraction], e.g. 0.1 for +10 %
    months : months to plan [-], 1 to :data:`MAX_MONTHS`

    Returns
    -------
    list[Traffic] : one per month, month 1 first
    """
    _check_growth(growth_per_month, months)
    base_mean = traffic.base_mean_rps()
    out = [traffic]
    for m in range(2, months + 1):
        f = (1.0 + growth_per_month) ** (m - 1)
        peak = traffic.peak_rps * f if traffic.peak_rps is not None else None
        out.append(traffic_at(traffic, base_mean * f, peak, f"month {m} (x{f:.4g})"))
    return out


def series_traffic(traffic: Traffic, rows: Sequence[MonthTraffic], where: str) -> list[Traffic]:
    """The traffic of each row of a series: a row with ``mean_rps`` sets the mean and the
    peak; a row with only ``peak_rps`` scales ``traffic`` (mean, peak, profile) to that peak.

    Parameters
    ----------
    traffic : the scenario's traffic (profile, arrivals and mean-to-peak ratio)
    rows : the series, month 1 first (:func:`read_traffic_series`)
    where : the series' name for messages (a file name)
    """
    if not rows:
        raise PlannerError(f"{where}: no months")
    base_peak, base_mean = traffic.peak(), traffic.base_mean_rps()
    out = []
    for r in rows:
        at = f"{where}: month {r.month}"
        if r.mean_rps is not None:
            if r.mean_rps > r.peak_rps:
                raise PlannerError(
                    f"{at}: mean_rps ({r.mean_rps:g}) is above peak_rps ({r.peak_rps:g})"
                )
            out.append(traffic_at(traffic, r.mean_rps, r.peak_rps, at))
        else:
            f = r.peak_rps / base_peak
            out.append(traffic_at(traffic, base_mean * f, r.peak_rps, at))
    return out


def series_notes(rows: Sequence[MonthTraffic], traffic: Sequence[Traffic]) -> list[str]:
    """A note for the months whose planning peak (the busiest hour of the daily profile at the
    row's mean) is above the row's peak: they are planned for the busiest hour."""
    over = [
        r.month for r, t in zip(rows, traffic, strict=True) if t.peak() > r.peak_rps * (1 + 1e-9)
    ]
    if not over:
        return []
    return [
        f"months {', '.join(map(str, over))}: the daily profile's busiest hour at the series' "
        "mean is above its peak_rps; those months are planned for the busiest hour (peak_rps "
        "shows it)"
    ]


# --------------------------------------------------------------------------- reading
def _number(v: Any, at: str, field: str) -> float:
    """A strict number: an int or float (no bool, no quoted text), finite and > 0."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        hint = ""
        if isinstance(v, str):
            try:
                float(v)
                hint = " (text, not a number: no quotes; YAML reads 2e7 as text, write 2.0e+7)"
            except ValueError:
                pass
        raise PlannerError(f"{at}: {field} must be a number [req/s], got {shown(v)}{hint}")
    x = float(v)
    if not (math.isfinite(x) and x > 0):
        raise PlannerError(f"{at}: {field} must be a finite number > 0 [req/s], got {shown(v)}")
    if x > MAX_RPS:
        raise PlannerError(f"{at}: {field} must be at most 1e7 req/s, got {x:g}")
    return x


def _row(raw: dict[str, Any], i: int, where: str) -> MonthTraffic:
    """Row ``i`` (1-based) of a series from its fields (numbers already parsed)."""
    at = f"{where}: month {i}"
    unknown = [k for k in raw if k not in SERIES_FIELDS]
    if unknown:
        raise PlannerError(
            f"{at}: unknown field {shown(unknown[0])} (fields: {', '.join(SERIES_FIELDS)})"
        )
    if "month" in raw:
        m = raw["month"]
        if isinstance(m, bool) or not isinstance(m, int) or m != i:
            raise PlannerError(
                f"{at}: month must be {i} (months are numbered 1, 2, 3, ... in order), "
                f"got {shown(m)}"
            )
    if raw.get("peak_rps") is None:
        raise PlannerError(f"{at}: peak_rps is missing (the month's peak arrival rate [req/s])")
    peak = _number(raw["peak_rps"], at, "peak_rps")
    mean = _number(raw["mean_rps"], at, "mean_rps") if raw.get("mean_rps") is not None else None
    return MonthTraffic(month=i, peak_rps=peak, mean_rps=mean)


def _csv_value(text: str, at: str, field: str) -> Any:
    t = text.strip()
    try:
        return int(t) if field == "month" else float(t)
    except ValueError:
        kind = "a whole number" if field == "month" else "a number"
        raise PlannerError(f"{at}: {field} must be {kind}, got {shown(t)}") from None


def _csv_rows(text: str, where: str) -> list[dict[str, Any]]:
    import csv

    try:
        rows = list(csv.reader(iter_lines(text)))
    except csv.Error as e:  # a NUL byte, a field over the csv module's size limit
        raise PlannerError(f"{where}: not a readable CSV file ({e})") from None
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise PlannerError(f"{where}: empty (expected a header row: month,peak_rps,mean_rps)")
    head = [c.strip() for c in rows[0]]
    for c in head:
        if c not in SERIES_FIELDS:
            raise PlannerError(
                f"{where}: unknown column {shown(c)} (columns: {', '.join(SERIES_FIELDS)})"
            )
        if head.count(c) > 1:
            raise PlannerError(f"{where}: column {shown(c)} appears {head.count(c)} times")
    if "peak_rps" not in head:
        raise PlannerError(f"{where}: no peak_rps column (the monthly peak [req/s])")
    out = []
    for i, r in enumerate(rows[1:], 1):
        at = f"{where}: month {i}"
        if len(r) > len(head):
            raise PlannerError(f"{at}: {len(r)} cells for {len(head)} columns")
        out.append(
            {h: _csv_value(v, at, h) for h, v in zip(head, r, strict=False) if v.strip() != ""}
        )
    return out


def _yaml_rows(text: str, where: str) -> list[Any]:
    data = load_yaml(text, where)
    if isinstance(data, dict):
        extra = [k for k in data if k != "months"]
        if extra:
            raise PlannerError(
                f"{where}: unknown key {shown(extra[0])} (expected 'months:', a list of "
                "{peak_rps: ..., mean_rps: ...} or of peaks)"
            )
        data = data.get("months")
    if not isinstance(data, list):
        raise PlannerError(
            f"{where}: expected 'months:' with a list of {{peak_rps: ..., mean_rps: ...}} "
            f"(or of peaks [req/s]), got {type(data).__name__}"
        )
    out = []
    for i, item in enumerate(data, 1):
        if isinstance(item, dict):
            out.append({str(k): v for k, v in item.items()})
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            out.append({"peak_rps": item})
        else:
            raise PlannerError(
                f"{where}: month {i}: expected a peak [req/s] or {{peak_rps: ..., mean_rps: "
                f"...}}, got {shown(item)}"
            )
    return out


def read_traffic_series(path: str | Path) -> list[MonthTraffic]:
    """A file of monthly traffic: one row per month, month 1 first.

    CSV (``.csv``): a header with ``peak_rps`` and optionally ``month`` and ``mean_rps``;
    YAML (``.yaml`` / ``.yml``): ``months:`` with a list of ``{peak_rps, mean_rps}``
    mappings or of bare peaks. Rates are [req/s], finite, > 0, at most 1e7; ``month``, where
    given, numbers the rows 1, 2, 3, ...; at most :data:`MAX_MONTHS` rows.

    Raises
    ------
    PlannerError
        naming the file, the month and the field: a missing or unknown column, a repeated
        column, text or a bool where a number belongs, a mean above its peak, too many rows.
    """
    p = Path(path)
    where = str(p)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".yaml", ".yml"):
        raise PlannerError(
            f"{where}: a traffic series is a .csv, .yaml or .yml file, got {shown(p.suffix)}"
        )
    text = read_text(p, "traffic series file", "CSV or YAML file", limit=SERIES_LIMIT_BYTES)
    raw = _csv_rows(text, where) if suffix == ".csv" else _yaml_rows(text, where)
    if not raw:
        raise PlannerError(f"{where}: no months (expected one row per month)")
    if len(raw) > MAX_MONTHS:
        raise PlannerError(f"{where}: {len(raw)} months; at most {MAX_MONTHS} are planned")
    return [_row(r, i, where) for i, r in enumerate(raw, 1)]
