"""Issue 32, "Latency model": vLLM's V0 engine (releases before 0.8.0) runs MLA models
without chunked prefill (``planner.benchmarks.serving_rows.v0_mla_unchunked_tokens``), and
the property that more prefill throughput never raises a serving row's TTFT."""

from __future__ import annotations

import pytest
from _benchmark_rows import schema_row

from planner.benchmarks.serving_rows import serving_row_details, v0_mla_unchunked_tokens
from planner.catalog import PRIOR

V073 = "vLLM 0.7.3.dev138+g21f6ca217 (image rocm/vllm-dev:vllm-ds3-staging-0217), ROCm 6.3"


def test_v0_mla_budget_hand_derived(catalog):
    """V0 without chunked prefill: ``max_num_batched_tokens = max(max_model_len, 2048)``.

    * ``--max-model-len 32768`` (dstack's MI300X command): max(32768, 2048) = 32768;
    * no ``--max-model-len`` (dstack's H200 command): DeepSeek-V3's context,
      max_position_embeddings 163840 (its config.json), so max(163840, 2048) = 163840;
    * ``--max-model-len 1024``: max(1024, 2048) = 2048 (V0's floor);
    * a V1 release (0.8.0 on), another engine, a model without MLA, or a version text with
      no release number: None (the row's own defaults stand).
    """
    ds = catalog.model_ref("deepseek-v3")
    llama = catalog.model_ref("llama-3.1-8b")
    assert ds.is_mla and not llama.is_mla
    assert ds.max_position_embeddings == 163840
    cmd = "server: vllm serve --tensor-parallel-size 8 --max-model-len 32768; model ..."
    assert v0_mla_unchunked_tokens("vllm", V073, ds, cmd) == 32768
    assert v0_mla_unchunked_tokens("vllm", "vLLM 0.7.4.dev181+gf35f8e22", ds, "") == 163840
    assert v0_mla_unchunked_tokens("vllm", "0.6.6.post1", ds, "--max-model-len 1024") == 2048
    assert v0_mla_unchunked_tokens("vllm", "v0.8.0", ds, cmd) is None
    assert v0_mla_unchunked_tokens("vllm", "v0.10.2 | vllm serve", ds, cmd) is None
    assert v0_mla_unchunked_tokens("sglang", "SGLang 0.4.3.post2", ds, cmd) is None
    assert v0_mla_unchunked_tokens("vllm", V073, llama, cmd) is None
    assert v0_mla_unchunked_tokens("vllm", "nightly", ds, cmd) is None


def _dstack_row(version: str, conc: int) -> dict[str, str]:
    return schema_row(
        hardware="nvidia-h200-sxm", n_gpus="8", tp="8", model="deepseek-v3", precision="fp8",
        framework="vllm", framework_version=version, concurrency=str(conc), isl="3200",
        osl="800", metric="ttft_ms_mean", as_of="2025-03-18",
        notes=f"closed loop with max_concurrency {conc}, 64 requests; "
        "server: vllm serve --tensor-parallel-size 8",
    )  # fmt: skip


def test_v0_mla_row_runs_its_prompts_together(catalog):
    """A closed loop of 8 clients with fixed lengths (3,200 in / 800 out) on vLLM 0.7.4:
    the 163,840-token budget holds all 8 prompts (8 x 3,200 = 25,600 tokens), so they run in
    one step and every client gets its first token at the end of it; the clients then
    finish together and send again together. Every TTFT is the same step's time, so the
    P99 is the median (within 5%), and the note says chunked prefill is off. The same row
    on 0.8.0 (V1: chunked prefill, the default budget) staggers the first tokens instead:
    its median TTFT is below the V0 one."""
    v0 = serving_row_details(_dstack_row("vLLM 0.7.4.dev181+gf35f8e22", 8), catalog, PRIOR)
    v1 = serving_row_details(_dstack_row("vLLM 0.8.0", 8), catalog, PRIOR)
    assert "reason" not in v0, v0.get("reason")
    assert "chunked prefill off" in v0["note"]
    assert "max_num_batched_tokens=163840" in v0["note"]
    assert "chunked prefill off" not in v1["note"]
    assert v0["ttft_ms_p99"] == pytest.approx(v0["ttft_ms_median"], rel=0.05)
    assert v1["ttft_ms_median"] < v0["ttft_ms_median"]


