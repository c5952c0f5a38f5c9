"""Verdict runs shared between replicas that feed the event loop the same inputs change no
answer (issue 17, "Fast from the shell").

``planner.serving._engine.loop_key`` lists what the compiled event loop reads from a replica;
two probes whose run keys agree make the very same run at a rate, so the second takes the
first one's summary (``WorkloadCache.shared_verdict``). Pinned here: the key separates
replicas that simulate differently, a shared summary is the run the probe would make itself,
and whole searches (``compare_gpus``, ``recommend``) give the same answers with sharing as
without, and the same top option as the exhaustive search.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.catalog import load_catalog, resolve_params
from planner.recommend import compare_gpus, recommend
from planner.scenario import load_scenario
from planner.serving import CapacityProbe, WorkloadCache, build_replica
from planner.serving._engine import loop_key

REPO_ROOT = Path(__file__).resolve().parents[1]
CAT = load_catalog()
MODEL, GPU = "llama-3.1-70b", "nvidia-h100-sxm"


def _rep(precision: str, framework: str = "vllm", tp: int = 2):
    params, prov = resolve_params(GPU, framework, precision, catalog=CAT)
    return build_replica(
        MODEL, GPU, precision, framework, tp=tp, params=params, params_source=prov, catalog=CAT
    )


@pytest.fixture(scope="module")
def rag():
    sc = load_scenario(REPO_ROOT / "examples" / "rag-70b.yaml")
    return sc


def test_the_loop_key_separates_replicas_that_simulate_differently():
    """int4-awq and int4-gptq on vLLM are modelled alike (4-bit weights, one efficiency
    node): one key. fp8 and int8 (other tensor rates), or another TP: other keys."""
    awq, gptq = _rep("int4-awq"), _rep("int4-gptq")
    assert awq.label() != gptq.label()
    assert loop_key(awq) == loop_key(gptq)
    assert loop_key(_rep("fp8")) != loop_key(_rep("int8"))
    assert loop_key(awq) != loop_key(_rep("int4-awq", tp=4))


def test_a_shared_verdict_is_the_run_the_probe_would_make(rag):
    """vLLM's int4-awq and int4-gptq at TP4 on the H100 share a key (4-bit weights, one
    efficiency node). A probe of gptq on the cache where a probe of awq ran four rates (passes and
    misses) takes those verdicts without simulating; they equal, field for field, the runs of
    a gptq probe on a fresh cache. A rate not run before is simulated."""
    wl, slo = rag.workload, rag.slo
    shared = WorkloadCache.of(wl, slo)
    awq, gptq = _rep("int4-awq", tp=4), _rep("int4-gptq", tp=4)
    assert loop_key(awq) == loop_key(gptq)
    first = CapacityProbe(awq, shared, early_stop=True)
    rates = [first.cap_rps * f for f in (0.1, 0.3, 0.6, 0.9)]
    verdicts = {first.run(r)["slo_ok"] for r in rates}
    assert verdicts == {True, False}  # the rates cover both verdicts
    second = CapacityProbe(gptq, shared, early_stop=True)
    alone = CapacityProbe(gptq, WorkloadCache.of(wl, slo), early_stop=True)
    for r in rates:
        assert second.run(r) == alone.run(r)
    assert second.simulations == 0 and alone.simulations == len(rates)
    second.run(first.cap_rps * 0.5)
    assert second.simulations == 1


def _strip(x):
    """An answer without what measures the work (time, simulation counts)."""
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in ("elapsed_s", "simulations")}
    return [_strip(v) for v in x] if isinstance(x, list) else x


@pytest.mark.parametrize("gpus", [("nvidia-h100-sxm", "amd-mi300x", "nvidia-l40s")])
def test_compare_gpus_with_shared_verdicts_is_compare_gpus_without(rag, gpus, monkeypatch):
    """The whole compare_gpus answer (rows, unanswered GPUs and their reasons, counts of
    options) is the same when every verdict run is made by each option's own probe, and
    sharing makes fewer runs."""
    kw = dict(
        catalog=CAT, gpus=gpus, headroom=rag.constraints.headroom, engine=rag.serving.kwargs()
    )
    got = compare_gpus(rag.model, rag.workload, rag.slo, **kw)
    monkeypatch.setattr(WorkloadCache, "shared_verdict", lambda self, probe, rate: None)
    want = compare_gpus(rag.model, rag.workload, rag.slo, **kw)
    assert got["rows"] and _strip(got) == _strip(want)
    assert got["summary"]["simulations"] < want["summary"]["simulations"]


@pytest.mark.parametrize(
    "example,gpus",
    [
        ("rag-70b.yaml", ("nvidia-h100-sxm", "amd-mi300x")),
        ("chat-8b.yaml", ("nvidia-l4", "nvidia-a10", "nvidia-l40s")),
    ],
)
def test_the_search_ranks_as_the_exhaustive_one(example, gpus):
    """Branch and bound (with its pruning caps and shared verdicts) against every feasible
    option simulated without a cap: the same winner, GPU count, $/h and rate per replica."""
    sc = load_scenario(REPO_ROOT / "examples" / example)
    kw = dict(catalog=CAT, gpus=gpus, headroom=sc.constraints.headroom, engine=sc.serving.kwargs())
    fast = recommend(sc.model, sc.workload, sc.slo, top_n=1, **kw)
    full = recommend(sc.model, sc.workload, sc.slo, top_n=1, exhaustive=True, **kw)

    def key(r):
        return (
            r["gpu"], r["framework"], r["precision"], r["kv_precision"], r["tp"], r["pp"],
            r["num_gpus"], r["usd_per_hour"], r["max_rate_per_replica"],
        )  # fmt: skip

    assert key(fast.recommendations[0]) == key(full.recommendations[0])
    assert fast.summary["simulations"] < full.summary["simulations"]
