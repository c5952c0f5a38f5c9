"""Tensor-parallel all-reduce term of a step (issue 32, GPUStack vLLM rows): its size by
hand, and that a faster link or a higher all-reduce efficiency never slows a TP step."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.engine.step import step_model

CAT = load_catalog()


def test_tp4_prefill_all_reduce_by_hand():
    """Qwen3-235B-A22B FP8 TP4 on H100 (GPUStack's layout), one 16,384-token chunk.

    Hand derivation, from the catalog's model and GPU:
    - two all-reduces per layer of T x hidden x 2 bytes: 94 layers x 2 x 16,384 x 4,096 x 2
      = 25.23 GB per step;
    - ring factor 2 (tp - 1) / tp = 1.5, link 450 GB/s per direction (NVLink 4), comm_eff
      0.68 (NCCL on 2 x H200, the prior): 1.5 x 25.23e9 / (450e9 x 0.68) = 0.1237 s;
    - plus 188 collectives x 20 us = 3.76 ms: 0.1274 s.
    With the held-out fit's 0.065 the same term is 1.5 x 25.23e9 / (450e9 x 0.065) +
    3.76 ms = 1.298 s: the 1,297.7 ms of the per-row table (scripts/gpustack_rows.py).
    """
    m = CAT.model("qwen3-235b-a22b")
    assert (m.num_hidden_layers, m.hidden_size) == (94, 4096)
    assert CAT.gpu("nvidia-h100-sxm").interconnect_gbs_unidir == 450
    sm = step_model("qwen3-235b-a22b", "nvidia-h100-sxm", "fp8", tp=4, params=PRIOR)
    T = 16384
    b = sm.step(T, 8, 8, T, 8 * 2048 * 2049 / 2)
    bytes_ = 94 * 2 * T * 4096 * 2
    assert b.comm_bytes == pytest.approx(bytes_)
    assert b.t_comm_s == pytest.approx(1.5 * bytes_ / (450e9 * 0.68) + 188 * 20e-6, rel=1e-9)
    assert b.t_comm_s == pytest.approx(0.1274, rel=1e-3)
    low = step_model("qwen3-235b-a22b", "nvidia-h100-sxm", "fp8", tp=4,
                     params=PRIOR.with_(comm_eff=0.065)).step(T, 8, 8, T, 8 * 2048 * 2049 / 2)  # fmt: skip
    assert low.t_comm_s == pytest.approx(1.298, rel=1e-3)


_CASES = [
    ("qwen3-235b-a22b", "nvidia-h100-sxm", "fp8", 4),
    ("qwen3-235b-a22b", "nvidia-a100-80gb-sxm", "bf16", 8),
    ("qwen3-32b", "nvidia-h100-sxm", "bf16", 2),
    ("deepseek-v3", "nvidia-h200-sxm", "fp8", 8),
]


@settings(max_examples=60, deadline=None)
@given(
    case=st.sampled_from(_CASES),
    T=st.integers(1, 16384),
    seqs=st.integers(1, 1024),
    ctx=st.integers(1, 32768),
    lo=st.floats(10.0, 900.0),
    factor=st.floats(1.0, 8.0),
    eff=st.floats(0.05, 1.0),
    more=st.floats(1.0, 4.0),
)
def test_more_link_bandwidth_or_comm_eff_never_slows_a_tp_step(
    case, T, seqs, ctx, lo, factor, eff, more
):
    model, gpu, prec, tp = case
    seqs = min(seqs, T)
    sm = step_model(model, gpu, prec, tp=tp, params=PRIOR.with_(comm_eff=eff))
    args = (T, seqs, seqs, seqs * ctx, seqs * ctx)
    slow = replace(sm, link_bytes_s=lo * 1e9).step(*args).time_s
    fast = replace(sm, link_bytes_s=lo * factor * 1e9).step(*args).time_s
    assert fast <= slow
    better = step_model(model, gpu, prec, tp=tp,
                        params=PRIOR.with_(comm_eff=min(1.0, eff * more)))  # fmt: skip
    assert better.step(*args).time_s <= sm.step(*args).time_s
