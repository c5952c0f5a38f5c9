"""Issue 32, "Done when" item 1 (TPOT): ``scripts/nv_tpot_table.py``, where the NVIDIA
TensorRT-LLM and SGLang serving TPOT error sits."""

from __future__ import annotations

import importlib.util
import sys

import pandas as pd
import pytest
from conftest import REPO_ROOT
from hypothesis import given
from hypothesis import strategies as st

SCRIPTS = REPO_ROOT / "scripts"


@pytest.fixture(scope="module")
def nt():
    sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location("nv_tpot_table", SCRIPTS / "nv_tpot_table.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["nv_tpot_table"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "tp, ep, adp, label",
    [
        ("8", "", "", "TP8"),  # InferenceX H200 SGLang: --tensor-parallel-size=8
        ("8", "8", "1", "TP8 EP8"),
        ("1", "8", "8", "DEP8"),  # MLPerf v6.0 DeepSeek-R1: attention-DP 8, EP 8
        ("1", "1", "8", "ADP8"),  # dstack SGLang 0.4.3: --enable-dp-attention, MoE TP
        ("", "", "", "TP1"),  # empty cells are 1 (the row schema)
        ("4.0", "4.0", "", "TP4 EP4"),  # read back from a float column
    ],
)
def test_layout_label(nt, tp, ep, adp, label):
    assert nt.layout_label(tp, ep, adp) == label


