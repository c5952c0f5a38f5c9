"""The shortcuts that make ``planner recommend`` and ``compare_gpus`` fast change no number.

Each test pins one shortcut (issue 17, "Fast from the shell") against the slow path it
replaced: the numba start without scipy, the collector thresholds, the cached zero-load
request sample and the analytic SLO rate computed only after the zero-load check.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from planner.files import RARE_GC_THRESHOLD, rare_gc
from planner.serving import WorkloadCache, build_replica, check_reachable, unloaded_latency
from planner.workload import SLO, Workload

REPO_ROOT = Path(__file__).resolve().parents[1]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=600,
    )


def test_kernels_load_without_scipy_and_blas_still_compiles():
    """Loading the compiled kernels imports no scipy.linalg (0.3 s of a CLI run); a jitted
    np.dot compiled afterwards in the same process still gets BLAS (numba imports scipy
    then) and the right number: [1, 2, 3] . [4, 5, 6] = 4 + 10 + 18 = 32."""
    code = (
        "import sys, numpy as np\n"
        "from planner.serving._kernel import kernel\n"
        "from planner.serving._unloaded import unloaded_kernel\n"
        "kernel(); unloaded_kernel()\n"
        "print('linalg', 'scipy.linalg' in sys.modules)\n"
        "import numba\n"
        "dot = numba.njit(lambda a, b: np.dot(a, b))\n"
        "print('dot', dot(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])))\n"
        "print('blas', 'scipy.linalg.cython_blas' in sys.modules)\n"
    )
    p = _run(code)
    assert p.returncode == 0, p.stderr
    out = dict(line.split(" ", 1) for line in p.stdout.strip().splitlines())
    assert out == {"linalg": "False", "dot": "32.0", "blas": "True"}


def test_the_first_call_of_each_kernel_freezes_the_tracked_objects_once():
    """After the zero-load kernel's and the event loop's first calls (numba's import and
    cache loads), the objects tracked then sit in the collector's permanent generation
    (tens of thousands: numba's), so a full collection walks only what came later; a second
    call freezes nothing more (the count stays)."""
    code = (
        "import gc\n"
        "from planner.serving import CapacityProbe, WorkloadCache, build_replica\n"
        "from planner.workload import SLO, preset\n"
        "rep = build_replica('llama-3.1-8b', 'nvidia-h100-sxm', 'bf16', 'vllm')\n"
        "wl = preset('chat', traffic={'peak_rps': 10.0, 'mean_rps': 5.0})\n"
        "slo = SLO.model_validate({'ttft': {'max_s': 1.0}, 'tpot': {'max_s': 0.05}})\n"
        "print('before', gc.get_freeze_count())\n"
        "p = CapacityProbe(rep, WorkloadCache.of(wl, slo), n_requests=200)\n"
        "p.run(1.0)\n"
        "n = gc.get_freeze_count()\n"
        "p.run(2.0)\n"
        "print('after', n, gc.get_freeze_count(), len(gc.get_objects()))\n"
    )
    p = _run(code)
    assert p.returncode == 0, p.stderr
    lines = dict(line.split(" ", 1) for line in p.stdout.strip().splitlines())
    assert lines["before"] == "0"
    frozen, again, tracked = map(int, lines["after"].split())
    assert frozen > 20_000 and again == frozen and tracked < frozen


def test_rare_gc_raises_the_threshold_and_restores_it():
    before = gc.get_threshold()
    with rare_gc():
        inside = gc.get_threshold()
        with rare_gc(10):  # nested (the CLI around the search): never lowers it
            assert gc.get_threshold() == inside
    assert inside == (max(before[0], RARE_GC_THRESHOLD), *before[1:])
    assert gc.get_threshold() == before
    assert gc.isenabled()


def test_rare_gc_ending_switches_the_collector_off():
    before = gc.get_threshold()
    try:
        with rare_gc(ending=True):
            assert gc.isenabled()
        assert not gc.isenabled()
        assert gc.get_threshold() == before
    finally:
        gc.enable()


def test_rare_gc_restores_on_error():
    before = gc.get_threshold()
    with pytest.raises(ZeroDivisionError), rare_gc():
        _ = 1 / 0
    assert gc.get_threshold() == before


@pytest.mark.parametrize(
    "model,gpu,prec,tp,preset",
    [
        ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", 1, "chat"),
        ("llama-3.1-70b", "nvidia-h100-sxm", "fp8", 2, "rag"),  # long prompts: context cut
        ("mistral-7b-v0.1", "nvidia-l4", "bf16", 1, "summarization"),  # sliding window
    ],
)
def test_cached_zero_load_sample_gives_the_same_latencies(catalog, model, gpu, prec, tp, preset):
    """WorkloadCache.unloaded_requests is the sample unloaded_latency draws itself (seed
    12345, the engine's context limit and prefix caching): identical arrays, and the same
    zero-load percentiles from check_reachable."""
    rep = build_replica(model, gpu, prec, "vllm", tp=tp, catalog=catalog)
    wl = Workload.model_validate({"preset": preset, "traffic": {"mean_rps": 1.0, "peak_rps": 1.0}})
    slo = SLO.model_validate({"ttft": {"max_s": 1e9}, "tpot": {"max_s": 1e9}})
    cache = WorkloadCache.of(wl, slo)
    reqs = cache.unloaded_requests(rep)
    assert cache.unloaded_requests(rep) is reqs  # drawn once per engine key
    a = unloaded_latency(rep, wl)
    b = unloaded_latency(rep, wl, requests=reqs)
    for k in ("ttft_s", "tpot_s", "e2e_s"):
        assert np.array_equal(a[k], b[k], equal_nan=True), k
    assert check_reachable(rep, wl, slo) == check_reachable(rep, wl, slo, requests=reqs)


@pytest.mark.parametrize("preset", ["chat", "rag", "code"])
def test_one_draw_cut_to_each_context_limit_equals_a_fresh_sample(preset):
    """WorkloadCache.sample draws lengths and arrivals once and cuts them to each context
    limit (Workload.requests_of); a fresh sample_requests with the same seed gives the same
    requests for every limit, in any order of limits (the draws are never changed)."""
    wl = Workload.model_validate({"preset": preset, "traffic": {"mean_rps": 2.0, "peak_rps": 3.0}})
    cache = WorkloadCache.of(wl, SLO.model_validate({"ttft": {"max_s": 1.0}}))
    fields = ("arrival_s", "input_tokens", "output_tokens", "cached_tokens")
    for limit in (None, 512, 4096, 2048, None, 100_000):
        for prefix in (True, False):
            got = cache.sample(3000, 7, limit, prefix)
            want = wl.sample_requests(
                3000, np.random.default_rng(7), 1.0, context_limit=limit, prefix_caching=prefix
            )
            for f in fields:
                assert np.array_equal(getattr(got, f), getattr(want, f)), (limit, prefix, f)
            assert (got.truncated, got.shared_prefix_tokens) == (
                want.truncated,
                want.shared_prefix_tokens,
            )
