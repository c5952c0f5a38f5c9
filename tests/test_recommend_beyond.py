"""An option predicted far beyond every serving measurement of its GPU and model is ranked at
its error band's pessimistic edge (planner/recommend/beyond.py); other options keep their
value. The options here are stand-ins with the fields the rule reads (GPU, engine, model,
provenance, replicas, rates), so each case is arithmetic on published numbers."""

from __future__ import annotations

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
