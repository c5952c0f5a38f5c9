"""The serving latency model (issue 32): chunked prefill of a lone request, the prefill
scale of an engine and model family, its leave-one-source-out fit, and properties of TTFT
in the simulator (bigger chunks, more closed-loop clients)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.calibration.latency_fit import fit_prefill_scales, ratio_band, scale_for
from planner.catalog import PRIOR, load_catalog
from planner.catalog.latency import LatencyTerms, PrefillScale, load_latency
from planner.errors import PlannerError
from planner.serving import build_replica, run
from planner.workload.workload import make_requests

H200 = "nvidia-h200-sxm"
M8B = "llama-3.1-8b"
HOST = 2e-3  # host time per iteration [s]
HOST_SEQ = 1e-4  # host time per sequence per iteration [s]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _replica(catalog, chunk, scale=1.0, **kw):
    p = PRIOR.with_(sched_overhead_s=HOST, sched_seq_overhead_s=HOST_SEQ)
    # vLLM 0.13: the GPU waits for the host (async scheduling is on from 0.14), so every
    # iteration adds the host time (changes/schedbound.md)
    return build_replica(
        M8B, H200, "bf16", "vllm", params=p, catalog=catalog,
        max_num_batched_tokens=chunk, prefill_scale=scale, release="0.13.0", **kw,
    )  # fmt: skip


def _lone_ttft(rep, isl, osl=4):
    res = run(rep, make_requests(np.zeros(1), np.array([isl]), np.array([osl])))
    return float(res.ttft_s[0])


def test_lone_request_ttft_hand_derived(catalog):
    """A lone prompt of 5,000 tokens under a budget of 2,048 runs in ceil(5000 / 2048) = 3
    iterations, chunks of 2,048, 2,048 and 904 tokens; chunk i of c tokens after p cached
    ones reads p + c tokens of KV and computes c p + c (c + 1) / 2 attention pairs, c p of
    them against the cached prefix. Each iteration adds the host time 2 ms + 0.1 ms x 1
    sequence. TTFT = sum of the three step times + 3 x 2.1 ms."""
    rep = _replica(catalog, 2048)
    sm = rep.sm
    t = 0.0
    for p, c in ((0, 2048), (2048, 2048), (4096, 904)):
        t += sm.step_time(c, 1, 1 if p + c == 5000 else 0, p + c, c * p + c * (c + 1) / 2,
                          pairs_prefix=c * p)  # fmt: skip
        t += HOST + HOST_SEQ * 1
    assert _lone_ttft(rep, 5000) == pytest.approx(t, rel=1e-9)


def test_prefill_scale_multiplies_the_prompt_time_only(catalog):
    """With no decoder running, the whole step is the prompt's share: at scale 2 a lone
    request's TTFT is 2 x (TTFT at scale 1 - host time) + host time; the host time is not
    scaled (3 iterations x 2.1 ms). Its decode steps (TPOT) do not change."""
    host = 3 * (HOST + HOST_SEQ)
    r1, r2 = _replica(catalog, 2048), _replica(catalog, 2048, scale=2.0)
    t1, t2 = _lone_ttft(r1, 5000), _lone_ttft(r2, 5000)
    assert t2 - host == pytest.approx(2 * (t1 - host), rel=1e-9)
    reqs = make_requests(np.zeros(1), np.array([5000]), np.array([64]))
    tpot1 = float(run(r1, reqs).tpot_s[0])
    tpot2 = float(run(r2, reqs).tpot_s[0])
    assert tpot2 == pytest.approx(tpot1, rel=1e-12)


def test_prefill_scale_slows_decoders_sharing_an_iteration(catalog):
    """A decoder in an iteration with a prompt chunk waits for it: at scale 3 the second
    request's chunks make the first one's TPOT longer than at scale 1 (mixed batches)."""
    reqs = make_requests(np.array([0.0, 0.05]), np.array([512, 8000]), np.array([200, 4]))
    a = run(_replica(catalog, 2048), reqs).tpot_s[0]
    b = run(_replica(catalog, 2048, scale=3.0), reqs).tpot_s[0]
    assert b > a


def test_prefill_scale_must_be_positive(catalog):
    with pytest.raises(PlannerError, match="prefill_scale"):
        _replica(catalog, 2048, scale=0.0)


@pytest.mark.parametrize("isl", [700, 6000, 20000])
def test_bigger_chunk_never_raises_a_lone_ttft(catalog, isl):
    """Fewer, larger chunks read the weights fewer times and compute the same attention
    pairs: a lone request's TTFT never rises with the budget."""
    t = [_lone_ttft(_replica(catalog, c), isl) for c in (512, 1024, 2048, 4096, 8192, 16384)]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(t, t[1:], strict=False)), t


def test_more_clients_never_lower_ttft_p50(catalog):
    """Closed loop at fixed lengths (2,000 in, 200 out; 10 requests per client): every
    client's prompt waits behind the others' chunks, so the median TTFT does not fall as
    the concurrency rises."""
    rep = _replica(catalog, 2048)
    p50 = []
    for c in (1, 2, 4, 8, 16, 32):
        n = 10 * c
        res = run(rep, make_requests(np.zeros(n), np.full(n, 2000), np.full(n, 200)), c)
        p50.append(float(np.median(res.ttft_s)))
    assert all(b >= a * (1 - 1e-9) for a, b in zip(p50, p50[1:], strict=False)), p50


