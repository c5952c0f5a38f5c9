#!/usr/bin/env python3
"""Bit-for-bit record of the continuous-batching event loop, to check that a refactor of
:mod:`planner.serving._kernel` changes no number.

Runs a fixed set of simulations through :func:`planner.serving._engine._run_continuous`
that covers the loop's paths: open and closed loop, chunked and unchunked prefill,
sliding-window models (gpt-oss's 128-token window, Gemma-2's 4096), preemption under KV
pressure, prefix-cached requests (a shared prefix, cache hits), offline bursts, the early
stop (a certain miss, every scored request finished, on but never firing) and the
straggler and per-sequence host terms. For each it keeps what the compiled loop returned
(its tuple, the iteration records ``ev_i[:n_events]`` / ``ev_t[:n_events]``, the early-stop
``stats``) and the per-request arrays it filled (``first``, ``fin``, ``npre``, ``arr``).

Usage::

    python scripts/loop_equivalence.py --record /tmp/loop_before.pkl   # original code
    python scripts/loop_equivalence.py --check /tmp/loop_before.pkl     # after the change

``--check`` compares every array byte for byte (``-0.0`` and NaN payloads included) and
every scalar with ``==``; exit 1 and a line per difference when anything differs.
``--repeats N`` also times the compiled loop itself (the fastest of N runs of each case,
summed), e.g. to compare two checkouts in alternation.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.catalog import PRIOR, load_catalog  # noqa: E402
from planner.serving import _engine, _kernel  # noqa: E402
from planner.serving.replica import build_replica  # noqa: E402
from planner.workload import Workload  # noqa: E402

#: straggler and per-sequence host terms on (no bundled profile fits them yet): a kernel
#: whose one attention program streams 30 GB/s, 20 us of host time per sequence
STRAGGLER = PRIOR.model_copy(
    update={"attn_seq_bw_bytes_s": 3e10, "sched_seq_overhead_s": 2e-5, "sched_overhead_s": 1e-3}
)

#: early-stop rules (stop_f: TTFT, TPOT, E2E bad thresholds, then the quantile thresholds;
#: stop_i: scored range, bad count, TTFT / TPOT / E2E counts above, stop when all finished)
MISS = (np.array([0.3, 0.02, 4.0, 0.6, 0.04, 8.0]), np.array([200, 1200, 40, 25, 25, 25, 0]))
ALL_DONE = (np.array([1e9] * 6), np.array([100, 600, 10**6, 10**6, 10**6, 10**6, 1]))
#: a miss that needs many bad requests: the waiting rule's second threshold is reached first
SLOW = (
    np.array([0.2, 1e9, 1e9, 0.2, 1e9, 1e9]),
    np.array([300, 1300, 10**6, 400, 10**6, 10**6, 0]),
)
#: only the E2E count decides
E2E = (np.array([1e9, 1e9, 1e9, 1e9, 1e9, 1.0]), np.array([0, 1000, 10**6, 10**6, 10**6, 100, 0]))
NEVER = (np.array([1e9] * 6), np.array([100, 600, 10**6, 10**6, 10**6, 10**6, 0]))


def _wl(preset: str, **over) -> Workload:
    return Workload.model_validate({"preset": preset, **over})


#: short prompts, long answers: more decoders than a small token budget
SHORT_IN_LONG_OUT = Workload.model_validate({
    "traffic": {"mean_rps": 50.0},
    "input_tokens": {"kind": "lognormal", "mean": 40.0, "p90": 80.0},
    "output_tokens": {"kind": "lognormal", "mean": 800.0, "p90": 1500.0},
})  # fmt: skip

# (name, build_replica args and overrides, workload, n, rate [req/s] or None, concurrency,
#  offline, stop)
CASES = [
    ("chat-open", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("chat"), 4000, 40.0, None, False, None),
    ("chat-overload", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("chat"), 4000, 200.0, None, False, None),
    ("chat-closed", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("chat"), 3000, None, 64, False, None),
    ("chat-closed-1", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("chat"), 200, None, 1, False, None),
    ("rag-unchunked", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"chunked_prefill": False}, _wl("rag"), 2000, 8.0, None, False, None),
    ("rag-unchunked-closed", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"chunked_prefill": False}, _wl("rag"), 1000, None, 32, False, None),
    ("rag-chunked", ("llama-3.1-70b", "nvidia-h100-sxm", "fp8", "vllm"), {"tp": 4}, _wl("rag"), 2000, 6.0, None, False, None),
    ("code-cache-hits", ("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "sglang"), {}, _wl("code"), 4000, 60.0, None, False, None),
    ("gptoss-window128", ("gpt-oss-20b", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("chat"), 3000, 40.0, None, False, None),
    ("gptoss-window128-closed", ("gpt-oss-20b", "nvidia-h100-sxm", "bf16", "vllm"), {"chunked_prefill": False}, _wl("summarization"), 1500, None, 48, False, None),
    ("gemma2-window4096", ("gemma-2-9b", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("rag"), 1500, 5.0, None, False, None),
    ("mistral-window-offline", ("mistral-7b-v0.1", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("summarization"), 1500, None, None, True, None),
    ("preempt-open", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"memory_utilization": 0.26}, _wl("chat"), 3000, 60.0, None, False, None),
    ("preempt-offline", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"memory_utilization": 0.26, "max_num_seqs": 512}, _wl("chat"), 2000, None, None, True, None),
    ("preempt-window", ("gpt-oss-20b", "nvidia-h100-sxm", "bf16", "vllm"), {"memory_utilization": 0.62}, _wl("chat"), 2000, 80.0, None, False, None),
    ("preempt-unchunked-closed", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"memory_utilization": 0.26, "chunked_prefill": False}, _wl("chat"), 1500, None, 300, False, None),
    ("mixtral-tp2", ("mixtral-8x7b", "nvidia-h100-sxm", "bf16", "vllm"), {"tp": 2}, _wl("chat"), 3000, 20.0, None, False, None),
    ("straggler-open", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"params": STRAGGLER}, _wl("chat"), 3000, 30.0, None, False, None),
    ("straggler-window", ("gemma-2-9b", "nvidia-h100-sxm", "bf16", "vllm"), {"params": STRAGGLER}, _wl("rag"), 1000, 4.0, None, False, None),
    ("straggler-preempt-closed", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"params": STRAGGLER, "memory_utilization": 0.26}, _wl("chat"), 2000, None, 256, False, None),
    ("stop-miss", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("chat"), 3000, 120.0, None, False, MISS),
    ("stop-all-done", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("chat"), 3000, 20.0, None, False, ALL_DONE),
    ("stop-never", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("chat"), 1500, 20.0, None, False, NEVER),
    ("stop-miss-closed-straggler", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"params": STRAGGLER}, _wl("chat"), 2000, None, 128, False, MISS),
    ("stop-wait-overload", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("chat"), 3000, 400.0, None, False, SLOW),
    ("stop-e2e-code", ("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "sglang"), {}, _wl("code"), 3000, 120.0, None, False, E2E),
    ("stop-all-done-code", ("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "sglang"), {}, _wl("code"), 3000, 20.0, None, False, ALL_DONE),
    ("preempt-prefills", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"memory_utilization": 0.26, "max_num_batched_tokens": 1024}, _wl("rag"), 1000, 20.0, None, False, None),
    ("small-budget-rag", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"max_num_batched_tokens": 768}, _wl("rag"), 1000, 6.0, None, False, None),
    ("tiny-budget", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"memory_utilization": 0.26, "max_num_batched_tokens": 96}, _wl("chat"), 1500, 60.0, None, False, None),
    ("preempt-a-prefill", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"memory_utilization": 0.3, "max_num_batched_tokens": 512, "block_size": 1}, _wl("rag"), 600, 20.0, None, False, None),
    ("preempt-a-prefill-2", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"memory_utilization": 0.26, "max_num_batched_tokens": 256, "block_size": 2}, _wl("chat"), 1500, 80.0, None, False, None),
    ("decoders-fill-the-budget", ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm"), {"max_num_batched_tokens": 64}, SHORT_IN_LONG_OUT, 800, None, None, True, None),
    ("stop-miss-window", ("gpt-oss-20b", "nvidia-h100-sxm", "bf16", "vllm"), {}, _wl("rag"), 2000, 30.0, None, False, MISS),
]  # fmt: skip


def _capture():
    """Wrap the compiled loop so that each call's raw outputs are kept."""
    real = _kernel.kernel()
    calls = []

    def loop(*args):
        t = time.perf_counter()
        res = real(*args)
        calls.append((args, res, time.perf_counter() - t))
        return res

    return loop, calls


