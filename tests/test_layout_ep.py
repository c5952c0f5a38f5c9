"""The deployment layout (tp, pp, ep, attention_dp, moe_tp) and the physics of expert
parallel and attention data-parallel: width rule, weights, KV, step time, search, errors.

Hand-derived numbers use Qwen3-30B-A3B (data/models.yaml: 48 layers, hidden 2048, 32 query
/ 4 KV heads of 128, QK-norm, 128 experts of FFN width 768, top-8, vocab 151,936, untied).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.layout import Layout, check_for_model, layout_of
from planner.engine.memory import plan_memory, weight_memory
from planner.engine.step import step_model
from planner.errors import PlannerError

CAT = load_catalog()


# --------------------------------------------------------------------------- the object
def test_width_rule_fills_moe_tp_and_names_the_layout():
    dep8 = layout_of(1, 1, 8, 8)  # SGLang --tp 8 --dp 8 --enable-dp-attention --ep 8
    assert (dep8.moe_tp, dep8.width, dep8.num_gpus, dep8.label) == (1, 8, 8, "DEP8")
    tp8ep8 = layout_of(8, 1, 8)
    assert (tp8ep8.moe_tp, tp8ep8.num_gpus, tp8ep8.label) == (1, 8, "TP8 EP8")
    # TRT-LLM --tp_size 8 --ep_size 4: each expert split over the 2 GPUs of its EP group
    tp8ep4 = layout_of(8, 1, 4)
    assert (tp8ep4.moe_tp, tp8ep4.label) == (2, "TP8 EP4 MoE-TP2")
    # plain TP of a MoE model: every GPU holds 1/8 of every expert
    assert layout_of(8).moe_tp == 8 and layout_of(8).label == "TP8"
    assert layout_of(8, 2).label == "TP8 PP2" and layout_of(8, 2).num_gpus == 16
    assert layout_of(2, 1, 8, 4).label == "TP2 DP4 EP8"


def test_layout_is_frozen_and_refuses_unknown_fields():
    lay = layout_of(1, 1, 8, 8)
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="frozen"):
        lay.tp = 2  # type: ignore[misc]
    with pytest.raises(ValidationError, match="expert_parallel"):
        Layout(tp=1, expert_parallel=8)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "args, words",
    [
        ((8, 1, 3, 1), "width rule: tp x attention_dp = 8 x 1 = 8 GPUs"),
        ((1, 1, 8, 1), "ep=8 does not divide 1"),
        ((2, 1, 0, 1), "ep must be a whole number >= 1, got 0"),
        ((2, 1, 2.5, 1), "ep must be a whole number >= 1, got 2.5"),
        ((1, 1, 1, True), "attention_dp must be a whole number >= 1"),
    ],
)
def test_bad_layouts_are_one_line_errors_naming_the_field(args, words):
    with pytest.raises(PlannerError) as e:
        layout_of(*args)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_explicit_moe_tp_must_close_the_width_rule():
    with pytest.raises(PlannerError, match="moe_tp x ep = 2 x 8 = 16"):
        layout_of(8, 1, 8, 1, moe_tp=2)


def test_model_rules():
    q = CAT.model("qwen3-30b-a3b")
    # ep=3 does not divide 128 experts: redundant slots on the engines that offer them
    # (layout.EP_REDUNDANT_FRAMEWORKS), refused elsewhere with the reason
    for fw in (None, "trtllm", "sglang", "vllm"):
        check_for_model(q, layout_of(1, 1, 3, 3), fw)
    with pytest.raises(PlannerError, match="ep=3 does not divide the 128 routed experts") as e:
        check_for_model(q, layout_of(1, 1, 3, 3), "lmdeploy")
    assert "no redundant expert slots" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(PlannerError, match="ep=256 exceeds the 128 routed experts"):
        check_for_model(q, layout_of(1, 1, 256, 256))
    with pytest.raises(PlannerError, match="llama-3.1-8b is dense"):
        check_for_model(CAT.model("llama-3.1-8b"), layout_of(2, 1, 2))
    with pytest.raises(PlannerError, match="attention_dp=2.*dense"):
        check_for_model(CAT.model("llama-3.1-8b"), layout_of(1, 1, 1, 2))
    check_for_model(q, layout_of(1, 1, 8, 8))  # no error


def test_framework_rule_names_the_field():
    with pytest.raises(PlannerError, match="attention_dp=8: .* does not offer attention"):
        # attention data-parallel with the experts tensor-split over the 8 GPUs (vLLM's
        # default for --data-parallel-size without --enable-expert-parallel)
        plan_memory("qwen3-30b-a3b", "nvidia-h100-sxm", "bf16", framework="tgi",
                    layout=layout_of(1, 1, 1, 8))  # fmt: skip
    with pytest.raises(PlannerError, match="ep=8: .* does not offer expert parallel"):
        plan_memory("qwen3-30b-a3b", "nvidia-h100-sxm", "bf16", framework="llama.cpp",
                    layout=layout_of(8, 1, 8))  # fmt: skip


# --------------------------------------------------------------------------- weights and KV
def test_weights_per_gpu_under_dep8_hand_derived():
    """Qwen3-30B-A3B bf16, DEP8 (tp 1, 8 attention ranks, ep 8):

    expert   = 3 x 2048 x 768                           =      4,718,592 params
    experts  = 48 x 128 x 4,718,592                     = 28,991,029,248
    attention/layer = q 2048*32*128 (8,388,608) + kv 2*2048*4*128 (2,097,152)
                      + o 32*128*2048 (8,388,608) + qk-norm 2*128 (256) = 18,874,624
    attention = 48 x 18,874,624                         =    905,981,952
    router    = 48 x 2048 x 128                         =     12,582,912
    norms     = (2 x 48 + 1) x 2048                     =        198,656
    embedding + lm head = 2 x 151,936 x 2048            =    622,329,856
    per GPU (attention etc. whole, experts / 8) = 905,981,952 + 12,582,912 + 198,656
        + 622,329,856 + 3,623,878,656 = 5,164,972,032 params x 2 B = 10,329,944,064 B
    """
    m, p = CAT.model("qwen3-30b-a3b"), CAT.precision("bf16")
    w = weight_memory(m, p, 1, 1, ep=8, moe_tp=1)
    assert w.per_gpu_bytes == pytest.approx(10_329_944_064, rel=1e-12)
    # plain TP8 splits everything eight ways (K/V projections stay whole below 4 KV heads
    # per GPU: 8 > 4 heads, so each of the 8 GPUs keeps 1/4 of K/V, i.e. twice its share)
    tp8 = weight_memory(m, p, 8, 1)
    assert tp8.per_gpu_bytes < w.per_gpu_bytes
    # the whole model is the same whatever the layout
    assert w.total_bytes == tp8.total_bytes


def test_kv_of_attention_ranks_adds_up():
    """Each attention rank keeps its own sequences: the replica holds dp x one GPU's tokens
    (MLA: the latent is replicated on every TP rank, so TP8 holds one GPU's)."""
    kw = dict(precision="fp8", framework="sglang", context_len=4096)
    tp8 = plan_memory("deepseek-v3", "nvidia-h200-sxm", layout=layout_of(8), **kw)
    dep8 = plan_memory("deepseek-v3", "nvidia-h200-sxm", layout=layout_of(1, 1, 8, 8), **kw)
    per_gpu_tokens = int(dep8.kv_budget_bytes_per_gpu // dep8.kv_cache_bytes_per_token)
    assert dep8.max_kv_tokens == 8 * per_gpu_tokens
    assert tp8.max_kv_tokens == int(tp8.kv_budget_bytes_per_gpu // tp8.kv_cache_bytes_per_token)
    # MLA per token and GPU is the same latent under both (61 x 576 x 2 B at bf16 KV)
    assert dep8.kv_cache_bytes_per_token == tp8.kv_cache_bytes_per_token == 61 * 576 * 2
    assert dep8.max_concurrent_sequences > 4 * tp8.max_concurrent_sequences
    assert (dep8.layout, dep8.num_gpus, dep8.ep, dep8.attention_dp) == ("DEP8", 8, 8, 8)


# --------------------------------------------------------------------------- step time
def _args(B, ctx=2000):
    return (B, B, B, B * ctx, B * ctx)


def test_routed_tokens_of_the_busiest_gpu_hand_derived():
    """256 tokens x top-8 over ep 8: mean 256 per GPU; the largest of 8 near-Poisson shares
    exceeds it by sqrt(2 ln 8) x sqrt(256) = 2.0393 x 16 = 32.63 (uniform routing, the prior)."""
    sm = step_model("qwen3-30b-a3b", "nvidia-h100-sxm", "bf16", layout=layout_of(1, 1, 8, 8))
    assert sm.routed_tokens_hot(256) == pytest.approx(256 + math.sqrt(2 * math.log(8)) * 16)
    skew = step_model("qwen3-30b-a3b", "nvidia-h100-sxm", "bf16", layout=layout_of(1, 1, 8, 8),
                      params=sm.params.with_(moe_imbalance=0.25))  # fmt: skip
    assert skew.routed_tokens_hot(256) == pytest.approx(256 * 1.25 + 2.0393 * 16, rel=1e-4)


def test_prompt_and_decode_skew_hand_derived():
    """moe_imbalance 2 (decode tokens) and moe_imbalance_prompt 0.5 (prompt tokens) over ep 8,
    top-8: a decode step of 256 tokens (m = 256 a GPU) runs 256 x 3 + sqrt(2 ln 8) x 16 =
    768 + 2.0393 x 16 = 800.6 on the busiest GPU; a step of 32,768 tokens of which 32,512
    prompt tokens and 256 decoders has skew 2 + (0.5 - 2) x 32,512 / 32,768 = 0.51172:
    32,768 x 1.51172 + 2.0393 x 181.02 = 49,905 (one skew for both: 3 x 32,768 + 369 =
    98,673)."""
    lay = layout_of(1, 1, 8, 8)
    prm = PRIOR.with_(moe_imbalance=2.0, moe_imbalance_prompt=0.5)
    # without the published ceiling on the decode skew (tests/test_decode_skew_cap.py)
    sm = replace(step_model("deepseek-v3", "nvidia-h200-sxm", "fp8", layout=lay, params=prm),
                 decode_skew_cap=math.inf)  # fmt: skip
    z = math.sqrt(2 * math.log(8))
    assert sm.routed_tokens_hot(256) == pytest.approx(256 * 3 + z * 16)
    assert sm.routed_tokens_hot(32_768, 32_512) == pytest.approx(49_905, rel=1e-4)
    one = replace(step_model("deepseek-v3", "nvidia-h200-sxm", "fp8", layout=lay,
                             params=prm.with_(moe_imbalance_prompt=2.0)),
                  decode_skew_cap=math.inf)  # fmt: skip
    assert one.routed_tokens_hot(32_768, 32_512) == pytest.approx(98_673, rel=1e-4)
    # the step passes its prompt tokens (new tokens beyond one per sequence): a prompt step
    # with the lower prompt skew is faster than the same step under the decode skew
    args = (32_768, 256 + 4, 256 + 4, 256 * 2000 + 32_512, 256 * 2000 + 32_512 * 4_064)
    assert sm.step_time(*args) < one.step_time(*args)
    assert sm.step_time(*args) == pytest.approx(sm.step(*args).time_s, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(T=st.floats(1.0, 2e5), share=st.floats(0.0, 1.0), a=st.floats(0.0, 4.0),
       b=st.floats(0.0, 4.0))  # fmt: skip
def test_step_skew_between_its_decode_and_prompt_skews(T, share, a, b):
    """The busiest GPU's routed tokens lie between those of an all-decode step (skew a) and
    an all-prompt one (skew b) of the same size, and never below uniform routing."""
    lay = layout_of(1, 1, 8, 8)
    sm = step_model("deepseek-v3", "nvidia-h200-sxm", "fp8", layout=lay,
                    params=PRIOR.with_(moe_imbalance=a, moe_imbalance_prompt=b))  # fmt: skip
    h = sm.routed_tokens_hot(T, share * T)
    lo, hi = sorted((sm.routed_tokens_hot(T, 0.0), sm.routed_tokens_hot(T, T)))
    assert lo * (1 - 1e-12) <= h <= hi * (1 + 1e-12)
    assert h >= (T + math.sqrt(2 * math.log(8)) * math.sqrt(T)) * (1 - 1e-12)


@pytest.mark.parametrize(
    "lay", [layout_of(1, 1, 8, 8), layout_of(8, 1, 8), layout_of(2, 1, 8, 4), layout_of(4, 2, 4)]
)
@pytest.mark.parametrize("skew", [(0.0, 0.0), (3.0, 0.4)])
def test_scalar_path_equals_vector_path_for_ep_layouts(lay, skew):
    sm = step_model("deepseek-v3", "nvidia-h200-sxm", "fp8", layout=lay,
                    params=PRIOR.with_(moe_imbalance=skew[0], moe_imbalance_prompt=skew[1]))  # fmt: skip
    for B in (1, 7, 64, 600):
        for new in (B, B + 3000):
            args = (new, B, B, B * 1500, B * 1500 + 10_000, 0.0, 0.0, 500.0)
            assert sm.step_time(*args) == pytest.approx(sm.step(*args).time_s, rel=1e-12)


def test_attention_dp_divides_the_attention_work():
    """DEP8 vs TP8 on DeepSeek-V3 (MLA): under TP8 every GPU reads every sequence's latent;
    under DEP8 each reads its rank's eighth."""
    kw = dict(model="deepseek-v3", gpu="nvidia-h200-sxm", precision="fp8")
    tp8 = step_model(**kw, layout=layout_of(8)).step(*_args(512))
    sm = step_model(**kw, layout=layout_of(1, 1, 8, 8))
    dep8 = sm.step(*_args(512))
    assert dep8.kv_read_bytes == pytest.approx(tp8.kv_read_bytes / 8)
    # TP8 is memory bound; DEP8 runs all 128 heads on 1/8 of the pairs: 64 x 2,000 x 61 x
    # 278,528 = 2.175e12 FLOPs at the MLA decode rate (989e12 x 660/990 = 659e12 FLOP/s,
    # planner/engine/mla.py) = 3.30 ms, above the eighth of TP8's memory time (2.34 ms):
    # compute bound, as FlashMLA's analysis says for h_q x s_q >= 128 on Hopper
    assert dep8.attention_flops == pytest.approx(64 * 2000 * 61 * 278_528)
    assert dep8.t_attn_s == pytest.approx(dep8.attention_flops / sm.mla_decode_flops_s)
    assert dep8.t_attn_s == pytest.approx(3.30e-3, rel=2e-3)
    assert dep8.t_attn_s > tp8.t_attn_s / 8


def test_dep_loses_at_batch_one_and_wins_at_large_batch():
    """At batch 1 each DEP rank still reads its whole attention copy (slower than TP8); at
    a large batch the divided KV reads win: the crossover the measurements show."""
    kw = dict(model="deepseek-v3", gpu="nvidia-h200-sxm", precision="fp8")
    tp8 = step_model(**kw, layout=layout_of(8))
    dep8 = step_model(**kw, layout=layout_of(1, 1, 8, 8))
    assert dep8.step_time(*_args(1)) > tp8.step_time(*_args(1))
    assert dep8.step_time(*_args(1024)) < tp8.step_time(*_args(1024))


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 2048), lo=st.floats(1.0, 400.0), factor=st.floats(1.0, 8.0))
def test_more_link_bandwidth_never_slows_an_ep_step(B, lo, factor):
    from dataclasses import replace

    sm = step_model("deepseek-v3", "nvidia-h200-sxm", "fp8", layout=layout_of(1, 1, 8, 8))
    slow = replace(sm, link_bytes_s=lo * 1e9)
    fast = replace(sm, link_bytes_s=lo * factor * 1e9)
    assert fast.step_time(*_args(B)) <= slow.step_time(*_args(B))


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 2048), imb=st.floats(0.0, 2.0), more=st.floats(0.0, 2.0))
def test_more_routing_skew_never_speeds_a_step(B, imb, more):
    sm = step_model("deepseek-v3", "nvidia-b200", "fp8", layout=layout_of(1, 1, 8, 8))
    a = step_model("deepseek-v3", "nvidia-b200", "fp8", layout=layout_of(1, 1, 8, 8),
                   params=sm.params.with_(moe_imbalance=imb))  # fmt: skip
    b = step_model("deepseek-v3", "nvidia-b200", "fp8", layout=layout_of(1, 1, 8, 8),
                   params=sm.params.with_(moe_imbalance=imb + more))  # fmt: skip
    assert b.step_time(*_args(B, 500)) >= a.step_time(*_args(B, 500))


