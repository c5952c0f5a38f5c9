"""Wide expert-parallel decode (issues 29 / 30: GB200 NVL72 DEP16-48 decode pools): the
all-to-all dispatch / combine, expert slots of EP widths that do not divide the experts,
and how the per-GPU terms move with the EP width. Hand-derived numbers in the comments."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.layout import layout_of
from planner.engine.adp import dispatch_bytes_per_token, expert_slots_per_rank
from planner.engine.memory import weight_memory
from planner.engine.step import step_model

CAT = load_catalog()
DSV3 = CAT.model("deepseek-v3")


def _dep(n: int, gpu: str = "nvidia-gb200", imb: float = 0.0):
    return step_model(
        "deepseek-v3", gpu, "fp8", catalog=CAT, layout=layout_of(1, 1, n, n),
        params=PRIOR.with_(moe_imbalance=imb),
    )  # fmt: skip


def test_dispatch_combine_dep32_gb200_by_hand():
    """DeepSeek-V3 (E = 256 routed experts, top-8, hidden 7,168, 58 MoE layers of 61) as
    DEP32 on GB200 NVL72 (one NVLink domain, 900 GB/s one way per GPU).

    Each rank holds g = 256 / 32 = 8 experts; a token picks one of a given rank's experts
    with q = 1 - (1 - 8/256)^8 = 1 - 0.96875^8 = 1 - 0.775700 = 0.224300 (0.96875^2 =
    0.938477, ^4 = 0.880738, ^8 = 0.775700). A rank sends each
    of its tokens once to each of the 31 other ranks it picks (31 x 0.224300 = 6.9533 ranks)
    and gets the results back, 16-bit both ways: 6.9533 x 7,168 x 2 x 2 = 199,365 B per
    rank token and MoE layer, i.e. / 32 = 6,230.2 B per replica token (the all-gather +
    reduce-scatter moved 2 x 31/32 x 7,168 x 2 = 27,776 B: 4.46x more).

    A decode step of 64 sequences per rank (T = 2,048 replica tokens): 6,230.2 x 58 x 2,048 =
    740.0 MB per GPU; at 900 GB/s x comm_eff plus 2 x 58 collectives x comm_latency_s."""
    q = 1 - (1 - 8 / 256) ** 8
    assert q == pytest.approx(0.224300, abs=1e-6)
    per_tok = dispatch_bytes_per_token(layout_of(1, 1, 32, 32), 256, 8, 7168)
    assert per_tok == pytest.approx(6230.2, abs=0.1)
    assert dispatch_bytes_per_token(layout_of(32, 1, 32, 1), 256, 8, 7168) == pytest.approx(
        27776.0
    )  # TP32 EP32: the all-gather form
    sm = _dep(32)
    br = sm.step(2048, 2048, 2048, 2048 * 1000, 2048 * 1000)
    assert br.comm_bytes == pytest.approx(6230.2 * 58 * 2048, rel=1e-4)  # 740.0 MB
    p = PRIOR
    t = 6230.2 * 58 * 2048 / (900e9 * p.comm_eff) + 2 * 58 * p.comm_latency_s
    assert br.t_comm_s == pytest.approx(t, rel=1e-4)
    # the scalar path (simulator) carries the same bytes
    assert sm.step_time(2048, 2048, 2048, 2.048e6, 2.048e6) == pytest.approx(br.time_s, rel=1e-9)


def test_dep8_all_to_all_is_below_the_all_gather():
    """DEP8: g = 32, q = 1 - (224/256)^8 = 1 - 0.343609 = 0.656391; 7 x 0.656391 / 8 x
    7,168 x 4 = 16,468 B per replica token and MoE layer against the all-gather's 2 x 7/8 x
    7,168 x 2 = 25,088 B."""
    assert dispatch_bytes_per_token(layout_of(1, 1, 8, 8), 256, 8, 7168) == pytest.approx(
        16468, abs=1
    )


def test_non_dividing_ep_holds_ceil_slots():
    """DEP48 (InferenceX's GB200 decode pools; TensorRT-LLM num_slots / SGLang redundant
    experts): 256 experts over 48 ranks, ceil(256 / 48) = 6 slots each (288 in all = 256 +
    32 redundant); DEP24: ceil(256 / 24) = 11 (264 slots)."""
    assert expert_slots_per_rank(256, 48) == 6
    assert expert_slots_per_rank(256, 24) == 11
    assert expert_slots_per_rank(256, 32) == 8
    sm48, sm32 = _dep(48), _dep(32)
    assert sm48.local_experts == 6.0
    # every slot read once the batch hits them all: 6 vs 8 experts' bytes of DEP32
    big = 10**6
    r = (sm48.expected_experts(big) * sm48.expert_bytes) / (
        sm32.expected_experts(big) * sm32.expert_bytes
    )
    assert r == pytest.approx(6 / 8, rel=1e-9)
    # the memory of the weights counts the same slots
    one = weight_memory(DSV3, CAT.precision("fp8"), 1, 1, 1, 1)
    w48 = weight_memory(DSV3, CAT.precision("fp8"), 1, 1, 48, 1)
    w32 = weight_memory(DSV3, CAT.precision("fp8"), 1, 1, 32, 1)
    # per GPU: D + X (ep 1), D + X x 8/256 (ep 32), D + X x 6/256 (ep 48), X all experts:
    # (one - w32) / 248 = (one - w48) / 250 = X / 256
    e32 = (one.per_gpu_bytes - w32.per_gpu_bytes) / (256 - 8)
    e48 = (one.per_gpu_bytes - w48.per_gpu_bytes) / (256 - 6)
    assert e48 == pytest.approx(e32, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(a=st.integers(2, 72), b=st.integers(2, 72))
def test_more_ep_ranks_never_add_expert_weight_bytes_per_gpu(a, b):
    """Inside one NVL72 domain, a wider EP never adds expert weight bytes per GPU (step
    reads and memory), dividing or not: ceil(256 / n) does not grow with n."""
    lo, hi = sorted((a, b))
    s_lo, s_hi = _dep(lo), _dep(hi)
    for T in (1, 64, 4096):
        assert s_hi.expected_experts(T) * s_hi.expert_bytes <= (
            s_lo.expected_experts(T) * s_lo.expert_bytes * (1 + 1e-12)
        )
    f = CAT.precision("fp8")
    assert weight_memory(DSV3, f, 1, 1, hi, 1).per_gpu_bytes <= weight_memory(
        DSV3, f, 1, 1, lo, 1
    ).per_gpu_bytes * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(
    a=st.integers(3, 72), b=st.integers(3, 72), T=st.integers(1, 20000),
    imb=st.floats(0.0, 4.0),
)  # fmt: skip
def test_busiest_gpu_excess_never_grows_with_ep(a, b, T, imb):
    """The busiest EP GPU's routed tokens above the mean, ``imb x T k / ep + sqrt(2 ln ep x
    T k / ep)``: the skew part falls as 1 / ep and the multinomial part as sqrt(ln ep / ep)
    (falling for ep >= 3), so neither the excess nor the busiest GPU's tokens grow with ep."""
    lo, hi = sorted((a, b))
    s_lo, s_hi = _dep(lo, imb=imb), _dep(hi, imb=imb)
    k = 8
    ex_lo = s_lo.routed_tokens_hot(T) - T * k / lo
    ex_hi = s_hi.routed_tokens_hot(T) - T * k / hi
    assert ex_hi <= ex_lo * (1 + 1e-12)
    assert s_hi.routed_tokens_hot(T) <= s_lo.routed_tokens_hot(T) * (1 + 1e-12)
    # the multinomial bound alone at imb = 0: sqrt(2 ln ep x mean)
    s0 = _dep(hi)
    m = T * k / hi
    assert s0.routed_tokens_hot(T) - m == pytest.approx(math.sqrt(2 * math.log(hi) * m))


