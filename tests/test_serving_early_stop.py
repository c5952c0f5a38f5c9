"""The capacity probe's shortcuts give the answers of the long way: runs that stop once their
verdict is certain, the zero-load check decided from counts, the compiled SLO-rate
bisection, and the replica search that tries its pruning cap early."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import PlannerError
from planner.serving import CapacityProbe, WorkloadCache, build_replica, check_reachable
from planner.serving.steady_state import steady_state
from planner.serving.verdict import percentile_over as _percentile_over
from planner.serving.verdict import stop_rule
from planner.workload import SLO, Workload


@pytest.fixture(scope="module")
def rep8(catalog):
    return build_replica("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm", catalog=catalog)


def _wl(preset: str = "chat") -> Workload:
    return Workload.model_validate({"preset": preset, "traffic": {"mean_rps": 5, "peak_rps": 10}})


# thresholds between the whole runs' percentiles at 10 % and 100 % of the cap (8B on one
# H100, chat lengths: TTFT p99 0.040 -> 0.086 s, TPOT p99 0.0064 -> 0.027 s, E2E p90 3.9 ->
# 15 s), so each SLO passes at low rates and misses at high ones
SLOS = {
    "attainment": SLO.model_validate(
        {"ttft": {"max_s": 0.06}, "tpot": {"max_s": 0.012}, "attainment": 0.99}
    ),
    "percentiles only": SLO.model_validate({"ttft": {"max_s": 0.07}, "tpot": {"max_s": 0.015}}),
    "e2e p90": SLO.model_validate({"e2e": {"max_s": 8.0, "percentile": "p90"}}),
}


# --------------------------------------------------------------------------- stop rule
def test_stop_rule_counts_by_hand():
    """5,000 scored requests, attainment 0.99: 50 bad leave (5000 - 50) / 5000 = 0.99, which
    meets 0.99 - 1e-12, so the 51st bad request is the first certain miss. p99 over 5,000
    values interpolates at index 0.99 x 4999 = 4949.01, between the 4950th and 4951st
    smallest; 5000 - 4949 = 51 values above the threshold put the 4950th above it, and the
    rule asks for one more (52). TPOT counts only answers longer than one token (here 4,000
    of 5,000: index 0.99 x 3999 = 3959.01, so 4000 - 3959 + 1 = 42)."""
    slo = SLO.model_validate({"ttft": {"max_s": 1.0}, "tpot": {"max_s": 0.05}, "attainment": 0.99})
    out = np.r_[np.ones(1000, np.int64), np.full(4000, 7)]
    stop_f, stop_i = stop_rule(slo, out, 0, 5000)
    assert list(stop_i) == [0, 5000, 51, 52, 42, 5002, 0]  # no E2E target: never
    assert stop_f[0] == 1.0 and stop_f[1] == 0.05 and stop_f[2] == math.inf
    # the percentiles of a run known to miss: no count stops it, every scored request does
    stop_f, stop_i = stop_rule(slo, out, 0, 5000, until_decided=False)
    assert list(stop_i[2:]) == [5002] * 4 + [1] and (stop_f == math.inf).all()


@pytest.mark.parametrize("name", list(SLOS))
def test_early_stop_gives_the_verdicts_of_whole_runs(rep8, name):
    """The same rates on a probe that stops early and on one that runs every request: the
    same verdict at each; a run that went to its end has the same summary; one that stopped
    holds an upper bound of the attainment, and the whole run indeed misses."""
    slo = SLOS[name]
    wl = _wl()
    whole = CapacityProbe(rep8, WorkloadCache.of(wl, slo, 0), n_requests=400)
    quick = CapacityProbe(rep8, WorkloadCache.of(wl, slo, 0), n_requests=400, early_stop=True)
    rates = whole.cap_rps * np.array([0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    verdicts, stopped = set(), 0
    for r in rates:
        a, b = whole.run(float(r)), quick.run(float(r))
        assert a["slo_ok"] == b["slo_ok"], r
        verdicts.add(a["slo_ok"])
        if b.get("stopped_early"):
            stopped += 1
            assert b["slo_attainment"] >= a["slo_attainment"]
            exact = quick.run(float(r), exact=True)  # run again to its last scored request
            assert exact == a
        else:
            assert b == a
    assert verdicts == {True, False} and stopped  # the rates cover both verdicts
    assert quick.full(float(rates[0])) == whole.full(float(rates[0]))  # reported runs: whole


# --------------------------------------------------------------------------- zero load
@settings(max_examples=300, deadline=None)
@given(
    x=st.lists(st.floats(0.0, 10.0), min_size=1, max_size=60),
    pct=st.sampled_from([50.0, 90.0, 95.0, 99.0, 99.9, 12.5]),
    pick=st.integers(0, 59),
    shift=st.sampled_from([0.0, 1e-12, -1e-12, 0.3, -0.3]),
)
def test_percentile_over_is_numpys_verdict(x, pct, pick, shift):
    """Decided from counts or by numpy, the answer is ``np.percentile(x, p) > threshold``,
    also for thresholds equal to (or a hair off) a value of the sample."""
    a = np.array(x)
    thr = float(a[pick % len(a)]) + shift
    assert _percentile_over(a, pct, thr) == bool(float(np.percentile(a, pct)) > thr)


@pytest.mark.parametrize(
    "model,gpu,prec,tp",
    [
        ("llama-3.1-70b", "nvidia-h100-sxm", "fp8", 2),
        ("llama-3.1-70b", "nvidia-a100-80gb-sxm", "bf16", 4),
        ("mistral-7b-v0.1", "nvidia-l4", "bf16", 1),
    ],
)
@pytest.mark.parametrize("ttft", [0.3, 1.0, 3.0])
def test_zero_load_verdict_without_values_is_the_same(catalog, model, gpu, prec, tp, ttft):
    """``values=False`` raises the same error, or passes, exactly when the full check does."""
    rep = build_replica(model, gpu, prec, "vllm", tp=tp, catalog=catalog)
    wl = _wl("rag")
    for att in (None, 0.99):
        slo = SLO.model_validate(
            {"ttft": {"max_s": ttft}, "tpot": {"max_s": 0.05}, "attainment": att}
        )
        outcome = []
        for values in (True, False):
            try:
                check_reachable(rep, wl, slo, values=values)
                outcome.append("ok")
            except PlannerError as e:
                outcome.append(str(e))
        assert outcome[0] == outcome[1]


# --------------------------------------------------------------------------- SLO rate
def _slo_rate_reference(rep, shape, slo: SLO, cap: float, steps: int = 14) -> float:
    """The SLO-rate bisection as it was written before it was compiled: steady_state at each
    rate, its mean latencies against the thresholds."""
    tg = slo.targets()

    def ok(rate: float) -> bool:
        fp = steady_state(rep, shape, rate)
        return fp.stable and all(getattr(fp, f"{n}_s") <= t.max_s for n, t in tg.items())

    if ok(cap):
        return cap
    lo, hi = 0.0, cap
    for _ in range(steps):
        mid = (lo + hi) / 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return hi


@pytest.mark.parametrize(
    "model,gpu,prec,tp",
    [
        ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", 1),
        ("llama-3.1-70b", "nvidia-h100-sxm", "fp8", 4),
        ("mistral-7b-v0.1", "nvidia-h100-sxm", "bf16", 1),  # sliding window
        ("mixtral-8x7b", "nvidia-h100-sxm", "bf16", 2),  # MoE
    ],
)
@pytest.mark.parametrize("preset", ["chat", "rag"])
def test_compiled_slo_rate_equals_the_interpreted_bisection(catalog, model, gpu, prec, tp, preset):
    rep = build_replica(model, gpu, prec, "vllm", tp=tp, catalog=catalog)
    wl = _wl(preset)
    for ttft, tpot in ((0.2, 0.02), (1.0, 0.05), (30.0, 1.0)):
        slo = SLO.model_validate({"ttft": {"max_s": ttft}, "tpot": {"max_s": tpot}})
        cache = WorkloadCache.of(wl, slo, 0)
        cap = 0.95 * cache.saturation(rep).saturation_rps
        got = cache.slo_rate(rep, cap)
        assert got == _slo_rate_reference(rep, cache.shape(rep), slo, cap)  # bit-identical


# --------------------------------------------------------------------------- replica search
class _Threshold(CapacityProbe):
    """A probe whose verdict is monotone: ``need / k`` passes iff ``k >= k_star``."""

    def __init__(self, k_star: int) -> None:
        self.k_star, self.asked = k_star, []

    def ok(self, rate: float) -> bool:
        k = round(1.0 / rate)
        self.asked.append(k)
        return k >= self.k_star


@settings(max_examples=400, deadline=None)
@given(
    k_star=st.integers(1, 300),
    k_lb=st.integers(1, 100),
    span=st.integers(0, 200),
    k_start=st.integers(1, 300),
)
def test_cap_next_finds_what_the_gallop_finds(k_star, k_lb, span, k_start):
    """With a monotone verdict both searches return the smallest passing count in
    ``[k_lb, k_max]`` (None above it), and trying the cap early never asks more counts when
    the option fails at the cap."""
    k_max = k_lb + span
    a, b = _Threshold(k_star), _Threshold(k_star)
    got_a = a.min_replicas(1.0, k_lb, k_max, k_start)
    got_b = b.min_replicas(1.0, k_lb, k_max, k_start, cap_next=True)
    want = None if k_star > k_max else max(k_lb, k_star)
    assert got_a == got_b == want
    if want is None:
        assert len(set(b.asked)) <= min(2, len(set(a.asked)))