# --------------------------------------------------------------------------- replica
def test_replica_schedules_every_rank():
    from planner.serving.replica import build_replica

    r = build_replica("deepseek-v3", "nvidia-h200-sxm", "fp8", "sglang", tp=1, ep=8,
                      attention_dp=8, max_num_seqs=64, max_num_batched_tokens=4096)  # fmt: skip
    assert r.num_gpus == 8 and r.engine.max_num_seqs == 8 * 64
    assert r.engine.max_num_batched_tokens == 8 * 4096
    assert "DEP8" in r.label()


# --------------------------------------------------------------------------- search
def test_recommend_offers_ep_layouts_for_moe_and_never_gguf_on_datacenter_engines():
    """The issue's buyer question, as typed: DeepSeek-V3 at 10 req/s, 1k/1k, TTFT p99 5 s,
    TPOT p99 0.1 s on H200 or B200: an EP / attention-DP layout leads, no GGUF is offered,
    no FP4 on the H200 (no FP4 tensor cores), and num_gpus counts every GPU of the layout."""
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", "recommend", "--model", "deepseek-v3",
         "--peak-rps", "10", "--input-tokens", "1000", "--output-tokens", "1000",
         "--ttft-p99", "5", "--tpot-p99", "0.1", "--gpus", "nvidia-h200-sxm,nvidia-b200",
         "--format", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    top = json.loads(out.stdout)["recommendations"][:5]
    assert top[0]["ep"] > 1
    assert not any(r["precision"].startswith("gguf") for r in top)
    assert all(r["num_gpus"] == r["replicas"] * r["tp"] * r["attention_dp"] * r["pp"] for r in top)
    assert not any(r["precision"] == "fp4" and r["gpu"] == "nvidia-h200-sxm" for r in top)
    assert all(r["layout"] for r in top)


