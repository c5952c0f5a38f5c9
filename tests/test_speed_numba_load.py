"""Loading the compiled kernels from numba's cache without numba's whole CPU target
(planner.serving._jit.light_cache_load): the same numbers, the registries never installed,
and numba's own load whenever the light one cannot be used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from planner.serving._jit import light_cache_load

ROOT = Path(__file__).resolve().parent.parent

#: a tiny simulation; prints its P50 TTFT and E2E, which of numba's compile-only modules
#: (imported when its CPU target is set up) the process has loaded, and whether scipy.linalg
SIM = """
import json, sys
import numpy as np
from planner.catalog import load_catalog
from planner.serving import build_replica, simulate
from planner.workload import Workload
cat = load_catalog()
rep = build_replica(cat.model("llama-3.1-8b"), cat.gpu("nvidia-h100-sxm"), cat.precision("fp8"),
                    cat.framework("vllm"), catalog=cat)
wl = Workload.model_validate({"preset": "chat", "traffic": {"mean_rps": 20, "peak_rps": 20}})
s = simulate(rep, wl, n_requests=300, rng=np.random.default_rng(7)).summary()
print(json.dumps({"ttft": s["ttft_p50_s"], "e2e": s["e2e_p50_s"],
                  "target": [m for m in ("numba.typed.typeddict", "numba.np.npyimpl")
                             if m in sys.modules],
                  "scipy": "scipy.linalg" in sys.modules}))
"""


def _run() -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", SIM], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_new_process_loads_the_kernel_without_the_cpu_target():
    first = _run()  # compiles where the cache is empty (a fresh clone), else loads it
    second = _run()  # the cache is there now: loaded, light
    assert second["target"] == []  # numba's typing and lowering registries never set up
    assert second["scipy"] is False  # nor scipy.linalg imported (0.3 s): see before_compile
    assert second["ttft"] == first["ttft"] > 0  # the very same machine code
    assert second["e2e"] == first["e2e"] > second["ttft"]


class _Guard:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Cache:
    """numba's cache interface as light_cache_load uses it; ``fail``: the light load raises."""

    def __init__(self, fail: bool) -> None:
        self.fail, self.calls = fail, []

    def _guard_against_spurious_io_errors(self):
        return _Guard()

    def _load_overload(self, sig, ctx):
        self.calls.append("light")
        if self.fail:
            raise RuntimeError("another layout")
        return ("light", sig)

    def load_overload(self, sig, ctx):
        self.calls.append("full")
        return ("full", sig)


class _Dispatcher:
    def __init__(self, cache) -> None:
        self._cache = cache


def test_light_load_and_its_fallback(monkeypatch):
    from numba.core.runtime import rtsys

    inits = []
    monkeypatch.setattr(rtsys, "initialize", lambda ctx: inits.append(ctx))
    ok = light_cache_load(_Dispatcher(_Cache(fail=False)))
    assert ok._cache.load_overload("sig", "ctx") == ("light", "sig")
    assert ok._cache.calls == ["light"] and inits == ["ctx"]  # the runtime, then the load
    bad = light_cache_load(_Dispatcher(_Cache(fail=True)))
    assert bad._cache.load_overload("sig", "ctx") == ("full", "sig")  # numba's own load
    assert bad._cache.calls == ["light", "full"]


def test_no_cache_is_left_alone():
    class NullCache:  # numba's cache when caching is off: no _load_overload
        def load_overload(self, sig, ctx):
            return None

    d = _Dispatcher(NullCache())
    before = d._cache.load_overload
    assert light_cache_load(d) is d
    assert d._cache.load_overload == before
