"""Moving a fitted memory efficiency to a sibling GPU (planner.catalog.bandwidth, issue 32):
the per-kernel latency of a weight read stays in seconds, only the streaming part scales with
the target's bandwidth."""

from __future__ import annotations

import pytest
from conftest import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog, resolve_params
from planner.catalog.bandwidth import (
    fit_stream,
    kv_stream_eff,
    kv_stream_fits,
    step_weight_ratio,
    stream_eff,
    stream_fits,
    transfer_mem_eff,
    transfer_params,
)
from planner.catalog.efficiency import EfficiencyParams
from planner.catalog.profile import load_profile
from planner.catalog.siblings import nearest_sibling
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


@pytest.mark.parametrize(
    "gpu, datasheet, lm_head_rate, smallest_s, n_files",
    [
        # the 128256 x 4096 lm head (1,050.7 MB) in 241.5 us = 4.35 TB/s; 4096 x 4096 (33.6 MB)
        # in 12.7 us
        (H200, 4.8e12, 4.35e12, 12.7e-6, "pytorch_h200_micro.csv"),
        # the same shapes on the H100: 1,050.7 MB in 352 us = 2.98 TB/s; 33.6 MB in 15.3 us
        (H100, 3.35e12, 2.98e12, 15.3e-6, "pytorch_h100_micro.csv"),
    ],
)
def test_gemv_micro_benchmarks_give_a_latency_and_a_stream_rate(
    gpu, datasheet, lm_head_rate, smallest_s, n_files
):
    f = stream_fits(DATA_DIR / "benchmarks")[gpu]
    assert f.n_shapes == 9 and f.source.startswith(n_files) and "pytorch_ref.py" in f.source
    # t = t0 + S / stream with t0 > 0: the longest read (the lm head) comes closest to the
    # stream rate from below, and the stream rate stays under the datasheet's
    assert lm_head_rate < f.stream_bytes_s < datasheet
    # the smallest kernel leaves t0 <= its time - 33.6 MB / datasheet rate
    assert 1e-6 < f.t0_s < smallest_s - 33.6e6 / datasheet
    assert stream_eff(CAT.gpu(gpu), DATA_DIR / "benchmarks") == pytest.approx(
        f.stream_bytes_s / datasheet
    )


def test_the_h100_kernels_have_less_latency_and_a_lower_stream_fraction():
    """What moves the transfer: per kernel the H100 spends about 3.1 us, the H200 5.2 us; the
    H100 streams 0.905 of its datasheet, the H200 0.931 (fits of the two micro files)."""
    fits = stream_fits(DATA_DIR / "benchmarks")
    assert fits[H100].t0_s == pytest.approx(3.06e-6, abs=0.1e-6)
    assert fits[H200].t0_s == pytest.approx(5.18e-6, abs=0.1e-6)
    assert fits[H100].stream_bytes_s / 3.35e12 == pytest.approx(0.905, abs=0.003)
    assert fits[H200].stream_bytes_s / 4.8e12 == pytest.approx(0.931, abs=0.003)


def test_transfer_mem_eff_by_hand():
    # donor H200 (4800 GB/s) fitted at 0.843, streaming at 0.931 on both GPUs:
    # latency = 1/0.843 - 1/0.931 = 1.18624 - 1.07411 = 0.11213 (per byte, in 1/4800 GB/s)
    # 1/eff_H100 = 1.07411 + 3350/4800 x 0.11213 = 1.07411 + 0.07826 = 1.15237 -> 0.86778
    assert transfer_mem_eff(0.843, 4800, 3350, 0.931, 0.931) == pytest.approx(0.86778, abs=2e-5)
    # the other way (H100 donor at 0.843 -> H200): 1.07411 + 4800/3350 x 0.11213 = 1.23477
    assert transfer_mem_eff(0.843, 3350, 4800, 0.931, 0.931) == pytest.approx(0.80987, abs=2e-5)
    # equal bandwidths and streaming rates: unchanged
    assert transfer_mem_eff(0.843, 4800, 4800, 0.931, 0.931) == pytest.approx(0.843)
    # with the H100's own micro fit (stream 0.905, t0 3.06 / 5.18 us = 0.5907 of the H200's):
    # streaming = 1.07411 x 0.931 / 0.905 = 1.10497; latency 0.5907 x 0.69792 x 0.11213 = 0.04623
    # 1/eff_H100 = 1.15120 -> 0.86866
    got = transfer_mem_eff(0.843, 4800, 3350, 0.931, 0.905, 3.06 / 5.18)
    assert got == pytest.approx(0.86866, abs=3e-5)
    # above the streaming rate all of it streams: scaled by the streaming rates, 0.95 x 0.9 / 0.93
    assert transfer_mem_eff(0.95, 4800, 3350, 0.93, 0.90) == pytest.approx(0.95 * 0.90 / 0.93)
    with pytest.raises(PlannerError, match="eff"):
        transfer_mem_eff(0.0, 4800, 3350, 0.9, 0.9)


