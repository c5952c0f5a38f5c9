"""The vLLM serving-row miss causes of scripts/vllm_kv_whatif.py (``vllm_cause``; issue 32,
docs/changes/2026-12-07f/vllmlat.md): each rule reached by a hand-built row, first match wins."""

from __future__ import annotations

import importlib.util
import sys

import pytest


@pytest.fixture(scope="module")
def vw():
    from conftest import REPO_ROOT

    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location(
        "vllm_kv_whatif_causes", REPO_ROOT / "scripts" / "vllm_kv_whatif.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(measured, predicted, **kw):
    d = {"measured": measured, "predicted": predicted, "metric_class": "tpot/itl",
         "over_capacity": False, "mode": "offline", "isl": "2000", "tp": "1",
         "comm_eff": 0.1, "generation": "V1", "provenance": "fit (vllm/nvidia-h100-sxm/bf16, 8 rows)"}  # fmt: skip
    return d | kw


def test_each_cause_is_reached(vw):
    c = vw.CAUSES
    # an open-loop row above the predicted capacity comes first, whatever its error
    assert vw.vllm_cause(_row(1.0, 28.6, over_capacity=True)) == c[0]
    # 1.24x and 0.81x (1 / 1.2346) are within 25%
    assert vw.vllm_cause(_row(100.0, 124.0)) == c[1]
    assert vw.vllm_cause(_row(100.0, 81.0)) == c[1]
    # a V1 row whose node holds only V0 rows (GPUStack DeepSeek H200 from dstack's 0.7.4)
    assert vw.vllm_cause(_row(100.0, 200.0), node_gens={"V0"}) == c[2]
    # ... not when the node holds V1 rows too, nor for a transferred (pooled) node
    assert vw.vllm_cause(_row(100.0, 200.0, tp="8"), node_gens={"V0", "V1"}) == c[5]
    pooled = _row(100.0, 200.0, provenance="transferred from vllm on nvidia (310 rows)")
    assert vw.vllm_cause(pooled, node_gens={"V0"}) == c[7]
    # the hybrid KV what-if moves the row by 1.2x > 1.10x: KV capacity
    assert vw.vllm_cause(_row(100.0, 22.0), hybrid_pred=26.4) == c[3]
    # ... a move of 1.05x is not
    assert vw.vllm_cause(_row(100.0, 22.0), hybrid_pred=23.1) == c[6]
    # an offline burst of 128-token prompts whose TTFT is too fast: the front end
    burst = _row(4850.0, 1237.0, metric_class="ttft", isl="128")
    assert vw.vllm_cause(burst) == c[4]
    # the same run's TPOT is not a front-end miss (TP1, too fast)
    assert vw.vllm_cause(burst | {"metric_class": "tpot/itl"}) == c[6]
    # TP4 too slow at a fitted comm_eff of 0.065 <= 0.2
    assert vw.vllm_cause(_row(125.2, 1132.0, tp="4", comm_eff=0.065)) == c[5]
    # ... at comm_eff 0.316 (the MI300X node) it is the node's other terms
    assert vw.vllm_cause(_row(100.0, 200.0, tp="8", comm_eff=0.316)) == c[7]
    assert vw.vllm_cause(_row(100.0, 42.0, tp="8", comm_eff=0.316)) == c[8]