def _rec(fw, fam, src, m, p, as_of="2026-01-01"):
    return {"framework": fw, "family": fam, "source": src, "measured": m, "predicted": p,
            "as_of": as_of}  # fmt: skip


def test_fit_prefill_scales_hand_derived():
    """sglang/moe: 12 rows from 2 sources, measured / predicted 2 (7 rows) and 4 (5 rows):
    the median log ratio is log 2, so the scale is 2. vllm/moe: 3 rows (under 10): no own
    scale; moe over all engines: 15 rows, ratios 2 (7), 4 (5), 1 (3): sorted, the 8th of
    15 is 2 -> scale 2. Left out source B (5 ratios of 4 and the vllm rows of A remain):
    sglang/moe has 7 rows < 10; moe over engines: 7 x 2 + 3 x 1 = 10 rows of one source
    (< 2 sources): nothing is fitted."""
    recs = [_rec("sglang", "moe", "A", 200.0, 100.0)] * 7
    recs += [_rec("sglang", "moe", "B", 400.0, 100.0)] * 5
    recs += [_rec("vllm", "moe", "A", 100.0, 100.0)] * 3
    sc = {(p.framework, p.family): p for p in fit_prefill_scales(recs)}
    assert sc[("sglang", "moe")].scale == pytest.approx(2.0)
    assert (sc[("sglang", "moe")].n_rows, sc[("sglang", "moe")].n_sources) == (12, 2)
    assert ("vllm", "moe") not in sc
    assert sc[(None, "moe")].scale == pytest.approx(2.0)
    assert scale_for(sc.values(), "vllm", "moe") == (pytest.approx(2.0), "all engines/moe")
    assert scale_for(sc.values(), "trtllm", "dense") == (1.0, "none")
    assert fit_prefill_scales(recs, exclude_source="B") == ()


def test_fit_prefill_scales_clipped_and_skips_bad_rows():
    """Ratios of 100 are clipped to the upper end of the range (8); zero or NaN rows are
    not counted."""
    recs = [_rec("vllm", "dense", s, 100.0, 1.0) for s in "AB" for _ in range(6)]
    recs += [_rec("vllm", "dense", "A", 0.0, 1.0), _rec("vllm", "dense", "A", math.nan, 1.0)]
    (p, q) = fit_prefill_scales(recs)
    assert p.scale == 8.0 and p.n_rows == 12


def test_fit_prefill_scales_old_runs_and_disagreeing_sources():
    """Rows dated before CURRENT_SINCE (2025-07-01) or undated do not count: 12 rows of
    2024 at ratio 5 and 12 undated ones add nothing to 12 current rows at ratio 1.5 (6 per
    source), so the scale is 1.5. Two sources of 6 rows each at ratios 2 and 0.5 disagree
    on the direction: nothing is fitted (with since=None, the old rows are counted: the
    24 rows at 5 outvote the 12 at 1.5)."""
    cur = [_rec("vllm", "dense", s, 150.0, 100.0) for s in "AB" for _ in range(6)]
    old = [_rec("vllm", "dense", "C", 500.0, 100.0, "2024-06-01") for _ in range(12)]
    old += [_rec("vllm", "dense", "D", 500.0, 100.0, "") for _ in range(12)]
    (p, _) = fit_prefill_scales(cur + old)
    assert p.scale == pytest.approx(1.5) and p.n_rows == 12
    assert fit_prefill_scales(cur + old, since=None)[0].scale == pytest.approx(5.0)
    split = [_rec("vllm", "dense", "A", 200.0, 100.0) for _ in range(6)]
    split += [_rec("vllm", "dense", "B", 50.0, 100.0) for _ in range(6)]
    assert fit_prefill_scales(split) == ()


def test_ratio_band_quantiles():
    """p10 / p90 of 1..11 (numpy's linear interpolation): 1 + 0.1 x 10 = 2 and 10."""
    assert ratio_band(range(1, 12)) == pytest.approx((2.0, 10.0))
    assert ratio_band([1, 2, 3]) is None


def test_latency_terms_lookup_falls_back_to_the_family():
    t = LatencyTerms(
        source="test",
        as_of="2026-12-06",
        method="test",
        prefill_scales=(
            PrefillScale(framework="sglang", family="moe", scale=1.5, n_rows=20, n_sources=2),
            PrefillScale(family="moe", scale=1.2, n_rows=40, n_sources=3),
        ),
    )
    assert t.prefill_scale("sglang", "moe") == (1.5, "sglang/moe")
    assert t.prefill_scale("vllm", "moe") == (1.2, "all engines/moe")
    assert t.prefill_scale("vllm", "dense") == (1.0, "none")


def test_bundled_latency_file_has_provenance():
    t = load_latency()
    if t is None:
        pytest.skip("no data/calibration/latency.yaml")
    assert t.source and t.as_of
    for p in t.prefill_scales:
        assert 0.25 <= p.scale <= 8.0 and p.n_sources >= 2


def test_continuous_decode_steps_from_notes():
    from planner.benchmarks.serving_rows import continuous_decode_steps

    assert continuous_decode_steps("server: sglang --num-continuous-decode-steps 4 --x") == 4
    assert continuous_decode_steps("num_continuous_decode_steps=8; tp=8") == 8
    assert continuous_decode_steps("no such flag") == 1