@settings(max_examples=200, deadline=None)
@given(
    eff=st.floats(0.2, 1.0),
    sd=st.floats(0.5, 1.0),
    stt=st.floats(0.5, 1.0),
    lat=st.floats(0.0, 3.0),
    donor=st.floats(500, 10000),
    lo=st.floats(500, 10000),
    more=st.floats(1.0, 3.0),
)
def test_more_bandwidth_never_slows_a_weight_read(eff, sd, stt, lat, donor, lo, more):
    """Time per byte on the target, 1 / (eff_target x bandwidth), never grows with its bandwidth."""
    hi = lo * more

    def t(bw):
        return 1.0 / (transfer_mem_eff(eff, donor, bw, sd, stt, lat) * bw)

    assert t(hi) <= t(lo) * (1 + 1e-12)
    assert 0 < transfer_mem_eff(eff, donor, lo, sd, stt, lat) <= 1


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
    # from 3,350 GB/s on, the record keeps the H100's id and so its measured streaming rates
    # (bytes/s): the step time stays flat, up to the 5-decimal rounding of the two transferred
    # efficiencies (a relative 1e-5 each)
    assert all(b <= a * (1 + 2e-5) for a, b in zip(times, times[1:], strict=False)), times
    assert times[0] > times[1] > times[2]


def test_resolve_params_moves_the_h200_fit_to_the_h100_keeping_its_latency():
    prof = load_profile()
    donor = nearest_sibling(prof, CAT, H100, "pytorch", "bf16")
    assert donor.gpu == H200
    p, prov = resolve_params(H100, "pytorch", "bf16", catalog=CAT, profile=prof)
    assert prov.startswith("transferred from pytorch/nvidia-h200-sxm/bf16, nearest hopper")
    d = DATA_DIR / "benchmarks"
    s200, s100 = stream_eff(CAT.gpu(H200), d), stream_eff(CAT.gpu(H100), d)
    # both GPUs ran the reference engine's batch-1 decode steps: the weight reads move by
    # their measured rate ratio (test_step_weight_ratio_from_the_two_step_sweeps)
    sw = step_weight_ratio(donor.params, CAT.gpu(H200), CAT.gpu(H100), d)
    want = donor.params.mem_eff * sw.ratio * 4800 / 3350
    assert p.mem_eff == pytest.approx(want, abs=1e-5)
    # the H100 reads weights faster than the datasheet fraction of the H200's fit and faster
    # than the GEMV rule said (latency kept in seconds, H200's t0 on the H100)
    gemv = transfer_mem_eff(donor.params.mem_eff, 4800, 3350, s200, s100, 1.0)
    assert donor.params.mem_eff < gemv < p.mem_eff < 1
    # the other terms transfer unchanged; the H200's own fit is untouched
    assert p.layer_overhead_s == donor.params.layer_overhead_s
    assert p.sched_overhead_s == donor.params.sched_overhead_s
    own, prov200 = resolve_params(H200, "pytorch", "bf16", catalog=CAT, profile=prof)
    assert prov200.startswith("fit (") and own.mem_eff == donor.params.mem_eff
    # KV reads by the same rule with the reference engine's marginal KV read rates
    k200, k100 = kv_stream_eff(CAT.gpu(H200), d), kv_stream_eff(CAT.gpu(H100), d)
    want = transfer_mem_eff(donor.params.kv_mem_eff, 4800, 3350, k200, k100, 1.0)
    assert p.kv_mem_eff == pytest.approx(want, abs=1e-5)
    assert donor.params.kv_mem_eff < p.kv_mem_eff < k100


