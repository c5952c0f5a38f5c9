"""scripts/adp_step_gap.py: the TensorRT-LLM attention-DP TPOT shortfall and the per-step
what-if (issue 29 items 1 and 2; docs/changes/2026-12-09/trtdp.md), by hand."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location(
        "adp_step_gap", ROOT / "scripts" / "adp_step_gap.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _loso() -> pd.DataFrame:
    """Three held-out rows: a TensorRT-LLM DEP8 TPOT row (ixh-1020's numbers), an SGLang DEP
    TPOT row and a TensorRT-LLM DEP throughput row."""
    rows = [
        ("ixh-1020", "SemiAnalysis InferenceX", "trtllm", "DEP / DP-attention", "tpot_ms_median",
         21.517, 17.700),
        ("sgl-1", "SGLang", "sglang", "DEP / DP-attention", "tpot_ms_median", 40.0, 30.0),
        ("ixh-1018", "SemiAnalysis InferenceX", "trtllm", "DEP / DP-attention",
         "output_tok_s_total", 5818.3, 6956.1),
    ]  # fmt: skip
    d = pd.DataFrame(
        rows,
        columns=["id", "source", "framework", "layout_kind", "metric", "measured", "predicted"],
    )
    d["ape"] = (d["predicted"] / d["measured"] - 1).abs()
    d["log_err"] = [math.log(p / m) for p, m in zip(d["predicted"], d["measured"], strict=True)]
    return d


def test_step_cost_moves_only_trtllm_dep_tpot():
    mod = _script()
    out = mod.with_step_cost(_loso(), 2.0).set_index("id")
    # ixh-1020: 17.700 + 2.0 = 19.700 ms against 21.517 measured: APE 1 - 19.7 / 21.517 = 0.0844
    assert out.loc["ixh-1020", "predicted"] == pytest.approx(19.700)
    assert out.loc["ixh-1020", "ape"] == pytest.approx(1 - 19.7 / 21.517, abs=1e-9)
    assert out.loc["ixh-1020", "log_err"] == pytest.approx(math.log(19.7 / 21.517))
    # SGLang rows and throughput rows are not moved
    assert out.loc["sgl-1", "predicted"] == 30.0
    assert out.loc["ixh-1018", "predicted"] == 6956.1
    with pytest.raises(ValueError):
        mod.with_step_cost(_loso(), -1.0)


def test_shortfall_by_hand():
    mod = _script()
    t = mod.shortfall_table(_loso())
    assert len(t) == 1  # only the TensorRT-LLM DEP TPOT row
    row = t.iloc[0]
    # 21.517 - 17.700 = 3.817 ms short; 17.700 / 21.517 = 0.823 (within 25 %)
    assert row["shortfall ms q25 / q50 / q75"] == "3.8 / 3.8 / 3.8"
    assert row["pred/meas q25 / q50 / q75"] == "0.82 / 0.82 / 0.82"
    assert row["within 25%"] == 1


def test_tpot_score_by_hand():
    mod = _script()
    s = mod.tpot_score(_loso())
    # two TPOT rows: APE 1 - 17.7/21.517 = 0.1774 and 1 - 30/40 = 0.25 -> median 0.2137
    assert s["EP+DEP TPOT rows"] == 2
    assert s["MdAPE %"] == pytest.approx(21.4, abs=0.05)
    assert s["within 25%"] == 2


def test_points_with_step_cost_by_hand():
    mod = _script()
    pts = pd.DataFrame(
        {
            "framework": ["trtllm", "trtllm"],
            "layout": ["TP1 EP8 DP-attn8", "TP8 EP8"],
            "thr_p": [869.5, 529.0],
            "int_p": [1000 / 17.7, 1000 / 14.7],
        }
    )
    out = mod.points_with_step_cost(pts, 2.0)
    # DEP8: 1000 / (17.7 + 2) = 50.76 tok/s/user; 869.5 x 17.7 / 19.7 = 781.2 tok/s/GPU
    assert out.loc[0, "int_p"] == pytest.approx(1000 / 19.7)
    assert out.loc[0, "thr_p"] == pytest.approx(869.5 * 17.7 / 19.7)
    # the TP8 EP8 point has no attention DP: unchanged
    assert out.loc[1, "thr_p"] == 529.0 and out.loc[1, "int_p"] == pytest.approx(1000 / 14.7)


@given(st.floats(0.0, 50.0), st.floats(1.0, 200.0))
def test_step_cost_never_speeds_a_point_up(c, tpot):
    """Property: a per-step cost lowers throughput and interactivity, never raises them, and
    keeps throughput x TPOT (the decoding sequences a GPU holds) constant."""
    mod = _script()
    pts = pd.DataFrame(
        {"framework": ["trtllm"], "layout": ["TP1 EP8 DP-attn8"], "thr_p": [500.0],
         "int_p": [1000 / tpot]}
    )  # fmt: skip
    out = mod.points_with_step_cost(pts, c).iloc[0]
    assert out["thr_p"] <= 500.0 + 1e-9 and out["int_p"] <= 1000 / tpot + 1e-9
    assert out["thr_p"] * (1000 / out["int_p"]) == pytest.approx(500.0 * tpot)


def test_bad_input_is_one_line(tmp_path, capsys):
    mod = _script()
    assert mod.main(["--predictions", str(tmp_path / "missing.csv")]) == 2
    assert mod.main(["--predictions", str(tmp_path / "missing.csv"), "--costs", "1,-2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error:") for line in err)
