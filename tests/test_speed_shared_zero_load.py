"""Zero-load latencies shared between replicas that serve a request alone in the same time
change no verdict (issue 17, "Fast from the shell", fourth pass).

``planner.serving.zero_load.unloaded_key`` lists what :func:`unloaded_latency` reads from a
replica; ``WorkloadCache.reachable`` computes the latencies once per key and sample and
checks each replica's SLO on them. Pinned here: the key separates replicas whose requests
served alone take different times, a shared check equals the check on a fresh cache (values
and the error with its own replica's label), and the cache computes once per key.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import planner.serving.probe as probe_mod
from planner.catalog import load_catalog, resolve_params
from planner.errors import PlannerError
from planner.scenario import load_scenario
from planner.serving import WorkloadCache, build_replica, check_reachable, unloaded_latency
from planner.serving.zero_load import unloaded_key
from planner.workload import SLO

REPO_ROOT = Path(__file__).resolve().parents[1]
CAT = load_catalog()
MODEL, GPU = "llama-3.1-70b", "nvidia-h100-sxm"


def _rep(precision: str, framework: str = "vllm", tp: int = 2, **kw):
    params, prov = resolve_params(GPU, framework, precision, catalog=CAT)
    return build_replica(
        MODEL, GPU, precision, framework, tp=tp, params=params, params_source=prov,
        catalog=CAT, **kw,
    )  # fmt: skip


@pytest.fixture(scope="module")
def rag():
    return load_scenario(REPO_ROOT / "examples" / "rag-70b.yaml")


def test_the_key_separates_replicas_served_alone_differently():
    """int4-awq and int4-gptq on vLLM are modelled alike: one key, the same latencies on the
    same requests. fp8 (another tensor rate), another TP or a smaller prefill chunk budget
    (a 4k prompt then takes more chunks): other keys."""
    awq, gptq = _rep("int4-awq"), _rep("int4-gptq")
    assert unloaded_key(awq) == unloaded_key(gptq)
    assert unloaded_key(awq) != unloaded_key(_rep("fp8"))
    assert unloaded_key(awq) != unloaded_key(_rep("int4-awq", tp=4))
    assert unloaded_key(awq) != unloaded_key(_rep("int4-awq", max_num_batched_tokens=512))


def test_a_shared_check_is_the_check_on_a_fresh_cache(rag, monkeypatch):
    """On one cache (the RAG example's SLO, met served alone at TP4), int4-gptq's check takes int4-awq's latencies (one computation for the
    two); its values equal those of a fresh cache's check, and of check_reachable on its
    own. With a TTFT target no replica meets (1 ms: a 4k-token prompt takes far longer),
    each replica's error names its own precision."""
    calls = []
    real = probe_mod.unloaded_latency
    monkeypatch.setattr(
        probe_mod, "unloaded_latency", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    awq, gptq = _rep("int4-awq", tp=4), _rep("int4-gptq", tp=4)
    shared = WorkloadCache.of(rag.workload, rag.slo)
    a = shared.reachable(awq)
    g = shared.reachable(gptq)
    assert len(calls) == 1  # one computation for the two replicas
    fresh = WorkloadCache.of(rag.workload, rag.slo).reachable(gptq)
    assert set(g) == {"attainment", "ttft_p99_s", "tpot_p99_s"}
    assert len(calls) == 2  # the fresh cache computed its own
    assert g == fresh == a
    own = check_reachable(gptq, rag.workload, rag.slo, requests=shared.unloaded_requests(gptq))
    assert g == own
    z = unloaded_latency(gptq, rag.workload, requests=shared.unloaded_requests(gptq))
    assert np.isclose(np.percentile(z["tpot_s"][~np.isnan(z["tpot_s"])], 99), g["tpot_p99_s"])

    tight = SLO.model_validate({"ttft": {"max_s": 0.001, "percentile": "p99"}})
    strict = WorkloadCache.of(rag.workload, tight)
    msgs = []
    for rep in (awq, gptq):
        try:  # not pytest.raises: its ExceptionInfo would keep reachable's frame alive
            strict.reachable(rep)
        except PlannerError as e:
            msgs.append(str(e))
    assert len(msgs) == 2
    assert "int4-awq" in msgs[0] and "int4-gptq" in msgs[1]
    assert len(calls) == 3  # the strict cache computed its latencies once for the two
