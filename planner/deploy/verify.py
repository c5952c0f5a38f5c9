"""How far a prediction was off: ``expected.json`` (what ``recommend --emit`` predicted for an
option) against the saved result of the benchmark that ``bench.sh`` ran on it.

``expected.json`` (schema ``planner-expected/1``, :mod:`planner.deploy.expected`, the one model
that writes and reads it) gives the option (GPU, engine, release, precision, layout, replicas), the workload (model, prompt
and answer lengths, the request rate per replica) and, per metric, the predicted value with
its band (``low``/``high``, None when unknown). Its throughputs are per replica at
``rate_rps_per_replica``; a result whose request rate is the whole fleet's
(``rate x replicas``) is compared with the fleet's prediction (throughputs x replicas).

Checks before comparing: a result of another model is refused (the prediction says nothing
about it); prompt or answer lengths more than :data:`LENGTH_TOLERANCE` away from the
expected ones, or a request rate that is neither the replica's nor the fleet's, are warned
about and the verdict says the run is not the predicted workload.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from planner.catalog.catalog import Catalog
from planner.deploy.expected import Expected
from planner.deploy.results import BenchResult
from planner.errors import PlannerError

#: relative difference of mean prompt / answer length or request rate still read as "the same"
LENGTH_TOLERANCE = 0.10
RATE_TOLERANCE = 0.05


#: the metrics compared: expected.json key -> (result accessor, kind: speed or time)
METRICS: dict[str, tuple[str, str]] = {
    "output_throughput_tok_s": ("output_throughput_tok_s", "speed"),
    "request_throughput_rps": ("request_throughput_rps", "speed"),
    "ttft_p50_s": ("ttft:median", "time"),
    "ttft_p99_s": ("ttft:p99", "time"),
    "tpot_p50_s": ("tpot:median", "time"),
    "tpot_p99_s": ("tpot:p99", "time"),
    "e2e_p99_s": ("e2e:p99", "time"),
}


@dataclass(frozen=True)
class Check:
    """The comparison: one row per metric, what did not match, and a one-line verdict."""

    rows: list[dict[str, Any]]
    warnings: list[str]
    verdict: str
    fleet_scale: int


def _same_model(expected_model: str, result_model: str, catalog: Catalog | None) -> bool:
    if not result_model:
        return True  # nothing recorded: nothing to contradict
    if catalog is not None:
        ids = []
        for m in (expected_model, result_model):
            try:
                ids.append(catalog.model(m).id)
            except PlannerError:
                ids.append(None)
        if None not in ids:
            return ids[0] == ids[1]

    def norm(s: str) -> str:
        s = s.rsplit("/", 1)[-1].lower()
        return re.sub(r"[-_.]?(instruct|chat|it)$", "", s).replace("_", "-")

    return norm(expected_model) == norm(result_model)


def _measured(r: BenchResult, accessor: str) -> float | None:
    if ":" in accessor:
        metric, stat = accessor.split(":")
        return r.latency(metric, stat)
    return getattr(r, accessor)


def loaded_replicas(exp: Expected, r: BenchResult) -> int | None:
    """How many replicas the run loaded, told by its request rate: 1 at the replica's rate,
    ``replicas`` at the fleet's (within :data:`RATE_TOLERANCE`); None for another rate."""
    rate, per, n = r.request_rate_rps, exp.workload.rate_rps_per_replica, exp.option.replicas
    if not math.isfinite(rate):
        return None
    if n > 1 and abs(rate - per * n) <= RATE_TOLERANCE * per * n:
        return n
    return 1 if abs(rate - per) <= RATE_TOLERANCE * per else None


def compare(exp: Expected, r: BenchResult, catalog: Catalog | None = None) -> Check:
    """Per metric: predicted (for the replica or the fleet the run loaded), its band, the
    measurement, the error ``(predicted - measured) / measured`` [%] and whether the
    measurement is inside the band.

    Raises
    ------
    PlannerError
        when the result is of another model than the prediction
    """
    w = exp.workload
    if not _same_model(w.model, r.model_id, catalog):
        raise PlannerError(
            f"{r.where}: a run of {r.model_id}, but expected.json predicts {w.model}; "
            "compare a result with the expected.json of its own deployment"
        )
    warnings = []
    for name, want, got in (
        ("prompt", w.input_tokens, r.input_tokens_mean),
        ("answer", w.output_tokens, r.output_tokens_mean),
    ):
        if abs(got - want) > LENGTH_TOLERANCE * want:
            warnings.append(
                f"mean {name} length {got:.0f} tokens, expected {want}"
                + (
                    " (answers ended early: run the client with --ignore-eos)"
                    if name == "answer" and got < want
                    else ""
                )
            )
    n = exp.option.replicas
    scale = loaded_replicas(exp, r)
    if scale is None:
        scale = 1
        rate = r.request_rate_rps
        warnings.append(
            (
                f"request rate {rate:g} req/s"
                if math.isfinite(rate)
                else "the run sent every request at once (request rate inf)"
            )
            + f", expected {w.rate_rps_per_replica:g} per replica"
            + (f" ({w.rate_rps_per_replica * n:g} for {n} replicas)" if n > 1 else "")
        )
    rows = []
    for key, (accessor, kind) in METRICS.items():
        p = getattr(exp.predicted, key, None)
        meas = _measured(r, accessor)
        mult = scale if kind == "speed" else 1
        pred = None if p is None else p.value * mult
        lo = None if p is None or p.low is None else p.low * mult
        hi = None if p is None or p.high is None else p.high * mult
        err = None if pred is None or meas is None or meas <= 0 else 100.0 * (pred - meas) / meas
        inside = None if lo is None or hi is None or meas is None else bool(lo <= meas <= hi)
        rows.append(
            {
                "metric": key,
                "predicted": pred,
                "low": lo,
                "high": hi,
                "measured": meas,
                "error_pct": err,
                "in_band": inside,
                "note": "" if meas is not None else "not in the result file",
            }
        )
    return Check(rows, warnings, _verdict(rows, warnings, scale, n), scale)


def _verdict(rows: list[dict[str, Any]], warnings: list[str], scale: int, n: int) -> str:
    scored = [x for x in rows if x["error_pct"] is not None]
    banded = [x for x in scored if x["in_band"] is not None]
    inside = sum(1 for x in banded if x["in_band"])
    who = f"the fleet of {n} replicas" if scale > 1 else "one replica"
    if not scored:
        return (
            f"verdict: nothing to compare ({who}): the result holds none of the predicted metrics"
        )
    worst = max(scored, key=lambda x: abs(x["error_pct"]))
    text = (
        f"verdict: {inside} of {len(banded)} measured metrics inside the predicted band "
        f"({who}); largest error {worst['error_pct']:+.1f}% ({worst['metric']})"
    )
    if warnings:
        text += "; not the predicted workload: " + "; ".join(warnings)
    return text