def test_engine_recommended_format_rank():
    """TensorRT-LLM's DeepSeek-R1 guides: FP4 first on Blackwell, FP8 on Hopper (source in
    frameworks.yaml); an unlisted format ranks after the list."""
    trt = CAT.framework("trtllm")
    assert trt.format_rank("blackwell", "fp4") == 0
    assert trt.format_rank("blackwell", "fp8") == 1
    assert trt.format_rank("blackwell", "int4-awq") == 3
    assert trt.format_rank("hopper", "fp8") == 0
    assert trt.recommended_formats_source and "nvidia.github.io" in trt.recommended_formats_source
    assert CAT.framework("vllm").format_rank("hopper", "fp8") == 1  # no list: all equal
    # the guides are DeepSeek-R1 pages: for DeepSeek (model_type deepseek_v3) the order
    # holds; for a Llama no source says so, so every format ranks alike (past an empty
    # list: 0 + 1) and the tie falls to more bits per weight
    assert trt.format_rank("blackwell", "fp4", "deepseek_v3") == 0
    assert trt.format_rank("blackwell", "fp4", "llama") == 1
    assert trt.format_rank("blackwell", "fp8", "llama") == 1


def test_format_native_rule():
    from planner.recommend.options import format_problem

    b200, h200, rtx = CAT.gpu("nvidia-b200"), CAT.gpu("nvidia-h200-sxm"), CAT.gpu("nvidia-rtx-4090")
    assert "llama.cpp's format" in format_problem(CAT.precision("gguf-q8_0"), b200,
                                                  CAT.framework("vllm"))  # fmt: skip
    assert format_problem(CAT.precision("gguf-q8_0"), rtx, CAT.framework("vllm")) == ""
    assert format_problem(CAT.precision("gguf-q4_k_m"), b200, CAT.framework("llama.cpp")) == ""
    assert "no FP4 tensor cores" in format_problem(CAT.precision("fp4"), h200,
                                                   CAT.framework("vllm"))  # fmt: skip
    assert format_problem(CAT.precision("fp4"), b200, CAT.framework("trtllm")) == ""


