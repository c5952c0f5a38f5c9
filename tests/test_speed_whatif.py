"""Issue 18, a What-if change <= 200 ms: the cheaper summary and the memo of request draws
give the numbers the old code gave, bit for bit (checked against numpy's own functions and
against a fresh draw)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.serving import build_replica, simulate
from planner.serving.result import _nanmean
from planner.workload import SLO, preset
from planner.workload import workload as wmod
from planner.workload.slo import sorted_percentiles

# latencies: non-negative, finite or +inf (no -0.0: a sort and numpy's partition may order
# 0.0 and -0.0 differently, and no latency is negative)
LAT = st.floats(min_value=0.0, max_value=1e6, allow_nan=False) | st.just(float("inf"))
QS = st.lists(st.floats(min_value=0.0, max_value=100.0), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(LAT, min_size=1, max_size=300), QS)
def test_sorted_percentiles_equal_numpy_bit_for_bit(xs, qs):
    x = np.asarray(xs, float)
    with np.errstate(invalid="ignore"):  # inf - inf in numpy's interpolation
        want = np.percentile(x, qs)
    got = sorted_percentiles(np.sort(x), qs)
    for w, g in zip(want, got, strict=True):
        assert (w == g) or (np.isnan(w) and np.isnan(g)), (w, g)


def test_sorted_percentiles_by_hand():
    # 5 values, p90: v = (5 - 1) * 0.9 = 3.6 -> between x[3] = 40 and x[4] = 100, g = 0.6
    # (>= 0.5: numpy's form b - (b - a) * (1 - g)) = 100 - 60 * 0.4 = 76
    # p50: v = 2 exactly -> x[2] = 30; p0 -> 10; p100 -> 100
    x = np.array([10.0, 20.0, 30.0, 40.0, 100.0])
    got = sorted_percentiles(x, (90, 50, 0, 100))
    assert got[1:] == [30.0, 10.0, 100.0]
    assert abs(got[0] - 76.0) < 1e-12


@settings(max_examples=300, deadline=None)
@given(st.lists(LAT | st.just(float("nan")), min_size=1, max_size=400))
def test_nanmean_equals_numpy_bit_for_bit(xs):
    x = np.asarray(xs, float)
    want = float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")
    got = _nanmean(x, np.isnan(x))
    assert (want == got) or (np.isnan(want) and np.isnan(got)), (want, got)


def test_summary_percentiles_are_numpys():
    """The summary's percentiles and means are numpy's on the scored requests (what the
    summary computed before issue 18), and the SLO verdict uses the same numbers."""
    cat = load_catalog()
    rep = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "vllm", catalog=cat)
    wl = preset("chat")
    slo = SLO.model_validate({"ttft": {"max_s": 1.0}, "tpot": {"max_s": 0.05}})
    res = simulate(rep, wl, rate_rps=20.0, n_requests=400, rng=np.random.default_rng(3))
    s = res.summary(slo)
    for name, x in (("ttft", res.ttft_s), ("tpot", res.tpot_s), ("e2e", res.e2e_s)):
        xs = x[~np.isnan(x)]
        for q in (50, 90, 99):
            assert s[f"{name}_p{q}_s"] == float(np.percentile(xs, q))
        assert s[f"{name}_mean_s"] == float(np.nanmean(x))
    ev = slo.evaluate(res.ttft_s, res.tpot_s, res.e2e_s)  # sorting on its own
    assert ev["ttft_p99_s"] == float(np.percentile(res.ttft_s, 99))
    assert ev["tpot_p99_s"] == float(np.percentile(res.tpot_s[~np.isnan(res.tpot_s)], 99))
    assert s["slo_ok"] == ev["ok"] == (s["ttft_p99_s"] <= 1.0 and s["tpot_p99_s"] <= 0.05)


def _fresh_draw(wl, n, seed, **kw):
    """What sample_requests drew before the memo: lengths, then unit arrivals."""
    rng = np.random.default_rng(seed)
    i, o = wl.sample_lengths(n, rng)
    unit = wl.traffic.unit_arrivals(n, rng)
    return wl.requests_of(i, o, unit, kw.pop("rate_rps", None), **kw), rng


def _same(a, b):
    for f in ("arrival_s", "input_tokens", "output_tokens", "cached_tokens"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
        assert getattr(a, f).dtype == getattr(b, f).dtype, f
    assert (a.shared_prefix_tokens, a.truncated) == (b.shared_prefix_tokens, b.truncated)


def test_memoised_draw_is_the_fresh_draw_and_moves_the_generator_the_same():
    wmod._SAMPLES.clear()
    wl = preset("rag")
    kw = {"rate_rps": 1.0, "context_limit": 8192, "prefix_caching": True}
    want, rng_want = _fresh_draw(wl, 300, 11, **dict(kw))
    for _ in range(2):  # a miss, then a hit
        rng = np.random.default_rng(11)
        got = wl.sample_requests(300, rng, **kw)
        _same(got, want)
        assert rng.bit_generator.state == rng_want.bit_generator.state
    assert len(wmod._SAMPLES._items) == 1
    # the generator continues as after a fresh draw
    rng = np.random.default_rng(11)
    wl.sample_requests(300, rng, **kw)
    assert rng.random() == rng_want.random()


def test_memo_hands_out_copies_and_tells_workloads_apart():
    wmod._SAMPLES.clear()
    wl = preset("chat")
    a = wl.sample_requests(200, np.random.default_rng(0), 1.0)
    a.input_tokens[:] = 1  # a caller changing its list does not change the next one
    b = wl.sample_requests(200, np.random.default_rng(0), 1.0)
    _same(b, _fresh_draw(wl, 200, 0, rate_rps=1.0)[0])
    other = preset("chat", traffic={"peak_rps": 3.0, "mean_rps": 1.0})  # another workload
    c = other.sample_requests(200, np.random.default_rng(0))
    _same(c, _fresh_draw(other, 200, 0)[0])
    d = wl.sample_requests(200, np.random.default_rng(0), 1.0, context_limit=1024)
    _same(d, _fresh_draw(wl, 200, 0, rate_rps=1.0, context_limit=1024)[0])


def test_memo_keeps_to_its_byte_budget():
    memo = wmod._SampleMemo(max_bytes=3 * 4 * 8 * 100)  # three lists of 100 requests
    wl = preset("chat")
    for seed in range(5):
        rng = np.random.default_rng(seed)
        memo.put(("k", seed), wl.sample_requests(100, rng, 1.0), rng.bit_generator.state)
    assert len(memo._items) == 3 and memo._bytes <= memo.max_bytes
    assert memo.get(("k", 0)) is None and memo.get(("k", 4)) is not None


def test_memo_keeps_to_its_entry_budget():
    memo = wmod._SampleMemo(max_entries=2)
    wl = preset("chat")
    for seed in range(4):
        rng = np.random.default_rng(seed)
        memo.put(("k", seed), wl.sample_requests(10, rng, 1.0), rng.bit_generator.state)
    assert list(memo._items) == [("k", 2), ("k", 3)]
