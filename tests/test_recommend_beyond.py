"""An option predicted far beyond every serving measurement of its GPU and model is ranked at
its error band's pessimistic edge (planner/recommend/beyond.py); other options keep their
value. The options here are stand-ins with the fields the rule reads (GPU, engine, model,
provenance, replicas, rates), so each case is arithmetic on published numbers."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from planner.catalog.ceiling import measured_ceiling
from planner.catalog.profile import error_band
from planner.recommend import beyond
from planner.recommend.beyond import edge_sentence, edge_text, edge_value
from planner.recommend.objective import Load

# examples/moe-r1.yaml: 10 req/s peak x (1 + headroom 0.2) = 12 req/s, answers of 1,000 tokens
LOAD = Load(12.0, 10.0, np.full(24, 10.0), 1000.0, 1000.0)
MI325X_FIT = "fit (sglang@0.5.12/amd-mi325x/fp8, 8 rows)"


def _option(gpu, framework, model, provenance, gpr, replicas, max_rate_rps, cap_rps, vendor):
    """A simulated option as edge_value reads it: ``max_rate_rps`` is the max rate the
    search's simulations would find (stored where :func:`objective._max_rate` keeps it)."""
    return SimpleNamespace(
        opt=SimpleNamespace(
            gpu=SimpleNamespace(id=gpu, vendor=vendor),
            framework=SimpleNamespace(id=framework),
            gpus_per_replica=gpr,
        ),
        replica=SimpleNamespace(sm=SimpleNamespace(model=SimpleNamespace(id=model))),
        provenance=provenance,
        replicas=replicas,
        cap_rps=cap_rps,
        result={"max_rate_rps": max_rate_rps},
        probe=_Probe(max_rate_rps),
    )


class _Probe:
    """A capacity probe whose SLO verdict is ``rate <= max_rate`` (what the simulation
    answers, by the max rate's definition)."""

    def __init__(self, max_rate_rps):
        self.max_rate_rps = max_rate_rps

    def min_replicas(self, need_rps, k_lb, k_max, k_start=None):
        k = next((k for k in range(k_lb, k_max + 1) if need_rps / k <= self.max_rate_rps), None)
        return k


def _mi325x_dep8(max_rate_rps=14.84, cap_rps=18.05):
    # the moe-r1 answer before this rule: MI325X SGLang fp8 DEP8, one replica of 8 GPUs at
    # $1.95/GPU-h = $15.60/h sustaining 14.84 req/s
    return _option("amd-mi325x", "sglang", "deepseek-v3", MI325X_FIT, 8, 1, max_rate_rps,
                   cap_rps, "amd")  # fmt: skip


def test_mi325x_dep8_is_ranked_at_the_rate_its_measurements_vouch_for(monkeypatch):
    low = error_band(MI325X_FIT, None, "amd", "sglang").low_ratio
    # 14.84 req/s x 1,000 tokens / 8 GPUs = 1,855 tok/s/GPU; the best serving measurement of
    # DeepSeek on MI325X is 219.775 (InferenceX SGLang TP8 MTP, ixh-0017): 8.44x, above the
    # flag's threshold max(1.5, 1 / low) (1.52 at the bundled band's 0.659; 1.82 at 0.548
    # before the tenth pass's refit)
    assert measured_ceiling("amd-mi325x", "deepseek-v3").output_tok_s_per_gpu == pytest.approx(
        219.775, abs=0.01
    )
    threshold = max(1.5, 1 / low)
    # vouched: 219.775 x 1.519 x 8 GPUs / 1,000 tokens = 2.670 req/s a replica, so the 12 req/s
    # need ceil(12 / 2.670) = 5 replicas (40 GPUs, 5 x 8 x $1.95 = $78.00/h)
    vouched = 219.775 * threshold * 8 / 1000
    assert math.ceil(12 / vouched) == 5
    s = _mi325x_dep8()
    assert edge_value(s, "cost", 15.60, LOAD) == pytest.approx(78.0)
    e = s.result["ranked_at_band_edge"]
    assert (e["replicas"], e["num_gpus"], e["point_value"]) == (5, 40, 15.60)
    assert e["vouched_rps"] == pytest.approx(vouched, rel=1e-4)  # 219.775 to 0.01
    # flagged at the tested rate already (need / 1 replica = 12 req/s: 1,500 tok/s/GPU, 6.8x),
    # so no bisection of the max rate is needed
    assert e["rate_rps"] == 12.0
    assert e["ceiling_ratio"] == pytest.approx(1500.0 / 219.775, rel=1e-4)
    assert e["ceiling_row"] == "ixh-0017"
    assert f"pessimistic edge (capacity x{low:.2f}: 40 GPUs)" in edge_text(s.result)
    # gpus: the same fleet, 8 -> 40 GPUs
    assert edge_value(_mi325x_dep8(), "gpus", 8.0, LOAD) == pytest.approx(40.0)
    # the band alone (the ninth pass's rule): at the band's low end one replica carries
    # 14.84 x low req/s, and any low in (12 / 29.68, 12 / 14.84) = (0.404, 0.809) needs
    # ceil(12 / (14.84 x low)) = 2 replicas
    monkeypatch.setattr(beyond, "APPLY_VOUCHED", False)
    assert 12 / 29.68 < low < 12 / 14.84
    assert edge_value(_mi325x_dep8(), "cost", 15.60, LOAD) == pytest.approx(31.20)