def test_collectives_cross_nodes_at_the_scale_out_bandwidth():
    """TP16 of Llama-3.1-405B: on H100 (8-GPU NVLink domain, 8 x 400 Gb/s ConnectX-7 per
    node = 50 GB/s per GPU) the all-reduces run at 50 GB/s; TP8 stays on NVLink (450 GB/s);
    on GB200 (72-GPU NVL72 domain) TP16 stays on NVLink (900 GB/s)."""
    h100 = step_model("llama-3.1-405b", "nvidia-h100-sxm", "fp8", layout=layout_of(16))
    assert h100.link_bytes_s == pytest.approx(50e9)
    assert step_model("llama-3.1-405b", "nvidia-h100-sxm", "fp8", layout=layout_of(8)) \
        .link_bytes_s == pytest.approx(450e9)  # fmt: skip
    gb200 = step_model("llama-3.1-405b", "nvidia-gb200", "fp8", layout=layout_of(16))
    assert gb200.link_bytes_s == pytest.approx(
        CAT.gpu("nvidia-gb200").interconnect_gbs_unidir * 1e9
    )
    # DEP16 of DeepSeek-V3 over two H200 nodes: the dispatch / combine cross the scale-out
    dep16 = step_model("deepseek-v3", "nvidia-h200-sxm", "fp8", layout=layout_of(1, 1, 16, 16))
    assert dep16.link_bytes_s == pytest.approx(50e9)
    assert layout_of(1, 1, 16, 16).describe(CAT.gpu("nvidia-h200-sxm")) == "DEP16 (2 nodes)"


