"""Issue 32, item 1 (TTFT half): ``scripts/ttft_near_line.py``, the rows just outside the 20%
line, on hand-made rows (the arithmetic in each test)."""

from __future__ import annotations

import importlib.util
import sys

import pandas as pd
import pytest
from conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "ttft_near_line.py"
IX = "SemiAnalysis InferenceX (InferenceMAX) open results"
IXH = "SemiAnalysis InferenceX benchmarks history (InferenceX-app fixtures)"


@pytest.fixture(scope="module")
def nl():
    spec = importlib.util.spec_from_file_location("ttft_near_line", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ttft_near_line"] = mod
    spec.loader.exec_module(mod)
    return mod


def _row(i, measured, pred, **kw):
    r = dict(id=f"r{i}", source=IX, engine="sglang", vendor="nvidia", gpu="nvidia-b200",
             precision="fp8", tp=8.0, model="deepseek-v3", as_of="2026-05-22", mode="concurrency",
             release="0.5.12 (image lmsysorg/sglang:v0.5.12-cu130) | client", rate=float("inf"),
             release_used="0.5.12", provenance="fit (x)", over_capacity=False, concurrency=4.0,
             prompt_tokens=921.6, metric_class="ttft", measured=measured,
             measured_over_unscaled=measured / pred, tpot_ratio_same_run=float("nan"),
             isl=float("nan"), osl=float("nan"))  # fmt: skip
    r.update(kw)
    return r


def _load(nl, tmp_path, rows):
    p = tmp_path / "rows.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    t = nl.tt.load(p, raw_glob=None)
    t["pt"] = [nl.prompt_tokens(r) for r in t.to_dict("records")]
    t["near_group"] = [nl.near_group(r) for r in t.to_dict("records")]
    return t


def test_near_group_order(nl):
    g = nl.NEAR_GROUPS
    assert nl.near_group(_row(1, 1, 1, prompt_tokens=7372.8)) == g[0]  # MLA, > 4000 tokens
    assert nl.near_group(_row(2, 1, 1)) == g[1]  # MLA, 921.6 tokens
    assert nl.near_group(_row(3, 1, 1, engine="trtllm")) == g[2]
    assert nl.near_group(_row(4, 1, 1, source="GPUStack performance lab", engine="vllm")) == g[3]
    assert nl.near_group(_row(5, 1, 1, source="MLPerf Inference v6.0", mode="server")) == g[4]
    # not MLA: an InferenceX SGLang llama row falls through to "other"
    assert nl.near_group(_row(6, 1, 1, model="llama-3.1-70b")) == g[8]
    # no prompt_tokens: isl is the prompt
    assert nl.prompt_tokens({"prompt_tokens": float("nan"), "isl": 8192.0}) == 8192.0


def test_best_level_hand(nl):
    # ratios 0.70, 0.75, 1.00, 1.10: 2 within 20% (1.00, 1.10). Three at once need
    # f in [0.8 / 0.75, 1.2 / 1.1] = [1.0667, 1.0909] (0.75, 1.0, 1.1) or
    # [0.8 / 0.7, 1.2] = [1.1429, 1.2] (0.7, 0.75, 1.0); four never (0.7 f >= 0.8 and
    # 1.1 f <= 1.2 conflict). The grid's first factor with 3 lies in the first interval.
    f, before, after = nl.best_level([-30.0, -25.0, 0.0, 10.0])
    assert (before, after) == (2, 3)
    assert 0.8 / 0.75 <= f <= 1.2 / 1.1
    # nothing to gain: the factor stays 1
    assert nl.best_level([0.0, 5.0]) == (1.0, 2, 2)


def test_prompt_slopes_hand(nl, tmp_path):
    rows = [
        _row(1, 100.0, 90.0),  # 1k: 921.6 tokens
        _row(2, 300.0, 200.0, prompt_tokens=7372.8),  # 8k, same setup
        _row(3, 500.0, 200.0, prompt_tokens=7372.8, concurrency=64.0),  # no 1k partner
    ]
    s = nl.prompt_slopes(_load(nl, tmp_path, rows))
    assert len(s) == 1
    r = s.iloc[0]
    dp = 7372.8 - 921.6  # 6451.2 tokens
    assert r["slope_meas"] == pytest.approx(200.0 / dp * 1e3)  # 31.00 ms per 1k
    assert r["slope_pred"] == pytest.approx(110.0 / dp * 1e3)  # 17.05 ms per 1k
    assert r["slope_ratio"] == pytest.approx(200.0 / 110.0)  # 1.818
    assert r["err_8k_pct"] == pytest.approx(-100.0 / 3.0)  # 200 / 300 - 1
    assert r["source"] == "ixm"


def test_cells_and_group_table(nl, tmp_path):
    rows = [
        _row(1, 300.0, 200.0, prompt_tokens=7372.8),  # -33.3%
        _row(2, 300.0, 290.0, prompt_tokens=7372.8, source=IXH),  # -3.3%
        _row(3, 100.0, 125.0),  # +25%, 1k
    ]
    t = _load(nl, tmp_path, rows)
    c = nl.cell_sources(t)
    assert c.loc[("nvidia-b200", "fp8", "TP8 EP1"), "n_sources"] == 2
    assert c.loc[("nvidia-b200", "fp8", "TP8 EP1"), "within"] == 1
    g = nl.group_table(t, 20.0, 35.0)
    assert g.loc[nl.NEAR_GROUPS[0], "near_under"] == 1
    assert g.loc[nl.NEAR_GROUPS[1], "near_over"] == 1
    # the 8k group: ratios 0.667 and 0.967; both within at f in [1.2, 1.241]: gain 1
    assert g.loc[nl.NEAR_GROUPS[0], "gain"] == 1
    n = nl.near_rows(t, 20.0, 35.0)
    assert sorted(n["id"]) == ["r1", "r3"]
    assert n.set_index("id").loc["r3", "err_pct"] == pytest.approx(25.0)