def test_full_load_objectives_divide_by_the_band_low_end():
    low = error_band(MI325X_FIT, None, "amd", "sglang").low_ratio
    # $/M at full load = 8 x $1.95 / (14.84 x 1,000 x 3,600) x 1e6 = $0.292/M; at the edge
    # the rate is min(14.84 x low, vouched 2.670 req/s), so the value is x 14.84 / 2.670
    v = 8 * 1.95 / (14.84 * 1000 * 3600) * 1e6
    vouched = 219.775 * max(1.5, 1 / low) * 8 / 1000
    f = 14.84 / min(14.84 * low, vouched)
    assert f == pytest.approx(14.84 / vouched)  # the vouched rate binds here (5.56x)
    assert edge_value(_mi325x_dep8(), "tokens-per-dollar", v, LOAD) == pytest.approx(
        v * f, rel=1e-4
    )
    assert edge_value(_mi325x_dep8(), "energy", 1.0, LOAD) == pytest.approx(f, rel=1e-4)


def test_latency_objective_is_not_changed():
    s = _mi325x_dep8()
    assert edge_value(s, "latency", 42.0, LOAD) == 42.0
    assert "ranked_at_band_edge" not in s.result and edge_text(s.result) == ""


def test_within_measurements_keeps_its_value():
    # 2.4 req/s x 1,000 / 8 = 300 tok/s/GPU: 300 / 219.775 = 1.37 < 1.52, and the upper end
    # of the bracket (cap 2.6 req/s: 325 tok/s/GPU, 1.48x) is within too
    s = _mi325x_dep8(max_rate_rps=2.4, cap_rps=2.6)
    s.replicas = 5  # 12 / 5 = 2.4 req/s each
    assert edge_value(s, "cost", 78.0, LOAD) == 78.0
    assert "ranked_at_band_edge" not in s.result


def test_an_offline_ceiling_alone_does_not_rerank():
    # Llama-3.1-70B on MI300X has only an offline ceiling (amd-0410, 2,077.8 tok/s/GPU, TP8
    # 128/2048): examples/batch-offline.yaml's MI300X SGLang TP1 at 3,987 tok/s/GPU is 1.9x
    # it and flagged, but an offline table does not bound a serving rate: value unchanged
    assert measured_ceiling("amd-mi300x", "llama-3.1-70b") is None
    s = _option("amd-mi300x", "sglang", "llama-3.1-70b", "fit (sglang/amd-mi300x/fp8, 20 rows)",
                1, 2, 3.987 * 2, 9.0, "amd")  # fmt: skip
    assert edge_value(s, "cost", 3.98, LOAD) == 3.98


def test_no_published_measurement_keeps_its_value():
    s = _option("nvidia-l4", "vllm", "deepseek-v3", MI325X_FIT, 8, 1, 14.84, 18.0, "nvidia")
    assert edge_value(s, "cost", 10.0, LOAD) == 10.0


@pytest.mark.parametrize("value", [0.0, math.inf])
def test_degenerate_values_pass_through(value):
    assert edge_value(_mi325x_dep8(), "cost", value, LOAD) == value


