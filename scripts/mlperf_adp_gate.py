"""What-if (diagnosis, nothing changes): the MLPerf DeepSeek-R1 Server runs' mean iteration at
the measured batch, with prompts admitted as the serving simulator admits them against as
TensorRT-LLM's attention-DP balance gate admits them (issue 29, TPOT of the EP / DEP rows;
changes/s14-mlperfr1.md).

The simulator admits waiting prompts at every iteration, and a balanced layout
(``Layout.attention_dp_balance``) spreads a step's prompt work evenly over the ranks
(:func:`planner.engine.adp.prompt_share` = 0). The engine does neither:

* ``_balance_adp_requests`` (``tensorrt_llm/_torch/pyexecutor/py_executor.py``) holds context
  requests until every rank has one, then ``batching_wait_iters`` more iterations, or until
  ``timeout_iters`` iterations have passed; the iterations in between are decode-only, so
  they replay a CUDA graph padded to a captured size (``_get_padded_batch``; no padding when
  any rank runs a prompt);
* new requests go whole to one rank each (``_balance_requests_across_ranks``: by request
  count and tokens), so the released iteration's busiest rank runs its own prompts whole
  (:func:`planner.engine.adp.busiest_rank_extra` with share 1).

For each 8-GPU-replica Server run (one line per run; the NVL72 systems' endpoints are DEP8
replicas too): decoding sequences a rank by Little's law (output tok/s x mean TPOT / GPUs),
prompts arriving a iteration ``lambda s`` (rate a replica x measured TPOT), the gate's window
``W`` (``gate_window``), and the step model's mean iteration at that batch three ways:
decode-only (padded), simulator-like (Poisson(lambda s) whole prompts every iteration, balanced)
and gated (``W`` padded decode iterations, then one iteration with the Poisson(lambda s
(W + 1)) held prompts, each whole on its rank). Bundled profile (in sample), the time-weighted
mean context of the set (5,188 tokens), prompt lengths drawn from
``workload.presets.mlperf_deepseek_r1_lengths``, seed 0.

Usage (repository root; about a minute)::

    PYTHONPATH=$PWD python scripts/mlperf_adp_gate.py
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.benchmarks.scheduler_waits import adp_balance  # noqa: E402
from planner.benchmarks.schema import graph_padding_sizes, row_parallel_layout  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402
from planner.catalog.profile import load_profile, resolve_params  # noqa: E402
from planner.engine.step import step_model  # noqa: E402
from planner.workload.presets import mlperf_deepseek_r1_lengths  # noqa: E402

DATA = ROOT / "data" / "benchmarks" / "public_mlperf_moe.csv"
DRAWS = 300


def gate_window(
    ranks: int, prompts_per_iteration: float, timeout_iters: int, wait_iters: int
) -> int:
    """Iterations a released batch of prompts was held [iterations], TensorRT-LLM's
    ``_balance_adp_requests``: every rank has a prompt after ``ceil(R / (lambda s))``
    iterations, then ``batching_wait_iters`` more; or the timeout comes first (no batching
    wait then). Example: R = 8, 0.59 prompts an iteration, timeout 9, wait 3: ceil(13.6) = 14
    >= 9, so W = 9; at 2 prompts an iteration: 4 + 3 = 7."""
    fill = math.ceil(ranks / prompts_per_iteration) if prompts_per_iteration > 0 else math.inf
    return int(fill + wait_iters) if fill < timeout_iters else int(timeout_iters)


def _step(sm, n, prompts, ctx, balanced):
    """One iteration [s]: ``n`` decoders at context ``ctx`` and the whole ``prompts``."""
    s2 = replace(sm, adp_balanced=balanced, params=sm.params.with_(adp_prompt_imbalance=1.0))
    P, k = float(sum(prompts)), len(prompts)
    pairs = n * ctx + sum(x * (x + 1) / 2 for x in prompts)
    return float(s2.step(n + P, n + k, n + k, n * ctx + P, pairs).time_s)


def table() -> pd.DataFrame:
    rows = pd.read_csv(DATA, dtype=str, keep_default_na=False)
    cat, prof = load_catalog(), load_profile()
    inp, out = mlperf_deepseek_r1_lengths()
    rng = np.random.default_rng(0)
    isl = np.asarray(inp.sample(200_000, rng), float)
    osl = np.asarray(out.sample(200_000, rng), float)
    ctx = isl.mean() + (osl * osl).mean() / (2.0 * osl.mean())
    recs = []
    for _, m in rows[(rows["mode"] == "server") & (rows["metric"] == "tpot_ms_mean")].iterrows():
        lay = row_parallel_layout(m)
        if lay.attention_dp <= 1:
            continue
        run = rows[(rows["source_detail"] == m["source_detail"]) & (rows["mode"] == "server")]
        tok = float(run.loc[run["metric"] == "output_tok_s_total", "value"].iloc[0])
        tpot = float(m["value"])
        gpus, dp = int(m["n_gpus"]), lay.attention_dp
        per_rank = tok * tpot / 1e3 / gpus
        lam_s = float(m["request_rate"]) * dp / gpus * tpot / 1e3
        t_it, b_it = adp_balance(m["notes"])
        W = gate_window(dp, lam_s, t_it, b_it)
        p, _ = resolve_params(m["hardware"], "trtllm", m["precision"], catalog=cat, profile=prof,
                              family=None)  # fmt: skip
        sm = step_model(m["model"], m["hardware"], m["precision"], m["kv_precision"] or None,
                        layout=lay, params=p, catalog=cat)  # fmt: skip
        sm = replace(sm, graph_sizes=tuple(float(x) for x in graph_padding_sizes(m["notes"]) or ()))
        n = per_rank * dp
        dec = _step(sm, n, [], ctx, True)
        sim = [
            _step(sm, n, list(rng.choice(isl, k)), ctx, True) if (k := rng.poisson(lam_s)) else dec
            for _ in range(DRAWS)
        ]
        gated = [
            (W * dec + _step(sm, n, list(rng.choice(isl, max(1, rng.poisson(lam_s * (W + 1))))),
                             ctx, False)) / (W + 1)
            for _ in range(DRAWS)
        ]  # fmt: skip
        recs.append({
            "round": m["source"].split()[2],
            "system": m["source_detail"].split("/results/")[1].split("/")[0],
            "gpu": m["hardware"].replace("nvidia-", ""), "qps": float(m["request_rate"]),
            "per_rank": round(per_rank), "prompts_per_it": round(lam_s, 2),
            "timeout/wait": f"{t_it}/{b_it}", "W": W, "tpot_meas": tpot,
            "decode_only": 1e3 * dec, "sim_like": 1e3 * np.mean(sim),
            "gated": 1e3 * np.mean(gated), "gated/sim": np.mean(gated) / np.mean(sim),
        })  # fmt: skip
    return pd.DataFrame(recs).sort_values(["round", "gpu", "qps"]).reset_index(drop=True)


def main() -> int:
    t = table()
    pd.set_option("display.width", 250)
    print(t.round(3).to_string(index=False))
    print(f"gated / simulator-like mean iteration: median {t['gated/sim'].median():.3f}, "
          f"range {t['gated/sim'].min():.3f}-{t['gated/sim'].max():.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