def _llama_row(framework: str, **kw) -> dict[str, str]:
    return schema_row(**{
        "hardware": "nvidia-h100-sxm", "model": "llama-3.1-8b", "precision": "bf16",
        "framework": framework, "isl": "2048", "osl": "128", **kw,
    })  # fmt: skip


@pytest.mark.parametrize("framework", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize(
    "load",
    [
        {"mode": "concurrency", "concurrency": "1", "notes": "60 requests"},
        {"mode": "concurrency", "concurrency": "8", "notes": "160 requests"},
        {"mode": "rate", "request_rate": "4", "notes": "300 requests"},
        {"mode": "offline", "request_rate": "inf", "notes": "all 400 requests sent at once"},
    ],
    ids=["one-client", "eight-clients", "poisson", "burst"],
)
def test_more_prefill_throughput_never_raises_ttft(catalog, framework, load):
    """The prompt chunks' share of each step time times 2, 1, 0.5 (``prefill_scale``: the
    same GPU with half, the same, twice the prefill throughput): the median and mean TTFT
    never rise as prefill gets faster (one closed-loop client, a closed loop of 8, Poisson
    arrivals at 4 req/s, a burst of 400 prompts sent at once)."""
    t_med, t_mean = [], []
    for scale in (2.0, 1.0, 0.5):
        d = serving_row_details(_llama_row(framework, **load), catalog, PRIOR, prefill_scale=scale)
        assert "reason" not in d, d.get("reason")
        t_med.append(d["ttft_ms_median"])
        t_mean.append(d["ttft_ms_mean"])
    assert t_med[0] >= t_med[1] >= t_med[2], t_med
    assert t_mean[0] >= t_mean[1] >= t_mean[2], t_mean
    assert t_med[0] > t_med[2]  # the scale reaches TTFT at all


def _two_requests(catalog, prefill_first: bool, with_b: bool, b_alone: bool = False):
    """A (2,000-token prompt, 50 tokens) at t = 0 and B (2,000-token prompt, a one-token
    answer) arriving while A decodes, on one H100 without chunked prefill."""
    from planner.serving import run
    from planner.serving.replica import build_replica
    from planner.workload.workload import make_requests

    rep = build_replica(
        "llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm", catalog=catalog,
        chunked_prefill=False, prefill_first=prefill_first, max_num_batched_tokens=8192,
    )  # fmt: skip
    if b_alone:
        return run(rep, make_requests([0.0], [2000], [1]))
    if not with_b:
        return run(rep, make_requests([0.0], [2000], [50]))
    alone = run(rep, make_requests([0.0], [2000], [50]))
    t_b = float(alone.first_token_s[0]) + 20 * float(alone.tpot_s[0])  # mid-decode
    return run(rep, make_requests([0.0, t_b], [2000, 2000], [50, 1]))


def test_prefill_first_pauses_the_decoders_hand_derived(catalog):
    """vLLM V0's default scheduler ("Don't schedule decodes if prefills are scheduled"):
    when B's prompt arrives while A decodes, B runs in a step of its own and A does not
    decode in it. A's 49 decode steps keep their batch (1) and contexts, so A finishes
    later by exactly that step, the time B's prefill takes in an empty engine (B alone:
    its E2E, a one-token answer). B's TTFT is that step plus its wait for the iteration
    boundary (less than one of A's decode steps).

    Mixed (no prefill-first): B's prompt joins A's decode step, so A loses only the part
    of the fused step above a decode step, less than B's prefill alone (the fused step
    reads the weights once)."""
    t_pf = float(_two_requests(catalog, True, False, b_alone=True).e2e_s[0])
    a0 = _two_requests(catalog, True, with_b=False)
    pf = _two_requests(catalog, True, with_b=True)
    mixed = _two_requests(catalog, False, with_b=True)
    delay_pf = float(pf.finish_s[0] - a0.finish_s[0])
    delay_mixed = float(mixed.finish_s[0] - a0.finish_s[0])
    assert delay_pf == pytest.approx(t_pf, rel=1e-9)
    step_a = float(a0.tpot_s[0])
    assert t_pf <= float(pf.ttft_s[1]) < t_pf + 1.5 * step_a
    assert 0.0 < delay_mixed < delay_pf