def test_the_decision_names_the_options_ranked_at_the_edge():
    s = _mi325x_dep8()
    edge_value(s, "cost", 15.60, LOAD)
    r = {"rank": 6, "gpu": "amd-mi325x", "framework": "sglang", **s.result}
    text = edge_sentence([{"rank": 1, "gpu": "nvidia-gb200", "framework": "trtllm"}, r])
    assert text.startswith("ranked at their error band's pessimistic edge")
    assert "#6 amd-mi325x sglang ($15.60/h as predicted, $78.00/h at the edge)" in text
    assert edge_sentence([{"rank": 1, "gpu": "nvidia-gb200", "framework": "trtllm"}]) == ""


@pytest.mark.parametrize(("max_rate_rps", "ranked"), [(2.9, True), (2.6, False)])
def test_where_the_bracket_ends_disagree_the_max_rate_decides(max_rate_rps, ranked):
    low = error_band(MI325X_FIT, None, "amd", "sglang").low_ratio
    threshold = max(1.5, 1 / low)  # 1.52 at the bundled band (0.659)
    # 5 replicas: tested 12 / 5 = 2.4 req/s -> 300 tok/s/GPU = 1.37x 219.775 (within);
    # upper 12 / 4 = 3 req/s -> 375 = 1.71x (beyond): the max rate decides
    assert 300 / 219.775 < threshold < 375 / 219.775
    s = _mi325x_dep8(max_rate_rps=max_rate_rps, cap_rps=18.05)
    s.replicas = 5
    got = edge_value(s, "cost", 78.0, LOAD)  # 5 x 8 x $1.95
    if ranked:  # 2.9 x 125 = 362.5 tok/s/GPU = 1.65x; edge: ceil(12 / (2.9 x low)) replicas
        k = math.ceil(12 / (2.9 * low))
        assert threshold < 362.5 / 219.775 and k == 7  # 12 / (2.9 x 0.659) = 6.28
        assert got == pytest.approx(78.0 * k / 5)
    else:  # 2.6 x 125 = 325 tok/s/GPU = 1.48x: within
        assert threshold > 325 / 219.775 and got == 78.0


# ---- efficiencies transferred from another GPU architecture (the README question, s12)
# LMDeploy has no row on Hopper: its H100 / H200 options take the vendor + framework node
# fitted on its A100 rows, tier vendor_framework, whose held-out band (rows of that tier,
# leave-one-source-out, spanned with every framework on NVIDIA) is 0.5599-1.3415
LMD_H100 = "transferred from lmdeploy on nvidia (nvidia-a100-80gb-sxm, 126 rows)"
TRT_H100 = "fit (trtllm/nvidia-h100-sxm/fp8, 204 rows)"
# the README question: 50 req/s x (1 + 0.2) = 60 req/s, answers of 300 tokens
LOAD_70B = Load(60.0, 50.0, np.full(24, 50.0), 1500.0, 300.0)


def test_transfer_tiers_are_those_from_another_architecture():
    assert beyond.transfer_tier(LMD_H100) == "vendor_framework"
    assert beyond.transfer_tier(TRT_H100) is None
    sib = "transferred from trtllm/nvidia-h200-sxm/fp8, nearest hopper sibling (198 rows)"
    assert beyond.transfer_tier(sib) is None  # the engine was measured on Hopper
    assert beyond.transfer_tier("no such label") is None


