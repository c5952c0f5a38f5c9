"""Moving a fitted memory efficiency to a sibling GPU (planner.catalog.bandwidth, issue 32):
the per-kernel latency of a weight read stays in seconds, only the streaming part scales with
the target's bandwidth."""

from __future__ import annotations

import math

import pytest
from conftest import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog, resolve_params
from planner.catalog.bandwidth import (
    fit_stream,
    stream_eff,
    stream_fits,
    transfer_mem_eff,
    transfer_params,
)
from planner.catalog.profile import load_profile, nearest_sibling
from planner.engine.step import step_model
from planner.errors import PlannerError

CAT = load_catalog(DATA_DIR)
H100, H200 = "nvidia-h100-sxm", "nvidia-h200-sxm"


def test_fit_stream_recovers_latency_and_rate():
    # t = 5 us + S / 4 TB/s at 10, 100 and 1000 MB: 7.5, 30 and 255 us
    sizes = [10e6, 100e6, 1000e6]
    times = [7.5e-6, 30e-6, 255e-6]
    t0, bw = fit_stream(sizes, times)
    assert t0 == pytest.approx(5e-6, rel=1e-9)
    assert bw == pytest.approx(4e12, rel=1e-9)
    with pytest.raises(PlannerError, match="different sizes"):
        fit_stream([1e6, 1e6], [1e-6, 2e-6])


def test_h200_gemv_micro_benchmarks_give_a_latency_and_a_stream_rate():
    f = stream_fits(DATA_DIR / "benchmarks")[H200]
    assert f.n_shapes == 9 and "pytorch_ref.py" in f.source
    # t = t0 + S / stream with t0 > 0: every kernel's own rate is below the stream rate, so
    # stream > the fastest one measured (1,050.7 MB of the 128256 x 4096 lm head in 241.5 us
    # = 4.35 TB/s) and below the datasheet's 4.8 TB/s
    assert 4.35e12 < f.stream_bytes_s < 4.8e12
    # the smallest kernel, 33.6 MB (4096 x 4096) in 12.7 us, leaves t0 = 12.7 - 33.6 / 4.8e6 us
    # = 5.7 us at most (at the datasheet rate) and about 5 us at the fitted one
    assert 3e-6 < f.t0_s < 5.7e-6
    assert stream_eff(CAT.gpu(H200), DATA_DIR / "benchmarks") == pytest.approx(
        f.stream_bytes_s / 4.8e12
    )
    assert stream_eff(CAT.gpu(H100), DATA_DIR / "benchmarks") is None  # no H100 micro rows


def test_transfer_mem_eff_by_hand():
    # donor H200 (4800 GB/s) fitted at 0.843, streaming at 0.931 on both GPUs:
    # latency = 1/0.843 - 1/0.931 = 1.18624 - 1.07411 = 0.11213 (per byte, in 1/4800 GB/s)
    # 1/eff_H100 = 1.07411 + 3350/4800 x 0.11213 = 1.07411 + 0.07826 = 1.15237 -> 0.86778
    assert transfer_mem_eff(0.843, 4800, 3350, 0.931, 0.931) == pytest.approx(0.86778, abs=2e-5)
    # the other way (H100 donor at 0.843 -> H200): 1.07411 + 4800/3350 x 0.11213 = 1.23477
    assert transfer_mem_eff(0.843, 3350, 4800, 0.931, 0.931) == pytest.approx(0.80987, abs=2e-5)
    # equal bandwidths and streaming rates: unchanged
    assert transfer_mem_eff(0.843, 4800, 4800, 0.931, 0.931) == pytest.approx(0.843)
    # above the streaming rate all of it streams: scaled by the streaming rates, 0.95 x 0.9 / 0.93
    assert transfer_mem_eff(0.95, 4800, 3350, 0.93, 0.90) == pytest.approx(0.95 * 0.90 / 0.93)
    with pytest.raises(PlannerError, match="eff"):
        transfer_mem_eff(0.0, 4800, 3350, 0.9, 0.9)


@settings(max_examples=200, deadline=None)
@given(
    eff=st.floats(0.2, 1.0),
    stream=st.floats(0.5, 1.0),
    donor=st.floats(500, 10000),
    lo=st.floats(500, 10000),
    more=st.floats(1.0, 3.0),
)
def test_more_bandwidth_never_slows_a_weight_read(eff, stream, donor, lo, more):
    """Time per byte on the target, 1 / (eff_target x bandwidth), never grows with its bandwidth."""
    hi = lo * more

    def t(bw):
        return 1.0 / (transfer_mem_eff(eff, donor, bw, stream, stream) * bw)

    assert t(hi) <= t(lo) * (1 + 1e-12)
    assert 0 < transfer_mem_eff(eff, donor, lo, stream, stream) <= 1


def test_transferred_decode_never_slows_with_more_bandwidth():
    """The whole transferred decode step (Llama-3.1-8B, batch 16 at 1,000 tokens of context)
    on an H100 whose datasheet bandwidth runs from 2 to 8 TB/s."""
    prof = load_profile()
    donor = nearest_sibling(prof, CAT, H100, "pytorch", "bf16")
    assert donor.gpu == H200
    h200, h100 = CAT.gpu(H200), CAT.gpu(H100)
    times = []
    for bw in (2000, 3000, 3350, 4000, 4800, 6000, 8000):
        g = h100.model_copy(update={"mem_bw_gbs": bw})
        params = transfer_params(donor.params, h200, g, DATA_DIR / "benchmarks")
        sm = step_model("llama-3.1-8b", g, "bf16", params=params, catalog=CAT)
        times.append(sm.step_time(16, 16, 16, 16 * 1000, 16 * 1000))
    assert all(b <= a for a, b in zip(times, times[1:], strict=False)), times


def test_resolve_params_moves_the_h200_fit_to_the_h100_with_its_latency():
    prof = load_profile()
    donor = nearest_sibling(prof, CAT, H100, "pytorch", "bf16")
    assert donor.gpu == H200
    p, prov = resolve_params(H100, "pytorch", "bf16", catalog=CAT, profile=prof)
    assert prov.startswith("transferred from pytorch/nvidia-h200-sxm/bf16, nearest hopper")
    s = stream_eff(CAT.gpu(H200), DATA_DIR / "benchmarks")
    want = transfer_mem_eff(donor.params.mem_eff, 4800, 3350, s, s)
    assert p.mem_eff == pytest.approx(want, abs=1e-5)
    # the H100 reads weights faster than the datasheet fraction of the H200's fit, slower
    # than the streaming rate
    assert donor.params.mem_eff < p.mem_eff < s
    # the other terms transfer unchanged; the H200's own fit is untouched
    assert p.layer_overhead_s == donor.params.layer_overhead_s
    assert p.sched_overhead_s == donor.params.sched_overhead_s
    own, prov200 = resolve_params(H200, "pytorch", "bf16", catalog=CAT, profile=prof)
    assert prov200.startswith("fit (") and own.mem_eff == donor.params.mem_eff
    assert math.isfinite(p.kv_mem_eff) and p.kv_mem_eff >= donor.params.kv_mem_eff