def test_tp16_over_servers_is_offered_only_where_the_scale_out_network_is_known():
    """The recommender's multi-node TP16 of Llama-3.1-405B: offered on H100 (8-GPU HGX
    domain, 50 GB/s scale-out per GPU in hardware.yaml) and on GB200 (inside its 72-GPU
    NVL72 domain), refused on MI325X (no platform's scale-out NICs read: null) and on L40S
    (PCIe cards, no domain, no scale-out figure), where the step model would otherwise
    charge the all-reduces at the in-server link."""
    from planner.recommend.options import Option, pp_options

    model = CAT.model("llama-3.1-405b")

    def tps(gpu):
        o = Option(CAT.gpu(gpu), CAT.framework("vllm"), CAT.precision("fp8"), None, layout_of(8))
        return sorted({x.layout.tp for x in pp_options(model, o)})

    assert 16 in tps("nvidia-h100-sxm")
    assert 16 in tps("nvidia-gb200")
    assert 16 not in tps("amd-mi325x")
    assert 16 not in tps("nvidia-l40s")
    assert tps("amd-mi325x") == [8]  # pp across nodes stays on offer


@pytest.mark.parametrize(
    "dep, words",
    [
        ("ep: '8', attention_dp: 8", "deployment.ep: must be a number, not a str"),
        ("ep: true, attention_dp: 8", "deployment.ep: must be a number, not a bool"),
        ("ep: 8, attention_dp: 1000000000", "layout too large"),
        ("ep: 8, attention_dp: 8, epp: 2", "deployment.epp: unknown field; did you mean pp?"),
        ("tp: 8, ep: 3", "width rule"),
    ],
)
def test_hostile_layout_fields_in_a_scenario_are_one_line_errors(tmp_path, dep, words):
    """Issue 33's hostile inputs on issue 29's new fields: a string, a bool, an absurd size,
    a typo, a broken width rule: one line naming the field, exit code 2."""
    import subprocess
    import sys

    p = tmp_path / "h.yaml"
    p.write_text(
        "model: deepseek-v3\nworkload: {preset: chat, traffic: {mean_rps: 1, peak_rps: 2}}\n"
        "slo: {tpot: {max_s: 0.1}}\n"
        f"deployment: {{gpu: nvidia-h200-sxm, framework: sglang, precision: fp8, {dep}}}\n",
        encoding="utf-8",
    )
    out = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", "capacity", str(p), "--no-curve"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    # (runpy may warn about ``-m planner.cli.main`` first: the error is the last line)
    err = out.stderr.strip().splitlines()[-1]
    assert words in err and err.startswith("planner: error: ")


