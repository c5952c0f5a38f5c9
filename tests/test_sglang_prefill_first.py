"""Issue 32, "Latency model": SGLang's scheduler never mixes prompt chunks and decoders in
one step (``Scheduler.get_next_batch_to_run``: a prefill batch first whenever one can be
formed, else the running batch decodes; ``--enable-mixed-chunk`` off by default). The
framework record carries the fact (``Framework.prefill_first_source``) and the simulator
runs SGLang's prompt chunks in steps of their own, chunked prefill or not."""

from __future__ import annotations

import numpy as np
import pytest

from planner.serving.replica import ENGINE_PREFILL_FIRST_DEFAULT

CHUNK = 1024  # SGLang chunked_prefill_size of these runs [tokens]


def test_policy_is_a_sourced_framework_fact(catalog):
    """SGLang carries the policy with its source; vLLM (V1) and TensorRT-LLM mix prompt
    chunks into decode steps, so they carry none."""
    fws = {f.id: f for f in catalog.frameworks}
    assert "get_next_batch_to_run" in fws["sglang"].prefill_first_source
    assert "enable_mixed_chunk" in fws["sglang"].prefill_first_source
    assert fws["vllm"].prefill_first_source is None
    assert fws["trtllm"].prefill_first_source is None


def _replica(catalog, framework: str, **kw):
    from planner.serving.replica import build_replica

    return build_replica(
        "llama-3.1-8b", "nvidia-h100-sxm", "bf16", framework, catalog=catalog, **kw
    )


def test_build_replica_follows_the_engine(catalog):
    """SGLang following its policy: prefill-first with chunked prefill on (its default) and
    off; ``engine_prefill_first=False`` (``--enable-mixed-chunk``) mixes. vLLM and
    TensorRT-LLM with chunked prefill: mixed steps, whatever the flag."""
    on = {"engine_prefill_first": True}
    assert _replica(catalog, "sglang", **on).engine.chunked_prefill
    assert _replica(catalog, "sglang", **on).engine.prefill_first
    assert _replica(catalog, "sglang", chunked_prefill=False, **on).engine.prefill_first
    assert not _replica(catalog, "sglang", engine_prefill_first=False).engine.prefill_first
    assert not _replica(catalog, "vllm", **on).engine.prefill_first
    assert not _replica(catalog, "trtllm", **on).engine.prefill_first
    # the default follows ENGINE_PREFILL_FIRST_DEFAULT (off: the held-out TPOT got worse)
    assert _replica(catalog, "sglang").engine.prefill_first == ENGINE_PREFILL_FIRST_DEFAULT


def _two_requests(catalog, mixed_chunk: bool, case: str):
    """A (2,000-token prompt, 50 tokens) at t = 0 and B (2,000-token prompt, a one-token
    answer) arriving while A decodes, SGLang on one H100 with chunks of 1,024 tokens."""
    from planner.serving import run
    from planner.workload.workload import make_requests

    rep = _replica(
        catalog, "sglang", max_num_batched_tokens=CHUNK, engine_prefill_first=not mixed_chunk
    )
    if case == "b_alone":
        return run(rep, make_requests([0.0], [2000], [1]))
    alone = run(rep, make_requests([0.0], [2000], [50]))
    if case == "a_alone":
        return alone
    t_b = float(alone.first_token_s[0]) + 20 * float(alone.tpot_s[0])  # mid-decode
    return run(rep, make_requests([0.0, t_b], [2000, 2000], [50, 1]))


def test_prefill_steps_stall_the_decoders_hand_derived(catalog):
    """B's prompt of 2,000 tokens runs as two extend steps of its own: 1,024 tokens, then
    2,000 - 1,024 = 976 tokens over the 1,024 in KV, which emits B's only token. A does not
    decode in either, and its 49 decode steps keep their batch (1) and contexts, so

        A's finish (with B) - A's finish (alone) = step(1,024) + step(976 | 1,024 in KV)
                                                 = B's E2E alone in an empty engine,

    to rounding (rel 1e-9). B's TTFT is those two steps plus its wait for the iteration
    boundary, less than one of A's decode steps (1.5 allowed).

    With ``--enable-mixed-chunk`` B's chunks ride A's decode steps, which read the weights
    once for both, so A loses less than B's two steps."""
    t_b = float(_two_requests(catalog, False, "b_alone").e2e_s[0])
    a0 = _two_requests(catalog, False, "a_alone")
    split = _two_requests(catalog, False, "both")
    mixed = _two_requests(catalog, True, "both")
    delay_split = float(split.finish_s[0] - a0.finish_s[0])
    delay_mixed = float(mixed.finish_s[0] - a0.finish_s[0])
    assert delay_split == pytest.approx(t_b, rel=1e-9)
    step_a = float(a0.tpot_s[0])
    assert t_b <= float(split.ttft_s[1]) < t_b + 1.5 * step_a
    assert 0.0 < delay_mixed < delay_split


@pytest.mark.parametrize("mixed_chunk", [False, True], ids=["split", "mixed"])
@pytest.mark.parametrize("clients", [1, 8, 32])
def test_more_prefill_throughput_never_raises_ttft(catalog, mixed_chunk, clients):
    """Property: the prompt chunks' share of each step time times 2, 1, 0.5
    (``prefill_scale``: half, the same, twice the prefill throughput) never raises the
    median or mean TTFT of a closed loop of SGLang clients (3,000-token prompts, two chunks
    each, 100-token answers), split steps or mixed; the scale reaches TTFT at all."""
    from planner.serving import run
    from planner.workload.workload import make_requests

    n = 6 * clients
    med, mean = [], []
    for scale in (2.0, 1.0, 0.5):
        rep = _replica(
            catalog, "sglang", max_num_batched_tokens=2048, engine_prefill_first=not mixed_chunk,
            prefill_scale=scale,
        )  # fmt: skip
        res = run(rep, make_requests([0.0] * n, [3000] * n, [100] * n), concurrency=clients)
        med.append(float(np.median(res.ttft_s)))
        mean.append(float(res.ttft_s.mean()))
    assert med[0] >= med[1] >= med[2], med
    assert mean[0] >= mean[1] >= mean[2], mean
    assert mean[0] > mean[2]
