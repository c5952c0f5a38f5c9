"""Diagnosis of a disaggregated InferenceX DeepSeek-R1 row: its predicted output tok/s with
the prefill (or decode) pool's step model changed by one sourced term at a time.

Nothing here changes a prediction of the planner; it answers "how far would this term move
the row" (changes/s8-front8k.md). The closed loop is the one ``disagg_rows`` runs (same
request draw, seed and bisection); each case also prints the run's completion rate over the
kept requests against its arrival rate: where a pool saturates, the open-loop run at the
Little's-law rate builds a queue to its end and completes fewer requests a second than
arrive (changes/s8-front8k.md, "closed loop").

Cases (comma-separated; one case may combine changes with ``+``):

* ``base``: the row as ``predict_disagg_row`` predicts it;
* ``a2a``: both pools with the all-to-all dispatch whatever the row's ``MoE dispatch``
  note says (the planner before changes/s8-front8k.md);
* ``imb<X>``: ``base`` with the prefill pool's ``moe_imbalance`` (the fitted routing skew,
  4 at its bound on every framework: the busiest EP GPU's routed tokens 5x the mean) set
  to ``X``;
* ``gemm<F>``: ``base`` with the prefill pool's dense linears (attention projections, shared
  experts, dense MLP layers) ``F`` times slower than the node's GEMM rate (SGLang with
  ``SGLANG_ENABLE_JIT_DEEPGEMM`` false runs block-FP8 linears on FlashInfer's TRT-LLM GEMM;
  sgl-project/sglang#13528 times it 5.7-6.3x slower than DeepGEMM at m = 1,024-2,048,
  N = 24,576, K = 7,168 on GB200).
* ``dgemm<F>``: ``gemm<F>`` in both pools (the recipe's ``SGLANG_ENABLE_JIT_DEEPGEMM`` sits in
  both pools' environment, so the decode pool's verify steps run the same linears;
  docs/changes/2026-12-07f/front2.md);
* ``al<X>``: ``base`` with the decode pool's acceptance length set to ``X`` (the prior for
  InferenceX's prompts is InferenceX PR #649's 2.50 at K = 3, chained to lower K);
* ``dslow<F>``: ``base`` with the decode pool's step ``F`` times as long (every term: a
  what-if for an unexplained decode-step error, no source).

Example::

    PYTHONPATH=$PWD python scripts/r1_prefill_whatif.py ixh-0786 a2a,base,gemm6.1 \\
        --profile /tmp/held_out.yaml
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.ep_accuracy import public_files_default  # noqa: E402


def _rows() -> pd.DataFrame:
    frames = (pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default())
    return pd.concat(frames).set_index("id")


def completion_rate(finish_s: np.ndarray) -> float:
    """Requests finished per second over ``finish_s`` (the kept requests of a run) [req/s]:
    below the arrival rate when a pool is saturated and its queue grows through the run
    (``closed_loop``'s Little's-law rate is then above what the pools serve)."""
    f = np.sort(finish_s[np.isfinite(finish_s)])
    return (len(f) - 1) / (f[-1] - f[0]) if len(f) > 1 and f[-1] > f[0] else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("row", help="a disaggregated concurrency row id, e.g. ixh-0786")
    ap.add_argument("cases", help="a2a,base,imb0,gemm6.1,al2.2,dslow1.28+al2.2")
    ap.add_argument("--profile", help="efficiency profile (default: the bundled one)")
    a = ap.parse_args(argv)
    import planner.catalog.profile as profile_mod

    if a.profile:  # the disaggregated path resolves the default profile
        profile_mod.DEFAULT_PROFILE = Path(a.profile)
    from planner.benchmarks.disagg_rows import _lengths, build_spec_row
    from planner.benchmarks.schema import number
    from planner.catalog import load_catalog
    from planner.serving.disagg_sizing import closed_loop
    from planner.workload.workload import make_requests

    rows = _rows()
    r = dict(rows.loc[a.row])
    r["id"] = a.row
    measured = float(r["value"])
    built = build_spec_row(r, load_catalog())
    if isinstance(built, str):
        print(f"{a.row}: not predicted ({built})")
        return 1
    d, _ = built
    conc, lens = number(r, "concurrency"), _lengths(r)
    rng = np.random.default_rng(20240601)  # disagg_rows._run's draw
    n = int(max(600, 3 * conc))
    i = rng.integers(lens[0][0], lens[0][1] + 1, n)
    o = np.maximum(rng.integers(lens[1][0], lens[1][1] + 1, n), 1)
    reqs = make_requests(np.cumsum(rng.exponential(1.0, n)), i, o)
    keep = slice(n // 4, n - n // 8)
    scale = {"output_tok_s_total": float(o.mean()), "total_tok_s": float(i.mean() + o.mean())}
    if r["metric"] not in scale:
        print(f"{a.row}: metric {r['metric']} is not a throughput")
        return 1
    plain = dict(
        r,
        notes=re.sub(
            r"; MoE dispatch \([^;]*;[^)]*\): prefill [\w-]+, decode [\w-]+", "", r["notes"]
        ),
    )

    def slow(sm, f):
        return dataclasses.replace(
            sm,
            matmul_slow_flops_per_token=sm.matmul_slow_flops_per_token
            + (f - 1.0) * sm.matmul_flops_per_token,
        )

    def scaled(sm, f):
        """``sm`` with its bandwidths, peak and link divided and its fixed times multiplied by
        ``f``: every term of a step ``f`` times as long."""
        p = sm.params.with_(
            step_overhead_s=sm.params.step_overhead_s * f,
            layer_overhead_s=sm.params.layer_overhead_s * f,
            seq_overhead_s=sm.params.seq_overhead_s * f,
            comm_latency_s=sm.params.comm_latency_s * f,
            eager_layer_s=sm.params.eager_layer_s * f,
        )
        return dataclasses.replace(
            sm,
            params=p,
            bw_bytes_s=sm.bw_bytes_s / f,
            peak_flops=sm.peak_flops / f,
            link_bytes_s=sm.link_bytes_s / f,
        )

    def pool(dd, name, sm=None, spec=None):
        rep = getattr(dd, name)
        rep = dataclasses.replace(rep, sm=sm if sm is not None else rep.sm)
        if spec is not None:
            rep = dataclasses.replace(rep, spec=spec)
        return dataclasses.replace(dd, **{name: rep})

    def apply(dd, c):
        """``dd`` with one change ``c`` (None: unknown or not applicable)."""
        if c == "base":
            return dd
        if c == "a2a":
            return build_spec_row(plain, load_catalog())[0]
        if c.startswith("imb"):  # the prefill pool's routing skew set to this value
            x = float(c[3:])  # both the decode and the prompt tokens' skew
            sm = dd.prefill.sm
            params = sm.params.with_(moe_imbalance=x, moe_imbalance_prompt=x)
            return pool(dd, "prefill", dataclasses.replace(sm, params=params))
        if c.startswith("gemm"):
            return pool(dd, "prefill", slow(dd.prefill.sm, float(c[4:])))
        if c.startswith("dgemm"):  # the dense linears slower in both pools
            f = float(c[5:])
            dd = pool(dd, "prefill", slow(dd.prefill.sm, f))
            return pool(dd, "decode", slow(dd.decode.sm, f))
        if c.startswith("al"):  # the decode pool's acceptance length
            sp = dd.decode.spec
            if sp is None:
                return None
            return pool(
                dd, "decode", spec=sp.model_copy(update={"acceptance_length": float(c[2:])})
            )
        if c.startswith("dslow"):  # every term of the decode step F times as long
            return pool(dd, "decode", scaled(dd.decode.sm, float(c[5:])))
        return None

    print(f"{d.label()}: measured {r['metric']} {measured:,.0f} tok/s")
    for c in a.cases.split(","):
        dd = d
        for part in c.split("+"):  # changes combined with '+': dslow1.28+al2.2
            dd = apply(dd, part) if dd is not None else None
        if dd is None:
            print(f"unknown or inapplicable case {c!r}")
            return 2
        rate, res = closed_loop(dd, reqs, float(conc), iters=14)
        v = rate * scale[r["metric"]]
        done = completion_rate(res.finish_s[keep])
        print(
            f"  {c}: {v:,.0f} tok/s, predicted / measured {v / measured:.3f}; "
            f"TTFT median {np.median(res.ttft_s[keep]):.1f} s, "
            f"TPOT median {np.nanmedian(res.tpot_s[keep]) * 1e3:.1f} ms; the run's "
            f"completions {done:.2f} req/s against {rate:.2f} arriving "
            f"({done * scale[r['metric']] / measured:.3f} of measured at that rate)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
