"""Host time hidden behind the GPU step (SGLang's overlap scheduler, vLLM's async scheduling,
TensorRT-LLM's overlap scheduler): an overlapped iteration takes max(gpu, host), a plain one
gpu + host (data/frameworks.yaml host_overlap_since, changes/schedbound.md)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.catalog import PRIOR
from planner.serving import simulate
from planner.serving._phases import wall_time
from planner.serving.replica import build_replica
from planner.serving.zero_load import unloaded_latency
from planner.workload import Traffic, Workload, make_requests
from planner.workload.lengths import FixedLength


def _engine(rep, overlap: bool):
    return dataclasses.replace(rep, engine=dataclasses.replace(rep.engine, host_overlap=overlap))


def test_wall_time_by_hand(catalog):
    # GPU 10 ms, host 2 ms: the GPU waits -> 10 + 2 = 12 ms; overlapped -> max(10, 2) = 10 ms
    assert wall_time(10e-3, 2e-3, 0.0) == pytest.approx(12e-3)
    assert wall_time(10e-3, 2e-3, 1.0) == pytest.approx(10e-3)
    # a host longer than the GPU (1 ms of GPU, 2 ms of scheduling) shows through: 2 ms
    assert wall_time(1e-3, 2e-3, 1.0) == pytest.approx(2e-3)
    # the engine's own rule, host = 1 ms + 0.01 ms x 100 sequences = 2 ms
    rep = build_replica(
        "llama-3.1-8b", "nvidia-h100-sxm", "bf16", "sglang", catalog=catalog,
        params=PRIOR.with_(sched_overhead_s=1e-3, sched_seq_overhead_s=1e-5),
    )  # fmt: skip
    assert rep.engine.host_overlap
    assert rep.engine.iteration_s(10e-3, 100) == pytest.approx(10e-3)
    assert rep.engine.iteration_s(1.5e-3, 100) == pytest.approx(2e-3)
    assert _engine(rep, False).engine.iteration_s(10e-3, 100) == pytest.approx(12e-3)


def test_overlap_never_slows_an_iteration():
    rng = np.random.default_rng(7)
    for gpu, host in rng.uniform(0.0, 0.05, size=(500, 2)):
        over, plain = wall_time(gpu, host, 1.0), wall_time(gpu, host, 0.0)
        assert max(gpu, host) == over <= plain
        assert plain - over == pytest.approx(min(gpu, host))


@pytest.mark.parametrize(
    "fw, version, as_of, expected",
    [
        ("sglang", "0.3.6", None, False),  # before v0.4's zero-overhead scheduler
        ("sglang", "v0.4.2", None, True),
        ("sglang", None, "2024-10-01", False),  # no release stated, dated before v0.4
        ("sglang", None, None, True),  # the current release
        ("vllm", "v0.10.2", None, False),  # async scheduling opt-in before 0.14.0
        ("vllm", "0.14.0", None, True),
        ("trtllm", "0.21.0", None, False),  # TensorRT engine flow before 1.0
        ("trtllm", "1.1.0", None, True),
        ("pytorch", None, None, False),  # the reference engine (bench/serve_ref.py)
        ("tgi", None, None, False),  # no source read: the GPU waits
    ],
)
def test_framework_rule(catalog, fw, version, as_of, expected):
    assert catalog.framework(fw).overlaps_host(version, as_of) is expected


def test_features_that_turn_the_overlap_off(catalog):
    sgl, vllm = catalog.framework("sglang"), catalog.framework("vllm")
    # SGLang turns it off for EAGLE / MTP speculative decoding and pipeline parallelism
    assert not sgl.overlaps_host(speculative=True)
    assert not sgl.overlaps_host(pipeline=True)
    # vLLM 0.14 keeps it with MTP / EAGLE, not with pipeline parallelism
    assert vllm.overlaps_host(speculative=True)
    assert not vllm.overlaps_host(pipeline=True)
    rep = build_replica(
        "deepseek-v3", "nvidia-h200-sxm", "fp8", "sglang", tp=8, spec_method="mtp",
        catalog=catalog,
    )  # fmt: skip
    assert not rep.engine.host_overlap


def test_reference_engine_is_not_overlapped(catalog):
    # its serving terms are fitted on its iteration logs as gpu + host: they must not move
    rep = build_replica("llama-3.1-8b", "nvidia-h200-sxm", "bf16", "pytorch", catalog=catalog)
    assert not rep.engine.host_overlap
    assert (
        build_replica(
            "llama-3.1-8b", "nvidia-h200-sxm", "bf16", "sglang", catalog=catalog, host_overlap=False
        ).engine.host_overlap
        is False
    )


def test_overlap_never_slows_a_simulation(catalog):
    rep = build_replica(
        "llama-3.1-8b", "nvidia-h100-sxm", "bf16", "sglang", catalog=catalog,
        params=PRIOR.with_(sched_overhead_s=2e-3, sched_seq_overhead_s=1e-5),
    )  # fmt: skip
    n = 64
    reqs = make_requests(
        np.zeros(n), np.full(n, 512), np.full(n, 128),
        context_limit=rep.engine.context_limit_tokens,
    )  # fmt: skip
    plain = simulate(_engine(rep, False), reqs, concurrency=16)
    over = simulate(_engine(rep, True), reqs, concurrency=16)
    assert np.nanmedian(over.tpot_s) < np.nanmedian(plain.tpot_s)
    assert over.e2e_s.max() < plain.e2e_s.max()
    # a decode step of 16 sequences of an 8B model on an H100 takes more than 2 ms of GPU
    # (16 GB of weights at <= 3.35 TB/s is >= 4.8 ms): the host hides entirely, so the median
    # TPOT drops by the whole host time, 2 ms + 16 x 0.01 ms = 2.16 ms, within the prompts'
    # share of the iterations
    drop = np.nanmedian(plain.tpot_s) - np.nanmedian(over.tpot_s)
    assert drop == pytest.approx(2.16e-3, rel=0.15)


def test_faster_gpu_never_raises_tpot(catalog):
    wl = Workload(
        traffic=Traffic(mean_rps=1.0),
        input_tokens=FixedLength(tokens=256),
        output_tokens=FixedLength(tokens=64),
    )
    last = None
    for mem_eff in (0.3, 0.5, 0.7, 0.9):  # a faster memory system, the same 2 ms host
        p = PRIOR.with_(mem_eff=mem_eff, sched_overhead_s=2e-3)
        for model in ("llama-3.2-1b", "llama-3.1-8b"):  # host longer / shorter than the GPU
            rep = build_replica(model, "nvidia-h100-sxm", "bf16", "sglang", catalog=catalog,
                                params=p)  # fmt: skip
            assert rep.engine.host_overlap
            tpot = float(np.nanmean(unloaded_latency(rep, wl, n=20)["tpot_s"]))
            assert tpot >= 2e-3 - 1e-12  # never below the host time
            if last is not None and model in last:
                assert tpot <= last[model] + 1e-12
            last = {**(last or {}), model: tpot}