def test_an_absurd_lognormal_sigma_is_a_field_error_not_an_overflow():
    """Found by the app's hostile uploads (issue 33): sigma 40 overflowed recommend's mean
    (e^(40^2/2)); now a field error naming the limit, 5 (mean e^12.5 = 268,337 x the median)."""
    from pydantic import ValidationError

    from planner.workload.lengths import LognormalLength

    with pytest.raises(ValidationError, match="sigma 40 is beyond 5"):
        LognormalLength(median=100, sigma=40)
    with pytest.raises(ValidationError, match="beyond 5"):  # p99 1e9 x the median: sigma 8.9
        LognormalLength(median=100, p99=1e11)
    ok = LognormalLength(median=100, sigma=5, max_tokens=500)
    assert math.isfinite(ok.mean_tokens()) and ok.mean_tokens() <= 500
    assert math.exp(5**2 / 2) == pytest.approx(268_337.3, rel=1e-6)


# --------------------------------------------------------------------------- multi-node engines
def test_one_replica_across_hosts_needs_an_engine_that_serves_across_nodes():
    # DeepSeek-V3 fp8 TP16 on H100 (8 GPUs per HGX host): 16 / 8 = 2 hosts. SGLang documents
    # --nnodes 2 --tp 16 (frameworks.yaml multi_node_source); TGI's maintainers say multi-node
    # is "probably never going to land" (issue 1275); llama.cpp has no documented mode
    from planner.engine.memory import plan_memory

    kw = dict(model="deepseek-v3", gpu="nvidia-h100-sxm", precision="fp8", tp=16)
    assert plan_memory(framework="sglang", **kw).fits
    with pytest.raises(PlannerError, match=r"TP16 spans 2 hosts .*issues/1275"):
        plan_memory(framework="tgi", **kw)
    with pytest.raises(PlannerError, match="no multi-node mode of llama.cpp"):
        plan_memory(framework="llama.cpp", **{**kw, "precision": "gguf-q4_k_m"})


