"""Issue 32, item 1 (TTFT half): ``scripts/ttft_groups.py``, the TTFT misses grouped by
cause and the offline bursts' run length, on hand-made rows (the arithmetic in each test)."""

from __future__ import annotations

import importlib.util
import math
import sys

import pandas as pd
import pytest
from conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "ttft_groups.py"
GS = "GPUStack performance lab"
IX = "SemiAnalysis InferenceX (InferenceMAX) open results"


@pytest.fixture(scope="module")
def tt():
    spec = importlib.util.spec_from_file_location("ttft_groups", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ttft_groups"] = mod
    spec.loader.exec_module(mod)
    return mod


def _row(i, measured, pred, **kw):
    r = dict(id=f"r{i}", source=IX, engine="sglang", vendor="nvidia", gpu="nvidia-b200",
             precision="fp8", tp=8.0, model="deepseek-v3", as_of="2026-05-22", mode="concurrency",
             release="0.5.12 (image) | client", release_used="0.5.12", provenance="fit (x)",
             over_capacity=False, concurrency=4.0, prompt_tokens=921.6, metric_class="ttft",
             measured=measured, measured_over_unscaled=measured / pred,
             tpot_ratio_same_run=float("nan"), isl=1024.0, osl=1024.0,
             total_tok_s_pred=float("nan"))  # fmt: skip
    r.update(kw)
    return r


def test_groups_first_match(tt, tmp_path):
    rows = [
        _row(1, 100.0, 50.0, over_capacity=True),  # over capacity, whatever else
        _row(2, 100.0, 50.0, as_of="2025-03-18"),  # DeepSeek before 2025-04: early stack
        _row(3, 100.0, 50.0, mode="offline", source=GS),  # offline burst
        _row(4, 100.0, 50.0, mode="server"),  # MLPerf harness
        _row(5, 100.0, 50.0, release_used="0.4.2.post4"),  # series 0.5 vs 0.4
        # TTFT measured / predicted 2.0, TPOT 1.8: ratio 1.11 <= 1.25 -> step time
        _row(6, 100.0, 50.0, tpot_ratio_same_run=1.8),
        # TTFT 2.0 vs TPOT 1.0: ratio 2 > 1.25 -> other
        _row(7, 100.0, 50.0, tpot_ratio_same_run=1.0),
        _row(8, 100.0, 90.0, metric_class="tpot/itl"),  # not a TTFT row
    ]
    p = tmp_path / "rows.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    t = tt.load(p, raw_glob=None)
    assert len(t) == 7
    got = [tt.assign_group(r) for r in t.to_dict("records")]
    assert got == [tt.GROUPS[i] for i in (0, 2, 3, 4, 6, 7, 8)]
    # errors: (50 / 100 - 1) x 100 = -50 on every TTFT row
    assert t["err"].tolist() == pytest.approx([-50.0] * 7)


def test_request_count(tt):
    assert (
        tt.request_count("vllm bench serve, request rate inf: all 1000 requests sent at once")
        == 1000
    )
    assert tt.request_count("... --num-prompts 80 --max-concurrency 8") == 80
    assert math.isnan(tt.request_count("no count here"))


def test_burst_table_hand_derived(tt):
    # 1000 requests of 128 + 4 tokens = 132,000 tokens; measured 33,000 tok/s -> 4.0 s;
    # predicted 66,000 tok/s -> 2.0 s: length error (2 / 4 - 1) = -50 %.
    # mean TTFT measured 2,000 ms -> 0.5 of the run; predicted 1,000 ms -> 0.5 of its run.
    notes = "all 1000 requests sent at once"
    t = pd.DataFrame([_row(1, 2000.0, 1000.0, mode="offline", source=GS, engine="vllm",
                           isl=128.0, osl=4.0, total_tok_s_pred=66000.0)])  # fmt: skip
    t["pred"], t["err"] = 1000.0, -50.0
    raw = pd.DataFrame([
        dict(id="r1", source=GS, hardware="nvidia-b200", model="deepseek-v3", precision="fp8",
             tp=8, framework_version="v", notes=notes, metric="ttft_ms_mean", value=2000.0),
        dict(id="r1t", source=GS, hardware="nvidia-b200", model="deepseek-v3", precision="fp8",
             tp=8, framework_version="v", notes=notes, metric="total_tok_s", value=33000.0),
    ])  # fmt: skip
    b = tt.burst_table(t, raw).iloc[0]
    assert b["n_requests"] == 1000
    assert b["len_s_measured"] == pytest.approx(4.0)
    assert b["len_s_pred"] == pytest.approx(2.0)
    assert b["len_err_pct"] == pytest.approx(-50.0)
    assert b["ttft_over_len_measured"] == pytest.approx(0.5)
    assert b["ttft_over_len_pred"] == pytest.approx(0.5)


def test_near_line_counts(tt):
    t = pd.DataFrame({"ape": [10.0, 18.0, 22.0, 25.0, 35.0], "err": [10.0, -18.0, 22.0, -25.0, 35.0],
                      "group": ["other"] * 5})  # fmt: skip
    n = tt.near_line(t)
    # 15 < |e| <= 20: one under (-18); 20 < |e| <= 30: one over (22), one under (-25)
    assert n.loc["other", "15-20 under"] == 1
    assert n.loc["other", "20-30 over"] == 1
    assert n.loc["other", "20-30 under"] == 1
    assert int(n.to_numpy().sum()) == 3