# ---- KV reads (the paged-attention kernel): the same rule, their own streaming rate ----------


def _step_rows(path, gpu, series):
    """Decode-step rows in the reference engine's schema: ``series`` = {(model, batch):
    [(kv_gb, time_s), ...]}."""
    import csv

    cols = ["id", "source", "hardware", "tp", "model", "precision", "kv_precision", "batch",
            "context_len", "metric", "value", "notes"]  # fmt: skip
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        for (model, batch), pts in series.items():
            for i, (kv_gb, t) in enumerate(pts):
                w.writerow(dict(id=f"{model}-{batch}-{i}", hardware=gpu, tp=1, model=model,
                                source="planner own measurement (bench/ref_engine.py)",
                                precision="bf16", kv_precision="bf16", batch=batch,
                                context_len=256 * (i + 1), metric="decode_step_s", value=t,
                                notes=f"bytes moved 9.9 GB (weights 9.0 + KV read {kv_gb})"))  # fmt: skip


def test_kv_stream_fit_is_the_slope_over_the_context(tmp_path):
    # 8B-like series at batch 64: t = 6 ms + KV / 4 TB/s at 1, 2 and 4 GB: 6.25, 6.5, 7.0 ms;
    # a batch-128 series at 4.5 TB/s: 7 ms + 2.25, 4.5, 9 GB / 4.5 TB/s = 7.5, 8.0, 9.0 ms;
    # batch 1 (below KV_MIN_BATCH) and a two-context series are left out: median of 4 and 4.5
    _step_rows(tmp_path / "reference_x.csv", "gpu-a", {
        ("m", 64): [(1, 6.25e-3), (2, 6.5e-3), (4, 7.0e-3)],
        ("m", 128): [(2.25, 7.5e-3), (4.5, 8.0e-3), (9, 9.0e-3)],
        ("m", 1): [(0.1, 5e-3), (0.2, 9e-3), (0.4, 20e-3)],
        ("m", 256): [(1, 1e-3), (2, 9e-3)],
    })  # fmt: skip
    f = kv_stream_fits(tmp_path)["gpu-a"]
    assert f.n_series == 2 and f.source == "reference_x.csv"
    assert f.stream_bytes_s == pytest.approx(4.25e12, rel=1e-9)


def test_h200_kv_reads_stream_near_its_datasheet():
    """The reference engine's KV reads on the H200 (``reference_h200.csv``): series slopes of
    4.30-4.65 TB/s at batches of 16-512 but two (3.39 and 5.74), median 4.45 (Llama-3.1-8B
    batch 128: 4.45), under the 4.8 TB/s of the datasheet and above the 4.27 TB/s of a copy
    (which also writes)."""
    f = kv_stream_fits(DATA_DIR / "benchmarks")[H200]
    assert f.n_series >= 10
    assert 4.27e12 < f.stream_bytes_s < 4.8e12
    assert kv_stream_eff(CAT.gpu(H200), DATA_DIR / "benchmarks") == pytest.approx(
        f.stream_bytes_s / 4.8e12
    )


def test_h100_kv_reads_stream_at_the_h200s_fraction():
    """The same decode steps on one H100 (``reference_h100_steps_micro.csv``, device run of
    2026-12-07, never fitted): series slopes of 3.04-3.17 TB/s at batches 16-512 but Llama-3.2-1B
    at 16 (2.75) (Llama-3.1-8B batch 64: 3.12 TB/s, Llama-3.2-1B batch 256: 3.17), median 3.13,
    0.69-0.71x the H200's at the same
    (model, batch) but Llama-3.2-1B at 16 (0.81x): the datasheet ratio, 3350 / 4800 = 0.698.
    As fractions of the two datasheets, 0.935 (H100) and 0.927 (H200)."""
    d = DATA_DIR / "benchmarks"
    fits = kv_stream_fits(d)
    assert fits[H100].n_series == 10 and fits[H100].source == "reference_h100_steps_micro.csv"
    assert 3.04e12 < fits[H100].stream_bytes_s < 3.17e12  # the median lies in the range
    assert kv_stream_eff(CAT.gpu(H100), d) == pytest.approx(0.935, abs=0.002)
    assert kv_stream_eff(CAT.gpu(H200), d) == pytest.approx(0.927, abs=0.002)