def test_a_transferred_point_that_beats_a_fitted_option_loses_at_its_band_edge():
    low = error_band(LMD_H100, None, "nvidia", "lmdeploy").low_ratio
    # 0.5599 in the bundled profile; the rule below holds for any low < 60 / (4.0 x 17) = 0.882
    # (then the edge needs >= 18 replicas = 36 GPUs > TensorRT-LLM's 34)
    assert 0.3 < low < 60 / (4.0 * 17)
    # hand-built: LMDeploy int8 TP2 at 4.0 req/s a replica (point): ceil(60 / 4.0) = 15
    # replicas = 30 GPUs x $3.99 = $119.70/h; TensorRT-LLM fp8 TP2 fitted at 3.7 req/s:
    # ceil(60 / 3.7) = 17 replicas = 34 GPUs = $135.66/h. The point answer ranks LMDeploy
    # first ($119.70 < $135.66). At its band's low edge a replica carries 4.0 x 0.5599 = 2.24
    # req/s: ceil(60 / 2.2396) = 27 replicas = 54 GPUs = $215.46/h > $135.66
    lmd = _option("nvidia-h100-sxm", "lmdeploy", "llama-3.1-70b", LMD_H100, 2, 15, 4.0, 4.5,
                  "nvidia")  # fmt: skip
    trt = _option("nvidia-h100-sxm", "trtllm", "llama-3.1-70b", TRT_H100, 2, 17, 3.7, 4.0,
                  "nvidia")  # fmt: skip
    point_lmd, point_trt = 15 * 2 * 3.99, 17 * 2 * 3.99
    assert point_lmd == pytest.approx(119.70) and point_lmd < point_trt
    k = math.ceil(60 / (4.0 * low))  # 27 at 0.5599
    got = edge_value(lmd, "cost", point_lmd, LOAD_70B)
    assert got == pytest.approx(k * 2 * 3.99)  # $215.46/h at 0.5599
    assert got > point_trt
    # the fitted option is within its GPU's serving measurements (3.7 x 300 / 2 = 555
    # tok/s/GPU): its value is its point answer
    assert edge_value(trt, "cost", point_trt, LOAD_70B) == point_trt
    e = lmd.result["ranked_at_band_edge"]
    assert (e["reason"], e["provenance_tier"], e["replicas"], e["num_gpus"]) == (
        "transferred", "vendor_framework", k, 2 * k)  # fmt: skip
    assert e["ceiling_ratio"] is None and e["vouched_rps"] is None
    r = {"rank": 2, "gpu": "nvidia-h100-sxm", "framework": "lmdeploy", "provenance": LMD_H100,
         **lmd.result}  # fmt: skip
    assert "their engine having no fit on their GPU's architecture" in edge_sentence([r])
    assert f"#2 nvidia-h100-sxm lmdeploy ($119.70/h as predicted, ${got:,.2f}/h at the edge)" in (
        edge_sentence([r])
    )
    assert beyond.transfer_text(r).startswith(
        "lmdeploy has no fit on nvidia-h100-sxm's architecture for this model (transferred from"
    )
    # full-load objectives: x 1 / low (1.786 at 0.5599)
    assert edge_value(_option("nvidia-h100-sxm", "lmdeploy", "llama-3.1-70b", LMD_H100, 2, 15,
                              4.0, 4.5, "nvidia"), "energy", 1.0, LOAD_70B) == pytest.approx(
        1 / low)  # fmt: skip


def test_the_rule_off_keeps_the_point_answer(monkeypatch):
    monkeypatch.setattr(beyond, "TRANSFER_EDGE_TIERS", ())
    lmd = _option("nvidia-h100-sxm", "lmdeploy", "llama-3.1-70b", LMD_H100, 2, 15, 4.0, 4.5,
                  "nvidia")  # fmt: skip
    assert edge_value(lmd, "cost", 119.70, LOAD_70B) == 119.70


def test_readme_question_on_h200_ranks_the_fitted_fp8_option_first(capsys):
    # the README question with --gpus h200: before this rule LMDeploy int8 TP2 ranked first
    # (28 GPUs x $4.795 = $134.26/h, transferred from LMDeploy's A100 rows, quality not
    # measured) over TensorRT-LLM fp8 TP2 fitted on H200 (30 GPUs = $143.85/h); at its band's
    # low edge (capacity x 0.5599) it needed 25 replicas = 50 GPUs = $239.75/h. LMDeploy's
    # TurboMind record no longer offers int8 (W8A8 is its PyTorch engine: frameworks.yaml), so
    # its option here is bf16, still transferred and ranked at its edge
    from planner.cli.main import main

    argv = ["recommend", "--model", "llama-3.1-70b", "--peak-rps", "50", "--input-tokens",
            "1500", "--output-tokens", "300", "--ttft-p99", "2", "--tpot-p99", "0.05",
            "--gpus", "h200", "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    recs = d["recommendations"]
    win = recs[0]
    assert (win["framework"], win["precision"], win["layout"]) == ("trtllm", "fp8", "TP2")
    assert win["provenance"].startswith("fit (trtllm") and "ranked_at_band_edge" not in win
    lmd = next(r for r in recs if r["framework"] == "lmdeploy")
    e = lmd["ranked_at_band_edge"]
    assert e["reason"] == "transferred" and e["provenance_tier"] == "vendor_framework"
    assert lmd["precision"] != "int8"
    assert win["usd_per_hour"] < lmd["usd_per_hour"] < e["value"]
    assert e["value"] == pytest.approx(e["num_gpus"] * lmd["usd_per_gpu_hour"])
    assert "their engine having no fit on their GPU's architecture" in d["why"]