def run_cases(repeats: int = 1) -> dict[str, dict]:
    cat = load_catalog()
    loop, calls = _capture()
    orig = _kernel.kernel
    _kernel.kernel = lambda: loop
    out: dict[str, dict] = {}
    total = 0.0
    try:
        for name, (model, gpu, prec, fw), over, wl, n, rate, conc, offline, stop in CASES:
            rep = build_replica(model, gpu, prec, fw, catalog=cat, **over)
            reqs = wl.sample_requests(
                n,
                np.random.default_rng(11),
                rate,
                context_limit=rep.engine.context_limit_tokens,
                prefix_caching=rep.engine.prefix_caching,
            )
            if offline:
                reqs = reqs.all_at_once()
            calls.clear()
            for _ in range(repeats):
                _engine._run_continuous(rep, reqs.copy(), conc, stop)
            dt = min(c[2] for c in calls)
            total += dt
            (args, res, _) = calls[0]
            err, cur, busy, area, kv_area, kv_max, pf_tokens, ev_i, ev_t, nev = res
            first, fin, npre, arr, stats = args[5], args[6], args[7], args[4], args[21]
            out[name] = {
                "scalars": (int(err), int(cur), busy, area, kv_area, int(kv_max), int(pf_tokens), int(nev)),
                "ev_i": ev_i[:nev].copy(),
                "ev_t": ev_t[:nev].copy(),
                "first": first.copy(),
                "fin": fin.copy(),
                "npre": npre.copy(),
                "arr": arr.copy(),
                "stats": stats.copy(),
            }  # fmt: skip
            print(
                f"{name:28s} n={n:5d} events={nev:6d} iterations={cur:7d} "
                f"preempted={int(npre.sum()):5d} stop={stats[5]} "
                f"finished={int(np.isfinite(fin).sum()):5d} {dt * 1e3:7.2f} ms"
            )
    finally:
        _kernel.kernel = orig
    print(
        f"compiled loop, sum over the cases of the fastest of {repeats} runs: {total * 1e3:.2f} ms"
    )
    return out


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return all(
        (x == y) or (x != x and y != y) if not isinstance(x, float) else
        np.float64(x).tobytes() == np.float64(y).tobytes()
        for x, y in zip(a, b, strict=True)
    )  # fmt: skip


def compare(before: dict, after: dict) -> list[str]:
    diffs = []
    for name in before:
        if name not in after:
            diffs.append(f"{name}: missing")
            continue
        for key, a in before[name].items():
            if not _same(a, after[name][key]):
                diffs.append(f"{name}: {key} differs")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=1, help="time the loop over this many runs")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--record", type=Path, help="write the outputs to this file")
    g.add_argument("--check", type=Path, help="compare the outputs with this file")
    a = ap.parse_args()
    out = run_cases(a.repeats)
    if a.record:
        a.record.write_bytes(pickle.dumps(out))
        print(f"recorded {len(out)} cases to {a.record}")
        return 0
    diffs = compare(pickle.loads(a.check.read_bytes()), out)
    for d in diffs:
        print("DIFF", d)
    print(f"{len(out)} cases: " + ("bit-identical" if not diffs else f"{len(diffs)} differences"))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