def test_kv_transfer_h200_to_h100_by_hand():
    # the H200's pytorch bf16 kv_mem_eff 0.89337, KV streaming at 0.92749 of 4.8 TB/s:
    # latency = 1/0.89337 - 1/0.92749 = 1.119357 - 1.078178 = 0.041179 (per byte, 1/4800 GB/s);
    # the H100 streams KV at 0.93544 of 3.35 TB/s:
    # 1/eff = 1/0.93544 + 3350/4800 x 0.041179 = 1.069016 + 0.028740 = 1.097756 -> 0.91095
    assert transfer_mem_eff(0.89337, 4800, 3350, 0.92749, 0.93544) == pytest.approx(
        0.91095, abs=2e-5
    )


@settings(max_examples=200, deadline=None)
@given(
    eff=st.floats(0.3, 1.0),
    sd=st.floats(0.5, 1.0),
    lo=st.floats(0.3, 1.0),
    more=st.floats(1.0, 2.0),
)
def test_more_measured_kv_bandwidth_on_the_target_never_slows_decode(eff, sd, lo, more):
    """A larger measured KV streaming rate on the target (3.35 TB/s datasheet) gives a KV
    efficiency no lower, and a Llama-3.1-8B decode step (batch 64 at 2,000 tokens) no slower."""
    hi = min(1.0, lo * more)
    e_lo = transfer_mem_eff(eff, 4800, 3350, sd, lo)
    e_hi = transfer_mem_eff(eff, 4800, 3350, sd, hi)
    assert e_hi >= e_lo * (1 - 1e-12)
    p, _ = resolve_params(H100, "pytorch", "bf16", catalog=CAT)
    g = CAT.gpu(H100)
    t = [
        step_model("llama-3.1-8b", g, "bf16", params=p.with_(kv_mem_eff=e), catalog=CAT).step_time(
            64, 64, 64, 64 * 2000, 64 * 2000
        )
        for e in (e_lo, e_hi)
    ]
    assert t[1] <= t[0] * (1 + 1e-12)


# ---- weight reads from the same engine's decode steps on both GPUs --------------------------

_STEP_HEAD = (
    "source,metric,hardware,framework,model,precision,kv_precision,tp,batch,context_len,value,"
    "notes\n"
)


def _step_row(gpu, model, ctx, t, w_gb, kv_gb, batch=1):
    notes = f"bytes moved x GB (weights {w_gb} + KV read {kv_gb}); random weights"
    return (
        f"planner own measurement (bench/ref_engine.py),decode_step_s,{gpu},pytorch,{model},"
        "bf16,bf16,"
        f"1,{batch},{ctx},{t},{notes}\n"
    )


