"""MLPerf Llama-2-70B Server and Interactive (tight TPOT, issue 32): the per-GPU throughput
the planner predicts at each scenario's P99 TTFT / TPOT limits must be within 15% of the
results, and the per-GPU order right, for H100, H200, B200, MI300X, MI325X and MI355X.

Marked xfail (strict) where the bundled profile misses, with the reason; a strict mark
fails as soon as the case is met, so the mark must then go."""

from __future__ import annotations

import pytest

from planner.benchmarks.io import load_measurements
from planner.benchmarks.mlperf_latency import CONSTRAINTS_S, tight_tpot_table
from planner.calibration.fit import public_files_default
from planner.catalog import load_catalog
from planner.catalog.profile import load_profile


@pytest.fixture(scope="module")
def table():
    cat = load_catalog()
    t = tight_tpot_table(load_measurements(public_files_default(), cat), cat, load_profile())
    return t.set_index(["mode", "gpu"])


def test_constraints_are_mlperfs():
    """llama2-70b: Server TTFT P99 2 s, TPOT P99 200 ms; Interactive 450 ms and 40 ms (the
    limits the rows' notes transcribe from the MLPerf rules)."""
    assert CONSTRAINTS_S == {"server": (2.0, 0.2), "interactive": (0.45, 0.04)}


_OFFLINE_TOO_HIGH = (
    "the throughput fit of TensorRT-LLM fp8 on Hopper predicts MLPerf v4.1 Offline 28% (H100) "
    "and 15% (H200) above the results too; at Server's loose limits capacity is the saturation "
    "rate, so the same excess shows here (a throughput-fit matter, not the latency model)"
)
_MISSES = {
    ("server", "nvidia-h100-sxm"): _OFFLINE_TOO_HIGH,
    ("server", "nvidia-h200-sxm"): _OFFLINE_TOO_HIGH,
    ("interactive", "amd-mi300x"): "predicted 18% low: P99 TPOT of 40 ms binds on iterations "
    "that carry a prompt chunk of vLLM's default budget; the submission's own scheduler "
    "settings are not stated",
    ("interactive", "amd-mi325x"): "MI325X has no fit of its own (vLLM fp8 of MI300X "
    "transferred): predicted equal to MI300X, measured 2.1x it in the same round (other "
    "submitters' tuned stacks)",
    ("interactive", "nvidia-b200"): "predicted 55% high: the system's layout is not stated and "
    "the assumed one (TP1, most Offline throughput) is not what a 40 ms TPOT submission runs",
}
CASES = [
    ("server", g)
    for g in ("nvidia-h100-sxm", "nvidia-h200-sxm", "nvidia-b200", "amd-mi300x", "amd-mi325x",
              "amd-mi355x")
] + [("interactive", g) for g in ("nvidia-b200", "amd-mi300x", "amd-mi325x", "amd-mi355x")]  # fmt: skip


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=_MISSES[c]))
        if c in _MISSES
        else c
        for c in CASES
    ],
    ids=lambda c: f"{c[0]}-{c[1]}",
)
def test_per_gpu_throughput_within_15_pct(table, case):
    r = table.loc[case]
    assert abs(r.predicted_per_gpu / r.measured_per_gpu - 1) <= 0.15, r.to_dict()


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param(
            "server",
            marks=pytest.mark.xfail(
                strict=True,
                reason="H100 and H200 predicted above MI300X and MI325X ("
                + _OFFLINE_TOO_HIGH
                + ")",
            ),
        ),
        pytest.param(
            "interactive",
            marks=pytest.mark.xfail(
                strict=True, reason="B200 above MI355X; MI325X not above MI300X (see above)"
            ),
        ),
    ],
)
def test_per_gpu_order(table, mode):
    t = table.loc[mode]
    assert list(t.measured_rank) == list(t.predicted_rank), t.to_string()
