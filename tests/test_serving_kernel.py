"""The compiled event loop (planner.serving._kernel): one step-time formula shared by the
interpreter and the compiled code, the loop's phases (planner.serving._phases) giving the
same numbers compiled and interpreted, numba imported only when a simulation runs, and a
loop cache that follows changes of the step-time formula's file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from planner.catalog import PRIOR, EfficiencyParams
from planner.files import precompile_bytecode
from planner.serving import _kernel, _unloaded
from planner.serving.replica import build_replica

REPO_ROOT = Path(__file__).resolve().parents[1]

CASES = [
    ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", 1),
    ("llama-3.1-70b", "nvidia-h100-sxm", "fp8", 4),  # TP all-reduces
    ("mistral-7b-v0.1", "nvidia-h100-sxm", "bf16", 1),  # sliding window
    ("mixtral-8x7b", "nvidia-h100-sxm", "bf16", 2),  # MoE
]


def _run(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = dict(os.environ, **(env or {}))
    full["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + full.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full, cwd=REPO_ROOT,
        timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("model,gpu,prec,tp", CASES)
@pytest.mark.parametrize("eager", [False, True])
def test_compiled_step_time_is_bit_identical(catalog, model, gpu, prec, tp, eager):
    params = EfficiencyParams(eager_layer_s=2e-5, compute_half_tokens=0.0) if eager else None
    sm = build_replica(model, gpu, prec, "vllm", tp=tp, params=params, catalog=catalog).sm
    _kernel.kernel()
    st_c = _kernel._st  # the compiled twin, as the event loop calls it
    assert st_c is not _kernel.step_time_scalar
    rng = np.random.default_rng(7)
    for _ in range(300):
        T = int(rng.choice([rng.integers(0, 20), rng.integers(1, 9000)]))
        ns = int(rng.integers(1, max(2, min(T, 2000)))) if T else 0
        args = (
            T,
            ns,
            int(rng.integers(0, ns + 1)),
            int(rng.integers(0, 10**7)),
            float(rng.random() * 1e10),
            int(rng.integers(0, 10**6)),
            float(rng.random() * 1e9),
        )
        args += (float(rng.random()) * args[4],)  # the part of the pairs with a cached prefix
        assert st_c(sm._coeffs, *map(float, args)) == sm.step_time(*args)


#: straggler and per-sequence host terms on (no bundled profile fits them)
_STRAGGLER = {"attn_seq_bw_bytes_s": 3e10, "sched_seq_overhead_s": 2e-5, "sched_overhead_s": 1e-3}
#: an early stop that finds a certain miss (TTFT 0.3 s, TPOT 20 ms, E2E 4 s; see _loop)
_MISS = (np.array([0.3, 0.02, 4.0, 0.6, 0.04, 8.0]), np.array([50, 350, 20, 25, 25, 25, 0]))


@pytest.mark.parametrize(
    "case",
    [
        # gpt-oss: 128-token window on half the layers (window crossings in strides)
        dict(model="gpt-oss-20b", preset="chat", rate=40.0),
        # a small KV cache and token budget, 2-token blocks: decoders and prefills preempted
        dict(preset="chat", rate=80.0, memory_utilization=0.26, max_num_batched_tokens=256,
             block_size=2, preempts=True),
        # no chunked prefill, closed loop, prefix-cache hits
        dict(preset="code", concurrency=32, chunked_prefill=False),
        # the straggler term, closed loop, an early stop on a certain miss
        dict(preset="chat", concurrency=128, straggler=True, stop=_MISS),
        # TensorRT-LLM's GUARANTEED_NO_EVICT: prompt + answer reserved, a small KV cache
        dict(preset="chat", rate=80.0, memory_utilization=0.26, block_size=2, reserve=1.0),
        # SGLang's decayed ratio: a part of the answer reserved, decoders still preempted
        dict(preset="chat", rate=80.0, memory_utilization=0.26, max_num_batched_tokens=256,
             block_size=2, reserve=0.098, preempts=True),
        # the clients' max_tokens (4,096) reserved instead of each answer
        dict(preset="chat", rate=80.0, memory_utilization=0.26, block_size=2, reserve=1.0,
             max_out=4096),
    ],
    ids=["window", "preemption", "unchunked-closed", "straggler-early-stop", "no-evict",
         "partial-reserve", "max-tokens"],
)  # fmt: skip
def test_compiled_loop_equals_the_interpreted_phases(catalog, monkeypatch, case):
    """The loop's driver and phases run by the interpreter (borrow() is the identity there,
    heaps and early-stop helpers plain Python) give bit-identical results to the compiled
    loop: the phases are plain functions, and the compiled loop's borrowed views (arrays
    without reference counts) never outlive their arrays."""
    from planner.serving import _engine
    from planner.workload import Workload

    case = dict(case)
    params = PRIOR.model_copy(update=_STRAGGLER) if case.pop("straggler", False) else None
    over = {k: case.pop(k) for k in list(case) if k in ("memory_utilization",
            "max_num_batched_tokens", "block_size", "chunked_prefill")}  # fmt: skip
    rep = build_replica(case.pop("model", "llama-3.1-8b"), "nvidia-h100-sxm", "bf16", "vllm",
                        params=params, catalog=catalog, **over)  # fmt: skip
    if "reserve" in case:
        rep = rep.with_engine(kv_reserve_fraction=case.pop("reserve"))
    cap = {"max_output_tokens": case.pop("max_out")} if "max_out" in case else {}
    wl = Workload.model_validate({"preset": case.pop("preset"), **cap})
    reqs = wl.sample_requests(
        400, np.random.default_rng(3), case.pop("rate", None),
        context_limit=rep.engine.context_limit_tokens, prefix_caching=rep.engine.prefix_caching,
    )  # fmt: skip
    conc, stop, preempts = (
        case.pop("concurrency", None),
        case.pop("stop", None),
        case.pop("preempts", False),
    )
    compiled = _engine._run_continuous(rep, reqs.copy(), conc, stop)
    monkeypatch.setattr(_kernel, "kernel", lambda: _kernel._loop)  # the Python functions
    interpreted = _engine._run_continuous(rep, reqs.copy(), conc, stop)
    for field in ("arrival_s", "first_token_s", "finish_s", "preemptions"):
        a, b = getattr(compiled, field), getattr(interpreted, field)
        assert a.tobytes() == b.tobytes(), field
    for field in ("iterations", "busy_s", "kv_util_mean", "kv_util_max", "in_system_area_s",
                  "prefill_tokens_computed"):  # fmt: skip
        assert getattr(compiled, field) == getattr(interpreted, field), field
    assert compiled.meta["events"] == interpreted.meta["events"] > 0
    if stop is not None:  # the early stop fired: a certain miss
        assert compiled.meta["stop"][5] == interpreted.meta["stop"][5] == 1
        assert np.array_equal(compiled.meta["stop"], interpreted.meta["stop"])
    else:
        assert np.isfinite(compiled.finish_s).all()
        assert all(np.array_equal(x, y) for x, y in zip(
            compiled._iteration_stats(), interpreted._iteration_stats(), strict=True))  # fmt: skip
    assert (compiled.preemptions.sum() > 0) == preempts


def test_imports_and_cli_start_do_not_load_numba():
    code = (
        "import sys, planner, planner.cli, planner.serving, planner.serving.simulate, "
        "planner.serving._engine, planner.serving._kernel, planner.engine.step; "
        "from planner.cli.main import build_parser, main; build_parser(); "
        "rc = main(['--version']); "
        "sys.exit(10 if 'numba' in sys.modules else rc)"
    )
    p = _run(code)
    assert p.returncode == 0, p.stderr + p.stdout
    assert "planner" in p.stdout


def test_sources_digest_covers_both_files(tmp_path):
    a, b = tmp_path / "_kernel.py", tmp_path / "_scalar.py"
    a.write_text("loop\n")
    b.write_text("formula\n")
    d0 = _kernel.sources_digest((a, b))
    b.write_text("formula changed\n")
    d1 = _kernel.sources_digest((a, b))
    a.write_text("loop changed\n")
    assert len({d0, d1, _kernel.sources_digest((a, b))}) == 3
    assert {p.name for p in _kernel.SOURCES} == {
        "_kernel.py",
        "_scalar.py",
        "_loop_parts.py",
        "_phases.py",
    }
    assert _kernel.sources_digest() == _kernel.sources_digest(_kernel.SOURCES)


def test_a_changed_stamp_drops_the_loops_cache_files(tmp_path):
    mine = ["_kernel._loop-172.py311.nbi", "_kernel._loop-172.py311.1.nbc"]
    others = ["_scalar.step_time_scalar-35.py311.nbi", "other._loop-1.py311.nbi"]
    for name in mine + others:
        (tmp_path / name).write_bytes(b"x")
    # no stamp yet: unknown provenance, dropped
    assert _kernel.refresh_cache(tmp_path, "aaa") is True
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(others + [_kernel.STAMP_NAME])
    assert (tmp_path / _kernel.STAMP_NAME).read_text().strip() == "aaa"
    # same sources: the cache is kept
    for name in mine:
        (tmp_path / name).write_bytes(b"x")
    assert _kernel.refresh_cache(tmp_path, "aaa") is False
    assert all((tmp_path / name).exists() for name in mine)
    # the step-time formula changed: dropped, new stamp
    assert _kernel.refresh_cache(tmp_path, "bbb") is True
    assert not any((tmp_path / name).exists() for name in mine)
    assert all((tmp_path / name).exists() for name in others)
    assert (tmp_path / _kernel.STAMP_NAME).read_text().strip() == "bbb"


def test_bytecode_is_written_even_where_python_would_not(tmp_path, monkeypatch):
    # PYTHONDONTWRITEBYTECODE (sys.dont_write_bytecode) stops imports from writing .pyc;
    # precompile_bytecode writes them anyway, once: a second call adds none
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for f in (pkg / "__init__.py", pkg / "a.py", pkg / "sub" / "b.py"):
        f.write_text("X = 1\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert precompile_bytecode(pkg) == 3
    tag = sys.implementation.cache_tag
    assert (pkg / "sub" / "__pycache__" / f"b.{tag}.pyc").is_file()
    assert precompile_bytecode(pkg) == 0
    # a folder that does not exist (or cannot be written) is no failure
    assert precompile_bytecode(tmp_path / "missing") == 0


_PROBE = (
    "import json, numpy as np; from planner.serving import _kernel; "
    "from planner.serving.replica import build_replica; from planner.serving.simulate import "
    "simulate; from planner.workload.workload import preset; "
    "rep = build_replica('llama-3.1-8b', 'nvidia-h100-sxm', 'bf16', 'vllm'); "
    "r = simulate(rep, preset('chat'), n_requests=50, rate_rps=5.0, "
    "rng=np.random.default_rng(0)); loop = _kernel.kernel(); s = loop.stats; "
    "print(json.dumps({'hits': sum(s.cache_hits.values()), "
    "'misses': sum(s.cache_misses.values()), 'dir': s.cache_path, "
    "'e2e': float(np.nansum(r.finish_s))}))"
)


def test_stale_stamp_forces_a_recompile_of_the_loop(tmp_path):
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    runs = []
    for i in range(3):
        if i == 2:  # as if planner/engine/_scalar.py had changed since the loop was cached
            stamps = list(tmp_path.rglob(_kernel.STAMP_NAME))
            assert len(stamps) == 1
            stamps[0].write_text("stale\n")
        p = _run(_PROBE, env)
        assert p.returncode == 0, p.stderr
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    cold, warm, stale = runs
    assert cold["misses"] >= 1 and cold["hits"] == 0
    assert warm["hits"] >= 1 and warm["misses"] == 0  # loaded from the cache
    assert stale["misses"] >= 1 and stale["hits"] == 0  # recompiled, not loaded
    assert cold["e2e"] == warm["e2e"] == stale["e2e"]
    assert list(tmp_path.rglob(_kernel.STAMP_NAME))[0].read_text().strip() == (
        _kernel.sources_digest()
    )


def test_compiles_without_a_writable_cache(tmp_path):
    """numba raises RuntimeError when no cache location is writable; kernel() then compiles
    without a cache."""
    code = (
        "import numba, numpy as np; from planner.serving import _kernel\n"
        "real = numba.njit\n"
        "def njit(*a, **k):\n"
        "    if k.get('cache'):\n"
        "        def deco(f):\n"
        "            raise RuntimeError('cannot cache function: no locator available')\n"
        "        return deco\n"
        "    return real(*a, **k)\n"
        "numba.njit = njit\n"
        "from planner.serving.replica import build_replica\n"
        "from planner.serving.simulate import simulate\n"
        "from planner.workload.workload import preset\n"
        "rep = build_replica('llama-3.1-8b', 'nvidia-h100-sxm', 'bf16', 'vllm')\n"
        "r = simulate(rep, preset('chat'), n_requests=20, rate_rps=5.0, "
        "rng=np.random.default_rng(0))\n"
        "assert _kernel._cache_dir(_kernel.kernel()) is None\n"
        "print(r.iterations)"
    )
    p = _run(code, {"NUMBA_CACHE_DIR": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert int(p.stdout.split()[-1]) > 0


@pytest.mark.parametrize("model,gpu,prec,tp", CASES)
@pytest.mark.parametrize("preset", ["chat", "rag", "summarization"])
def test_compiled_unloaded_latency_equals_the_interpreted_loop(
    catalog, monkeypatch, model, gpu, prec, tp, preset
):
    """probe.unloaded_latency runs _unloaded._unloaded compiled; the same function run by
    the interpreter with the Python step time gives bit-identical TTFT and TPOT (prompt
    chunks, sliding windows, prefix-cached tokens)."""
    from planner.engine._scalar import step_time_scalar, window_pairs
    from planner.serving.probe import unloaded_latency
    from planner.workload import Workload

    rep = build_replica(model, gpu, prec, "vllm", tp=tp, catalog=catalog)
    wl = Workload.model_validate({"preset": preset, "traffic": {"mean_rps": 1.0, "peak_rps": 1.0}})
    got = unloaded_latency(rep, wl, n=200)
    reqs = wl.sample_requests(
        200, np.random.default_rng(12345), 1.0,
        context_limit=rep.engine.context_limit_tokens, prefix_caching=rep.engine.prefix_caching,
    )  # fmt: skip
    sm, eng = rep.sm, rep.engine
    monkeypatch.setattr(_unloaded, "_st", step_time_scalar)
    monkeypatch.setattr(_unloaded, "_wp", window_pairs)
    ttft, tpot = _unloaded._unloaded(  # the interpreter, plain Python floats and ints
        sm._coeffs,
        reqs.input_tokens.astype(np.int64).tolist(),
        reqs.output_tokens.astype(np.int64).tolist(),
        reqs.cached_tokens.astype(np.int64).tolist(),
        eng.max_num_batched_tokens if eng.chunked_prefill else 1 << 60,
        int(sm.window) if sm.layers_sw > 0 and sm.window > 0 else 0,
        eng.host_time_s(1),
        eng.host_overlap,
    )
    assert np.array_equal(got["ttft_s"], ttft)
    assert np.array_equal(got["tpot_s"], tpot, equal_nan=True)
    assert np.all(got["ttft_s"] > 0)
