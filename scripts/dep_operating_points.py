"""MLPerf v6.0 DeepSeek-R1 Server rows on one 8-GPU DEP8 server: the decode step at the
measured batch, and the operating points the step model allows at the run's rate (issue 29,
docs/changes/2026-12-07e/b200dep.md).

Held out by source (``run_validation(holdout=["MLPerf Inference v6.0 DeepSeek-R1"])``, the
parameters each row is predicted with, read as ``scripts/r1_decode_parts.py`` reads them), one
line per 8-GPU Server row:

* ``meas_rank``: decoding sequences per attention-DP rank in the measured run, Little's law
  (output tok/s x mean TPOT / 8 ranks);
* ``step_meas`` / ``padded_meas``: the model's decode step of that many sequences at the
  time-weighted mean context of a decoding sequence (mean ISL + E[OSL^2] / (2 E[OSL]) of the
  MLPerf DeepSeek-R1 set: 5,188 tokens), without and with the CUDA-graph padding of the
  row's captured sizes (TensorRT-LLM ``_get_padded_batch``: every rank runs the busiest
  rank's batch rounded up to a captured size, ``planner.engine.adp.graph_padded``), and its
  parts (GEMM, attention, communication, fixed);
* ``fixed_points``: the per-rank batches ``s`` where the padded step curve meets Little's line
  of the run's rate, ``8 s = lambda x (OSL - 1) x step(8 s)`` (lambda: samples/s of the run,
  OSL: its mean generated tokens per sample), scanned on ``s`` = 8 .. 640; ``+`` marks a
  stable one (the line crosses the curve from above). TPOT is read as the decode step alone
  (prompt steps add a few per cent), so the points are a diagnosis, not a prediction.

Usage (repository root, about 2 min on two shared cores)::

    PYTHONPATH=$PWD python scripts/dep_operating_points.py [--csv OUT.csv]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.benchmarks.schema import graph_padding_sizes, row_parallel_layout  # noqa: E402
from planner.calibration.fit import public_files_default  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402
from planner.engine.phases import decode_step  # noqa: E402
from planner.engine.step import step_model  # noqa: E402
from planner.workload.presets import mlperf_deepseek_r1_lengths  # noqa: E402

SOURCE = "MLPerf Inference v6.0 DeepSeek-R1"


def decode_context_tokens(n: int = 200_000, seed: int = 0) -> float:
    """The mean context of a decoding sequence at a random time in a steady run of the MLPerf
    DeepSeek-R1 set [tokens]: ``E[ISL] + E[OSL^2] / (2 E[OSL])`` (a sequence is seen in
    proportion to its answer's length, half-way through it on average)."""
    inp, out = mlperf_deepseek_r1_lengths()
    rng = np.random.default_rng(seed)
    i = np.asarray(inp.sample(n, rng), float)
    o = np.asarray(out.sample(n, rng), float)
    return float(i.mean() + (o * o).mean() / (2.0 * o.mean()))


def fixed_points(per_rank: np.ndarray, step_s: np.ndarray, rate_tok_s: float, ranks: int):
    """Where Little's line of a run meets a step curve: the per-rank batches ``s`` with
    ``ranks x s = rate_tok_s x step(s)`` (decoding sequences = generated tokens per second x
    seconds per token), found as sign changes of ``h(s) = rate_tok_s x step(s) - ranks x s``
    on the grid, each interpolated linearly; stable where ``h`` falls through 0 (more
    sequences than the line holds drain, fewer fill up).

    Parameters
    ----------
    per_rank : ascending grid of sequences per rank [1]
    step_s : the step time at each grid point [s]
    rate_tok_s : the run's generated tokens per second, all ranks [tok/s]
    ranks : attention-DP ranks [1]

    Returns
    -------
    list of (per-rank batch [1], stable [bool])
    """
    s = np.asarray(per_rank, float)
    h = rate_tok_s * np.asarray(step_s, float) - ranks * s
    out = []
    for j in range(len(s) - 1):
        if h[j] == 0.0 or h[j] * h[j + 1] < 0.0:
            x = s[j] + (s[j + 1] - s[j]) * h[j] / (h[j] - h[j + 1]) if h[j] != h[j + 1] else s[j]
            out.append((float(x), bool(h[j] > h[j + 1])))
    return out


def table() -> pd.DataFrame:
    """One line per 8-GPU Server TPOT-mean row of :data:`SOURCE`, held out."""
    import r1_decode_parts as rp  # the held-out parameters of each row, as validate picks them

    loso, used = rp.held_out_params(SOURCE)
    rows = pd.concat(
        pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()
    ).set_index("id")
    cat = load_catalog()
    ctx = decode_context_tokens()
    pred = loso.set_index(["id", "metric"])["predicted"]
    grid = np.arange(8.0, 641.0, 1.0)
    recs = []
    for rid in sorted(set(loso["id"])):
        m = rows.loc[rid]
        if m["metric"] != "tpot_ms_mean" or m["n_gpus"] != "8" or rid not in used:
            continue
        run = rows[rows["source_detail"] == m["source_detail"]]
        thr = float(run.loc[run["metric"] == "output_tok_s_total", "value"].iloc[0])
        tpot = float(m["value"])
        lay = row_parallel_layout(m)
        dp = lay.attention_dp
        sm = step_model(m["model"], m["hardware"], m["precision"], m["kv_precision"] or None,
                        layout=lay, params=used[rid], catalog=cat)  # fmt: skip
        smp = replace(
            sm, graph_sizes=tuple(float(x) for x in graph_padding_sizes(m["notes"]) or ())
        )
        n = thr * tpot / 1e3
        b, bp = decode_step(sm, n, ctx), decode_step(smp, n, ctx)
        samples = re.search(r"tokens/s [\d.]+ / samples/s ([\d.]+)", m["notes"])
        gen = re.search(r"mean generated tokens per sample (\d+)", m["notes"])
        lam = float(samples.group(1)) if samples else float(m["request_rate"])
        rate = lam * (float(gen.group(1)) - 1.0) if gen else thr
        curve = decode_step(smp, grid * dp, ctx).time_s
        fps = fixed_points(grid, curve, rate, dp)
        ms = 1e3
        recs.append({
            "id": rid, "gpu": m["hardware"], "system": m["source_detail"].split("/results/")[1].split("/")[0],
            "qps": lam, "meas_rank": n / dp, "tpot_meas": tpot,
            "tpot_pred": float(pred.get((rid, "tpot_ms_mean"), np.nan)),
            "step_meas": b.time_s * ms, "padded_meas": bp.time_s * ms,
            "padded/meas": bp.time_s * ms / tpot,
            "gemm": bp.t_gemm_s * ms, "attn": bp.t_attn_s * ms, "comm": bp.t_comm_s * ms,
            "fixed": bp.t_overhead_s * ms,
            "fixed_points": " ".join(f"{x:.0f}{'+' if st else '-'}" for x, st in fps),
        })  # fmt: skip
    return pd.DataFrame(recs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", help="also write the table here")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "scripts"))
    t = table()
    pd.set_option("display.width", 250)
    print(f"decode context {decode_context_tokens():.0f} tokens (time-weighted mean)")
    print(t.round(2).to_string(index=False))
    if a.csv:
        t.to_csv(a.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
