"""The measured ceiling: the highest published output tok/s per GPU of a (GPU, model,
engine) and of a (GPU, model), read from ``data/calibration/measured_ceiling.csv`` (built
from the public benchmark rows by ``scripts/measured_ceiling.py --write``, see
:mod:`planner.benchmarks.ceiling`), and the check ``recommend`` / ``capacity`` print: a
predicted operating point far above everything measured for its kind of deployment.

The file is small (a few hundred rows) and read once, on the first question.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from planner.catalog.catalog import DATA_DIR
from planner.files import iter_lines

__all__ = [
    "CEILING_FACTOR",
    "CEILING_PATH",
    "Ceiling",
    "ceiling_check",
    "ceiling_of_row",
    "measured_ceiling",
]

CEILING_PATH = DATA_DIR / "calibration" / "measured_ceiling.csv"
#: the least ratio (predicted / best measured output tok/s per GPU) that is flagged; the
#: option's own error band raises it to ``1 / low_ratio`` where that is larger (the lowest
#: throughput the band allows still beats every measurement)
CEILING_FACTOR = 1.5


@dataclass(frozen=True)
class Ceiling:
    """One best measured operating point (a row of the ceiling file).

    Attributes
    ----------
    output_tok_s_per_gpu : best measured output rate [tok/s/GPU]
    row_id, source, as_of : the benchmark row it comes from
    framework, precision, layout, speculative, mode, kind : how it was run (``kind``:
        ``serving`` or ``offline``)
    concurrency : clients of a serving run, None when not a concurrency run [-]
    interactivity_tok_s_per_user : 1000 / TPOT [ms] where the point's TPOT is published
    """

    hardware: str
    model: str
    framework: str
    output_tok_s_per_gpu: float
    row_id: str
    source: str
    as_of: str
    precision: str
    layout: str
    speculative: str
    mode: str
    kind: str
    concurrency: int | None
    interactivity_tok_s_per_user: float | None

    def describe(self) -> str:
        """``SGLang TP8 MTP, ixh-0017``-like text: engine, layout, speculation, row id."""
        spec = f" {self.speculative.upper()}" if self.speculative else ""
        conc = f", {self.concurrency} clients" if self.concurrency else ""
        off = ", offline" if self.kind == "offline" else ""
        return f"{self.framework} {self.layout}{spec}{conc}{off}, {self.row_id}"


def _opt_float(v: str) -> float | None:
    return float(v) if v.strip() else None


@lru_cache(maxsize=4)
def _table(path: str) -> dict[tuple[str, str, str, str], Ceiling]:
    p = Path(path)
    if not p.exists():
        return {}
    text = p.read_text(encoding="utf-8")
    lines = [ln for ln in iter_lines(text) if not ln.startswith("#")]
    out: dict[tuple[str, str, str, str], Ceiling] = {}
    for d in csv.DictReader(lines):
        fw = d["framework"] if d["scope"] == "engine" else ""
        conc = d["concurrency"].strip()
        out[(d["hardware"], d["model"], fw, d["kind"])] = Ceiling(
            hardware=d["hardware"],
            model=d["model"],
            framework=d["framework"],
            output_tok_s_per_gpu=float(d["output_tok_s_per_gpu"]),
            row_id=d["row_id"],
            source=d["source"],
            as_of=d["as_of"],
            precision=d["precision"],
            layout=d["layout"],
            speculative=d["speculative"],
            mode=d["mode"],
            kind=d["kind"],
            concurrency=int(float(conc)) if conc else None,
            interactivity_tok_s_per_user=_opt_float(d["interactivity_tok_s_per_user"]),
        )
    return out


def measured_ceiling(
    gpu_id: str,
    model_id: str,
    framework_id: str | None = None,
    kind: str = "serving",
    *,
    path: Path | None = None,
) -> Ceiling | None:
    """The best measured output tok/s per GPU of ``(gpu_id, model_id, framework_id)``, or
    of ``(gpu_id, model_id)`` over every engine when ``framework_id`` is None, over serving
    rows (``kind="serving"``) or offline / static-batch rows (``"offline"``); None when
    nothing of that key is published."""
    return _table(str(path or CEILING_PATH)).get((gpu_id, model_id, framework_id or "", kind))


def ceiling_of_row(row_id: str, *, path: Path | None = None) -> Ceiling | None:
    """The ceiling record whose best point is benchmark row ``row_id`` (its source and date),
    or None."""
    return next((c for c in _table(str(path or CEILING_PATH)).values() if c.row_id == row_id),
                None)  # fmt: skip


def ceiling_check(
    predicted_tok_s_per_gpu: float | None,
    gpu_id: str,
    model_id: str,
    framework_id: str,
    *,
    low_ratio: float | None = None,
    path: Path | None = None,
) -> dict[str, Any]:
    """Compare a predicted output rate with the measured ceiling of its GPU and model.

    Parameters
    ----------
    predicted_tok_s_per_gpu : the option's output rate at its operating point [tok/s/GPU]
    gpu_id, model_id, framework_id : catalog ids of the option
    low_ratio : the low end of the option's error band (measured / predicted) [-]; the
        flag's threshold is ``max(CEILING_FACTOR, 1 / low_ratio)``

    Returns
    -------
    dict
        ``measured_ceiling_tok_s_per_gpu`` [tok/s/GPU] (the best of any engine on this
        GPU and model over serving rows; over offline / static-batch rows where no serving
        row is published), ``ceiling_ratio`` (predicted / that) [-], ``ceiling_row`` (its row
        id), ``measured_ceiling_engine_tok_s_per_gpu`` / ``ceiling_engine_row`` (the
        option's own engine's best, None when none is published), ``ceiling_threshold``
        [-] and ``ceiling_note`` (one line, or None when within the threshold).
        ``ceiling_note`` says "no published measurement of this model on this GPU" when
        nothing of the (GPU, model) is published.
    """
    threshold = CEILING_FACTOR
    if low_ratio is not None and low_ratio > 0:
        threshold = max(threshold, 1.0 / low_ratio)
    # serving rows first (what recommend and capacity answer); offline ones where none
    own = measured_ceiling(gpu_id, model_id, framework_id, path=path) or measured_ceiling(
        gpu_id, model_id, framework_id, "offline", path=path
    )
    c = measured_ceiling(gpu_id, model_id, None, path=path) or measured_ceiling(
        gpu_id, model_id, None, "offline", path=path
    )
    out: dict[str, Any] = {
        "measured_ceiling_tok_s_per_gpu": c.output_tok_s_per_gpu if c else None,
        "ceiling_ratio": None,
        "ceiling_row": c.row_id if c else None,
        "measured_ceiling_engine_tok_s_per_gpu": own.output_tok_s_per_gpu if own else None,
        "ceiling_engine_row": own.row_id if own else None,
        "ceiling_threshold": threshold,
        "ceiling_note": None,
    }
    if c is None:
        out["ceiling_note"] = (
            f"no published measurement of this model on this GPU ({model_id} on {gpu_id})"
        )
        return out
    if predicted_tok_s_per_gpu is None or not predicted_tok_s_per_gpu > 0:
        return out
    ratio = predicted_tok_s_per_gpu / c.output_tok_s_per_gpu
    out["ceiling_ratio"] = ratio
    if ratio > threshold:
        mine = "" if own else f"; none published with {framework_id}"
        out["ceiling_note"] = (
            f"predicted {predicted_tok_s_per_gpu:,.0f} tok/s/GPU is {ratio:.1f}x the best "
            f"measured for {model_id} on {gpu_id} ({c.output_tok_s_per_gpu:,.0f}, "
            f"{c.describe()}{mine}); no measurement at this operating point"
        )
    return out
