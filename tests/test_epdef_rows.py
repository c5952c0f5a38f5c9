"""scripts/epdef_rows.py: the rows of the three EP / DEP TPOT groups with no row within 25 %
(issue 29 item 1; docs/changes/2026-12-08/epdef.md), by hand on published rows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("epdef_rows", ROOT / "scripts" / "epdef_rows.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_attention_ranks_by_hand():
    mod = _script()
    # MLPerf v5.1 GB200 NVL72 (mlds51-0041): 72 GPUs of DEP8 replicas = 9 x 8 = 72 ranks
    assert mod.attention_ranks(72, 1, 1, 8) == 72
    # dstack TensorRT-LLM TP8 EP4 (amd-0150): one 8-GPU replica, no attention DP = 1 rank
    assert mod.attention_ranks(8, 8, 1, 1) == 1
    with pytest.raises(ValueError):
        mod.attention_ranks(12, 8, 1, 1)


def test_sequences_per_rank_by_hand():
    mod = _script()
    # dstack TensorRT-LLM c 128 out 800 (amd-0168 / amd-0170): 835.2 tok/s x 0.100239 s / 1
    # = 83.72 sequences (the closed loop's 128 minus the ones waiting for their first token)
    assert mod.sequences_per_rank(835.2, 100.239, 1) == pytest.approx(83.72, abs=0.01)
    # SGLang v0.4.1 FP8 at 8 req/s (sgldsv3-0029 / 0031): 2,864.31 x 0.67595 / 8 = 242.01
    assert mod.sequences_per_rank(2864.31, 675.95, 8) == pytest.approx(242.01, abs=0.01)
    with pytest.raises(ValueError):
        mod.sequences_per_rank(0.0, 50.0, 8)


def test_factor_to_band_by_hand():
    mod = _script()
    # MLPerf v5.1 Dell XE9680L (mlds51-0011): 21.9 / 61.003 = 0.359 -> 0.75 / 0.359 = 2.089
    assert mod.factor_to_band(21.9 / 61.003) == pytest.approx(0.75 * 61.003 / 21.9, rel=1e-12)
    assert mod.factor_to_band(21.9 / 61.003) == pytest.approx(2.089, abs=0.001)
    assert mod.factor_to_band(1.5) == pytest.approx(1.25 / 1.5)  # too slow: scale down
    assert mod.factor_to_band(0.9) == 1.0  # already within
    with pytest.raises(ValueError):
        mod.factor_to_band(0.0)


@given(st.floats(0.01, 100.0))
def test_factor_lands_on_the_band(ratio):
    """The factor puts the ratio within the band, on its edge when it moves it at all."""
    mod = _script()
    f = mod.factor_to_band(ratio)
    assert 0.75 - 1e-9 <= ratio * f <= 1.25 + 1e-9
    if f != 1.0:
        assert min(abs(ratio * f - 0.75), abs(ratio * f - 1.25)) < 1e-9


def test_the_groups_rows():
    """The committed rows: 18 dstack H200 TPOT rows (9 SGLang DP8, 9 TensorRT-LLM TP8 EP4,
    the latter graphs-off), 16 MLPerf v5.1 (8 runs x mean / p99), 8 SGLang v0.4.1 DP8 (4 of the
    FP8 table, 4 of the table labelled BF16: FP8 weights with a bf16 KV cache since s12-sglep);
    Little's law on amd-0170 by hand."""
    mod = _script()
    pred = pd.Series({"amd-0170": 56.2012902, "mlds51-0011": 21.9})
    df = mod.all_rows(pred)
    counts = df.groupby("group").size().to_dict()
    assert counts == {"D": 18, "E": 16, "F": 8}
    d = df[df["group"] == "D"]
    assert set(d[d["engine"] == "trtllm"]["graphs"]) == {"off"}
    assert set(d[d["engine"] == "sglang"]["graphs"]) == {"on"}
    r = df.set_index("id").loc["amd-0170"]
    assert r["seqs_per_rank"] == pytest.approx(83.7, abs=0.05)
    assert r["pred/meas"] == pytest.approx(56.2012902 / 100.239, abs=5e-4)
    assert r["x_to_25pct"] == pytest.approx(0.75 / (56.2012902 / 100.239), abs=0.005)
    assert pd.isna(df.set_index("id").loc["mlds51-0012", "pred/meas"])  # no prediction given


def test_unreadable_predictions_is_one_line(tmp_path, capsys):
    mod = _script()
    bad = tmp_path / "p.csv"
    bad.write_text("a,b\n1,2\n")
    assert mod.main(["--predictions", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1
