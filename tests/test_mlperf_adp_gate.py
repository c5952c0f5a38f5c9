"""scripts/mlperf_adp_gate.py: TensorRT-LLM's attention-DP balance gate window, and the
what-if's mean iterations of the MLPerf DeepSeek-R1 Server runs (diagnosis, changes/s14-mlperfr1.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location(
        "mlperf_adp_gate", ROOT / "scripts" / "mlperf_adp_gate.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mlperf_adp_gate", mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    ("lam_s", "timeout", "wait", "window"),
    [
        (0.59, 9, 3, 9),  # ceil(8 / 0.59) = 14 >= 9: the timeout releases, no batching wait
        (2.0, 9, 3, 7),  # ceil(8 / 2) = 4 < 9: every rank has a prompt, then 3 more
        (1.01, 9, 3, 11),  # ceil(7.92) = 8 < 9: 8 + 3
        (0.0, 6, 2, 6),  # no arrivals: only the timeout
    ],
)
def test_gate_window_by_hand(lam_s, timeout, wait, window):
    assert _script().gate_window(8, lam_s, timeout, wait) == window


def test_the_gate_lengthens_every_run_a_little():
    """At each run's measured batch (bundled profile, seed 0), the gated mean iteration is
    1-9 % above the simulator-like one on all 26 DEP8 Server runs (the what-if's table:
    median 1.047, 1.012-1.084), and the decode-only padded step is never above the gated one."""
    t = _script().table()
    assert len(t) == 26
    assert t["gated/sim"].between(1.0, 1.09).all()
    assert t["gated/sim"].median() == pytest.approx(1.047, abs=0.01)
    assert (t["decode_only"] <= t["gated"]).all()