def test_step_weight_ratio_by_hand(tmp_path):
    # Llama-3.1-8B (32 layers); fixed terms 10 us + 32 x 30 us + 2 us = 0.972 ms per step.
    # KV series at batch 16 give each GPU's marginal KV rate: 1 GB more KV, 0.25 ms more on
    # "a" (4 TB/s), 0.5 ms more on "b" (2 TB/s).
    rows = [
        _step_row(g, "llama-3.1-8b", ctx, t, 1.0, kv, batch=16)
        for g, base, per in (("gpu-a", 2e-3, 0.25e-3), ("gpu-b", 3e-3, 0.5e-3))
        for ctx, kv, t in ((256, 1.0, base + per), (1024, 2.0, base + 2 * per),
                           (2048, 3.0, base + 3 * per))
    ]  # fmt: skip
    # batch 1, context 1024: 15 GB of weights and 0.1 GB of KV
    #   a: 4.722 ms - 0.972 - 0.1 GB / 4 TB/s (0.025) = 3.725 ms -> 15 / 3.725 = 4.0268 TB/s
    #   b: 6.472 ms - 0.972 - 0.1 GB / 2 TB/s (0.050) = 5.450 ms -> 15 / 5.450 = 2.7523 TB/s
    # ratio b / a = 3.725 / 5.450 = 0.68349; context 8192 is too long (left out)
    rows += [
        _step_row("gpu-a", "llama-3.1-8b", 1024, 4.722e-3, 15.0, 0.1),
        _step_row("gpu-b", "llama-3.1-8b", 1024, 6.472e-3, 15.0, 0.1),
        _step_row("gpu-a", "llama-3.1-8b", 8192, 5e-3, 15.0, 1.0),
        _step_row("gpu-b", "llama-3.1-8b", 8192, 9e-3, 15.0, 1.0),
    ]
    (tmp_path / "reference_x.csv").write_text(_STEP_HEAD + "".join(rows), encoding="utf-8")
    a = CAT.gpu(H200).model_copy(update={"id": "gpu-a"})
    b = CAT.gpu(H100).model_copy(update={"id": "gpu-b"})
    params = EfficiencyParams().with_(
        step_overhead_s=10e-6, layer_overhead_s=30e-6, seq_overhead_s=2e-6
    )
    sw = step_weight_ratio(params, a, b, tmp_path)
    assert sw.ratio == pytest.approx(3.725 / 5.450, rel=1e-9)
    assert (sw.n_pairs, sw.low, sw.high) == (1, sw.ratio, sw.ratio)
    assert step_weight_ratio(params, b, a, tmp_path).ratio == pytest.approx(5.450 / 3.725)
    # a GPU without such steps, or another engine or precision: no ratio (the GEMV rule)
    assert step_weight_ratio(params, a, CAT.gpu(H100), tmp_path) is None
    assert step_weight_ratio(params, a, b, tmp_path, "vllm") is None
    assert step_weight_ratio(params, a, b, tmp_path, "pytorch", "fp8") is None


def test_step_weight_ratio_from_the_two_step_sweeps():
    d = DATA_DIR / "benchmarks"
    donor = nearest_sibling(load_profile(), CAT, H100, "pytorch", "bf16")
    sw = step_weight_ratio(donor.params, CAT.gpu(H200), CAT.gpu(H100), d)
    # 3 models x 4 contexts (256-4096) at batch 1 on both; e.g. Llama-3.1-8B at 256 tokens:
    # H200 4.691 ms, H100 5.999 ms, less 1.079 ms of fixed terms and 0.034 GB of KV (0.008 /
    # 0.011 ms): 15.010 GB in 3.605 vs 4.909 ms -> 0.734 (the datasheets say 0.698)
    assert sw.n_pairs == 12
    assert 0.71 < sw.low <= sw.ratio <= sw.high < 0.79
    assert sw.ratio > 3350 / 4800
    assert sw.source == "reference_h100_steps_micro.csv, reference_h200.csv"


def test_step_weight_rule_off_keeps_the_gemv_rule(monkeypatch):
    import planner.catalog.bandwidth as bw

    d = DATA_DIR / "benchmarks"
    donor = nearest_sibling(load_profile(), CAT, H100, "pytorch", "bf16")
    s200, s100 = stream_eff(CAT.gpu(H200), d), stream_eff(CAT.gpu(H100), d)
    gemv = transfer_mem_eff(donor.params.mem_eff, 4800, 3350, s200, s100, 1.0)
    on = transfer_params(donor.params, CAT.gpu(H200), CAT.gpu(H100), d, node=donor)
    assert on.mem_eff > gemv + 0.03  # 0.891 against 0.847
    # no node (the engine and precision unknown) or the switch off: the GEMV rule
    p = transfer_params(donor.params, CAT.gpu(H200), CAT.gpu(H100), d)
    assert p.mem_eff == pytest.approx(gemv, abs=1e-5)
    monkeypatch.setattr(bw, "STEP_WEIGHT_RULE", False)
    p = transfer_params(donor.params, CAT.gpu(H200), CAT.gpu(H100), d, node=donor)
    assert p.mem_eff == pytest.approx(gemv, abs=1e-5)
    assert p.kv_mem_eff == on.kv_mem_eff