def _csv(rows):
    cols = ["id", "source", "engine", "release", "vendor", "gpu", "precision", "family",
            "metric_class", "concurrency", "rate", "isl", "osl", "provenance", "measured",
            "predicted", "err_pct"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def test_nvidia_rows_filter_and_group_columns(nt):
    """Only NVIDIA TPOT rows of the engines asked for; load and lengths as printed."""
    rows = _csv([
        ["a", "S", "sglang", "0.5.9 (image)", "nvidia", "g", "fp8", "mla", "tpot/itl", 16, None,
         1024, 1024, "fit", 10.0, 12.0, 20.0],
        ["b", "S", "trtllm", "1.2", "nvidia", "g", "fp4", "mla", "tpot/itl", None, 4.5, None,
         None, "fit", 10.0, 8.0, -20.0],
        ["c", "S", "vllm", "0.11", "nvidia", "g", "fp8", "dense", "tpot/itl", 4, None, 1, 1,
         "fit", 1.0, 1.0, 0.0],  # another engine
        ["d", "S", "sglang", "0.5.9", "amd", "g", "fp8", "mla", "tpot/itl", 4, None, 1, 1,
         "fit", 1.0, 1.0, 0.0],  # another vendor
        ["e", "S", "sglang", "0.5.9", "nvidia", "g", "fp8", "mla", "ttft", 4, None, 1, 1,
         "fit", 1.0, 1.0, 0.0],  # another metric
    ])  # fmt: skip
    bench = pd.DataFrame({"tp": ["8", "1"], "ep": ["", "8"], "attention_dp": ["", "8"]},
                         index=["a", "b"])  # fmt: skip
    t = nt.nvidia_rows(rows, bench, ["sglang", "trtllm"])
    assert list(t["id"]) == ["a", "b"]
    assert list(t["layout"]) == ["TP8", "DEP8"]
    assert list(t["load"]) == ["c16", "r4.5"]
    assert list(t["lengths"]) == ["1024/1024", "/"]
    assert list(t["release"]) == ["0.5.9", "1.2"]


def test_sign_table_by_hand(nt):
    """Errors +20, -10, +5, -40 %: two of four too slow (50 %), two within 15 % (-10, +5)."""
    t = pd.DataFrame({"g": ["x"] * 4, "err_pct": [20.0, -10.0, 5.0, -40.0]})
    s = nt.sign_table(t, ["g"]).loc["x"]
    assert s["n"] == 4
    assert s["slow_pct"] == pytest.approx(50.0)
    assert s["within15_pct"] == pytest.approx(50.0)


@given(st.lists(st.floats(-90, 300, allow_nan=False), min_size=1, max_size=30))
def test_sign_shares_are_shares(nt, errs):
    t = pd.DataFrame({"g": ["x"] * len(errs), "err_pct": errs})
    s = nt.sign_table(t, ["g"]).loc["x"]
    slow = sum(e > 0 for e in errs) / len(errs) * 100
    assert s["slow_pct"] == pytest.approx(round(slow, 1), abs=0.051)
    assert 0.0 <= s["within15_pct"] <= 100.0


@pytest.fixture(scope="module")
def fw():
    sys.path.insert(0, str(SCRIPTS))
    path = SCRIPTS / "fold_without_rows.py"
    spec = importlib.util.spec_from_file_location("fold_without_rows", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dropper_by_id_and_by_source_engine(fw):
    class R:
        def __init__(self, id_, source, framework):
            self.id, self.source, self.framework = id_, source, framework

    drop = fw.dropper({"gpustack-0161"}, [("dstack", "sglang")])
    assert drop(R("gpustack-0161", "GPUStack performance lab", "sglang"))
    assert drop(R("amd-0078", "dstack benchmark: DeepSeek-R1 on 8xMI300X vs 8xH200", "sglang"))
    assert not drop(R("amd-0079", "dstack benchmark: DeepSeek-R1", "trtllm"))  # other engine
    assert not drop(R("ixm-0308", "SemiAnalysis InferenceX", "sglang"))


def test_compare_by_hand(fw):
    """Two TPOT rows: errors +20 / -10 % before, +10 / -10 % after: MdAPE (20 + 10) / 2 = 15
    -> (10 + 10) / 2 = 10, bias (20 - 10) / 2 = +5 -> 0; a row only in the base is left out."""
    cols = ["id", "metric", "metric_class", "vendor", "engine", "gpu", "precision", "err_pct"]
    base = pd.DataFrame(
        [["a", "tpot_ms_median", "tpot/itl", "nvidia", "sglang", "g", "fp8", 20.0],
         ["b", "tpot_ms_median", "tpot/itl", "nvidia", "sglang", "g", "fp8", -10.0],
         ["c", "tpot_ms_median", "tpot/itl", "nvidia", "sglang", "g", "fp8", 99.0]],
        columns=cols,
    )  # fmt: skip
    after = base.iloc[:2].assign(err_pct=[10.0, -10.0])
    t = fw.compare(base, after)["tpot/itl"]
    g = t.loc[("nvidia", "sglang", "g", "fp8")]
    assert g["n"] == 2
    assert (g["mdape_before"], g["mdape_after"]) == (15.0, 10.0)
    assert (g["bias_before"], g["bias_after"]) == (5.0, 0.0)


@pytest.fixture(scope="module")
def bd():
    sys.path.insert(0, str(SCRIPTS))
    path = SCRIPTS / "burst_donor_check.py"
    spec = importlib.util.spec_from_file_location("burst_donor_check", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "isl, osl, bound",
    [
        ("2000", "100", True),  # GPUStack 2000/100: 100 x 10 = 1,000 <= 2,000
        ("128", "4", True),  # 40 <= 128
        ("1000", "100", True),  # the edge: 1,000 <= 1,000
        ("1000", "101", False),
        ("128", "2048", False),  # a decode-heavy offline table row
        ("", "", False),  # ShareGPT: lengths not stated
    ],
)
def test_prefill_bound(bd, isl, osl, bound):
    assert bd.prefill_bound(isl, osl) is bound


def test_burst_only_node(bd):
    class Row:
        def __init__(self, id_, mode, gpu="g", source="S", release="0.5.3"):
            self.id, self.mode, self.gpu, self.source, self.release = (
                id_,
                mode,
                gpu,
                source,
                release,
            )
            self.framework, self.precision = "sglang", "fp8"

    class Node:
        framework, release, precision, gpus, sources = "sglang", "0.5.3", "fp8", ("g",), ("S",)

    bursts = [Row("a", "offline"), Row("b", "offline")]
    lengths = {"a": ("2000", "100"), "b": ("128", "2048")}
    assert bd.burst_only(Node, bursts)
    assert not bd.burst_only(Node, bursts, lengths)  # row b is decode-heavy
    assert bd.burst_only(Node, bursts, {"a": ("2000", "100"), "b": ("4000", "200")})
    assert not bd.burst_only(Node, bursts + [Row("c", "concurrency")])  # a closed loop too
    assert not bd.burst_only(Node, [Row("d", "offline", release="0.5.6")])  # no row of it