def test_a_gb200_host_is_a_compute_tray_of_four_gpus():
    # DGX GB200 user guide: "18x 1RU compute trays, each with 2 Grace CPUs and 4 Blackwell
    # GPUs" in one 72-GPU NVLink domain: TP8 is one NVLink domain but two hosts
    from planner.catalog import load_catalog
    from planner.catalog.layout import hosts_spanned, layout_of, nodes_spanned

    gb200 = load_catalog().gpu("nvidia-gb200")
    assert (nodes_spanned(layout_of(8), gb200), hosts_spanned(layout_of(8), gb200)) == (1, 2)
    assert hosts_spanned(layout_of(4), gb200) == 1
    h100 = load_catalog().gpu("nvidia-h100-sxm")
    assert hosts_spanned(layout_of(8), h100) == 1 and hosts_spanned(layout_of(16), h100) == 2


def test_native_precision_wins_a_tie():
    """gpt-oss-20b is released in MXFP4 (``native_precision: fp4``): on one H100 its fp4 and
    an upcast bf16 deployment both need 1 GPU at the same $/h (the 20B's bf16 weights,
    ~42 GB, fit 80 GiB), a tie on cost and GPUs. TensorRT-LLM's format advice is read for
    DeepSeek only, so it does not decide; the released precision comes before 'more bits'
    (an upcast adds no quality to a checkpoint whose reference is MXFP4). Under the old
    rule (more bits first) bf16 won this tie."""
    import json
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", "recommend", "--model", "gpt-oss-20b",
         "--peak-rps", "10", "--input-tokens", "1000", "--output-tokens", "1000",
         "--ttft-p99", "2", "--tpot-p99", "0.05", "--gpus", "nvidia-h100-sxm",
         "--frameworks", "trtllm", "--precisions", "fp4,bf16", "--tp", "1", "--format", "json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    top = json.loads(r.stdout)["recommendations"][0]
    assert (top["precision"], top["num_gpus"]) == ("fp4", 1)
    assert CAT.model("gpt-oss-20b").native_precision == "fp4"


def test_old_profile_without_prompt_skew_keeps_one_skew():
    # a node saved before the split (2026-12-07) names only moe_imbalance: its prompt tokens
    # keep that skew (2.5), not the field's prior 0
    from planner.catalog.efficiency import EfficiencyParams

    old = EfficiencyParams.model_validate({"moe_imbalance": 2.5})
    assert old.moe_imbalance_prompt == 2.5
    new = EfficiencyParams.model_validate({"moe_imbalance": 2.5, "moe_imbalance_prompt": 1.0})
    assert new.moe_imbalance_prompt == 1.0
    assert EfficiencyParams().moe_imbalance_prompt == 0.0