def test_recommender_tries_redundant_dep_widths_only_where_they_fit():
    """DEP24 / DEP48 (InferenceX's GB200 / GB300 decode workers) are tried for DeepSeek-V3's
    256 experts on an NVL72 domain by the engines with redundant expert slots (256 % 24 = 16,
    256 % 48 = 16: ceil(256 / 48) = 6 slots per rank), never inside an 8-GPU server, never
    on an engine without redundant slots, and never wider than the routed experts."""
    from planner.recommend.options import EP_SIZES_REDUNDANT, dep_sizes, ep_layouts

    m = CAT.model("deepseek-v3")
    assert EP_SIZES_REDUNDANT == (24, 48)
    assert dep_sizes(m, "trtllm", 72) == (4, 8, 16, 24, 32, 48, 64)
    assert dep_sizes(m, "sglang", 8) == (4, 8)
    assert dep_sizes(m, "lmdeploy", 72) == (4, 8, 16, 32, 64)
    gb200, b200 = CAT.gpu("nvidia-gb200"), CAT.gpu("nvidia-b200")
    deps = {ep for ep, dp in ep_layouts(m, gb200, CAT.framework("trtllm")) if dp > 1}
    assert {24, 48} <= deps
    assert not {ep for ep, dp in ep_layouts(m, b200, CAT.framework("trtllm")) if ep > 8}
    small = m.model_copy(update={"num_experts": 16})  # 16 experts: 24 > 16 is never tried
    assert dep_sizes(small, "trtllm", 72) == (4, 8, 16, 32, 64)


def test_recommend_rejects_ep_wider_than_the_experts_by_name():
    from planner.recommend.options import Option, _ep_problem

    m = CAT.model("deepseek-v3")
    g, fw, p = CAT.gpu("nvidia-gb200"), CAT.framework("trtllm"), CAT.precision("fp4")
    stage, why = _ep_problem(m, Option(g, fw, p, None, layout_of(1, 1, 512, 512)), None)
    assert stage == "ep_experts" and "exceeds the 256 routed experts" in why
    assert _ep_problem(m, Option(g, fw, p, None, layout_of(1, 1, 48, 48)), None) is None
