"""The InferenceX SGLang TPOT tables of scripts/sgl_tpot_table.py (issue 32 item 1, issue 29)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import sgl_tpot_table as stt  # noqa: E402


@pytest.fixture(scope="module")
def rows():
    return stt.sglang_tpot_rows()


@pytest.fixture(scope="module")
def pairs(rows):
    return stt.same_launch(rows).set_index(["id", "metric"])


def test_release_and_launch_parsing():
    assert stt.release_of("0.5.12 (image lmsysorg/sglang:v0.5.12-cu130) | client x") == "0.5.12"
    assert stt.release_of("image lmsysorg/sglang:v0.5.10.post1-cu130 | SGLang") == "0.5.10.post1"
    assert stt.release_of("not stated | sglang.launch_server") == ""
    assert stt.release_key("0.5.10.post1") > stt.release_key("0.5.9")  # (0,5,10,1) > (0,5,9)
    notes = ("a; server: python3 -m sglang.launch_server --model-path=x/y --host=0.0.0.0 "
             "--port=$PORT --tensor-parallel-size=8 --ep-size 1")  # fmt: skip
    assert (
        stt.launch_of(notes)
        == "python3 -m sglang.launch_server --tensor-parallel-size=8 --ep-size 1"
    )
    assert stt.launch_of("no command here") == ""
    assert stt.lengths_of("random_input_len=8192; random_output_len=1024") == "8192/1024"


def test_rows_are_the_non_speculative_sglang_tpot_rows(rows):
    assert set(rows["framework"]) == {"sglang"}
    assert not rows["notes"].str.contains("spec 'mtp'").any()
    # ixm-0013: B200 fp8 TP8, v0.5.9, 1k/1k, 4 clients, median TPOT 8.785 ms (the row's value)
    r = rows.set_index(["id", "metric"]).loc[("ixm-0013", "tpot_ms_median")]
    assert (r["release"], r["lengths"], r["conc"], r["measured"]) == (
        "0.5.9",
        "1024/1024",
        4,
        8.785,
    )


def test_same_launch_b200_fp8_by_hand(pairs):
    # B200 fp8 TP8 1k/1k c4, one server command: v0.5.9 ixm-0013 8.785 ms, v0.5.11 ixm-0038
    # 8.936, v0.5.12 ixm-0053 8.838 and ixm-0068 8.859 -> newest median (8.838 + 8.859) / 2
    # = 8.8485; 8.785 / 8.8485 = 0.99282, 8.936 / 8.8485 = 1.00989: the image does not move it
    r9, r11 = pairs.loc[("ixm-0013", "tpot_ms_median")], pairs.loc[("ixm-0038", "tpot_ms_median")]
    assert r9["newest"] == "0.5.12" and r9["newest_measured"] == pytest.approx(8.8485)
    assert r9["ratio"] == pytest.approx(8.785 / 8.8485, rel=1e-9)
    assert r11["ratio"] == pytest.approx(8.936 / 8.8485, rel=1e-9)


def test_same_launch_b300_fp4_regression_by_hand(pairs):
    # History rows carry no server command: the key is the InferenceX config. B300 nvfp4 TP4
    # EP4, 8k/1k, 128 clients: v0.5.11 (ixh-1245) 184.581 ms vs v0.5.12 (ixh-1282) 48.760 ms,
    # 184.581 / 48.760 = 3.7855 (the launch script is the same file at both run dates)
    r = pairs.loc[("ixh-1245", "tpot_ms_median")]
    assert r["release"] == "0.5.11" and r["newest"] == "0.5.12"
    assert r["ratio"] == pytest.approx(184.581 / 48.760, rel=1e-9)


def test_error_table_by_hand():
    rows = pd.DataFrame({"id": ["a", "b", "c"], "metric": ["tpot_ms_median"] * 3,
                         "measured": [10.0, 20.0, 40.0], "g": ["x", "x", "y"]})  # fmt: skip
    pred = pd.DataFrame({"id": ["a", "b", "c"], "metric": ["tpot_ms_median"] * 3,
                         "predicted": ["12", "18", "40"], "provenance": ["p"] * 3})  # fmt: skip
    d = stt.with_predictions(rows, pred)
    t = stt.error_table(d, ["g"]).set_index("g")
    # x: ratios 1.2 and 0.9 -> APE 0.2, 0.1 -> MdAPE 15 %, median ratio 1.05; y: 0 %, 1.0
    assert t.loc["x", "rows"] == 2 and t.loc["x", "mdape_pct"] == pytest.approx(15.0)
    assert t.loc["x", "ratio"] == pytest.approx(1.05)
    assert t.loc["y", "mdape_pct"] == pytest.approx(0.0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["0.5.9", "0.5.11", "0.5.12"]),
                          st.floats(1.0, 500.0)), min_size=1, max_size=8))  # fmt: skip
def test_same_launch_property(points):
    # one point measured in several images: the newest release's rows have median ratio 1,
    # every ratio is measured / that median, and a point seen in one release is dropped
    rows = pd.DataFrame({
        "id": [f"r{i}" for i in range(len(points))], "metric": "tpot_ms_median",
        "source": "s", "hardware": "g", "precision": "fp8", "layout": "tp8", "lengths": "1/1",
        "conc": 4, "launch": "", "release": [p[0] for p in points],
        "measured": [p[1] for p in points],
    })  # fmt: skip
    out = stt.same_launch(rows)
    if rows["release"].nunique() < 2:
        assert out.empty
        return
    newest = max(rows["release"], key=stt.release_key)
    base = rows.loc[rows["release"] == newest, "measured"].median()
    assert (out["newest"] == newest).all() and len(out) == len(rows)
    assert out["ratio"].to_numpy() == pytest.approx((out["measured"] / base).to_numpy())
    assert out.loc[out["release"] == newest, "ratio"].median() == pytest.approx(1.0)
