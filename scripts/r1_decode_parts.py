"""DeepSeek-R1 decode on one 8-GPU server, point by point: measured TPOT, TPOT held out, and
the predicted decode step's parts (issues 29 and 32, changes/r1decode.md).

For InferenceX's DeepSeek-R1 8-GPU rows (``public_inferencex*.csv``: H200 SGLang /
TensorRT-LLM, B200 / B300 SGLang / TensorRT-LLM, MI300X / MI325X / MI355X SGLang), held out
by source (``run_validation(holdout=["SemiAnalysis InferenceX"])``, the profile fitted
without any InferenceX row), one line per (GPU, framework, precision, layout, ISL / OSL,
concurrency): rows, measured and held-out predicted median TPOT [ms] and their ratio, then
the decode step of ``concurrency`` sequences at the mean context (0.9 x ISL + OSL / 2, the
random-range-ratio 0.8 midpoint) with the same parameters, split as ``StepModel.step`` does:
GEMM (weights incl. the expected distinct experts, and activations, or FLOPs when compute
bound), attention (KV read or MLA FLOPs), communication (all-reduce / dispatch), fixed
overheads; the weights read [GB] and their time at peak bandwidth. The simulator's TPOT adds
the scheduler's host time and the prompts' steps to this step (the gap between ``step`` and
``pred``).

The held-out parameters of each row are read by wrapping
``planner.calibration.accuracy.release_params_for_row`` (the one place the validation picks
them). About 1-2 min on two shared cores.

Usage::

    python scripts/r1_decode_parts.py [--save parts.csv]
    python scripts/r1_decode_parts.py --disagg ixh-0989,ixh-1514 --profile /tmp/held.yaml
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import planner.calibration.accuracy as acc  # noqa: E402
from planner.benchmarks.schema import row_parallel_layout  # noqa: E402
from planner.calibration.fit import own_files_default, public_files_default  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402
from planner.engine.phases import decode_step  # noqa: E402
from planner.engine.step import step_model  # noqa: E402


def held_out_params(holdout: str = "SemiAnalysis InferenceX"):
    """(per-row predictions, {row id: EfficiencyParams used}) of the held-out source."""
    used = {}
    orig = acc.release_params_for_row

    def wrap(r, prof, cat, *a, **kw):
        out = orig(r, prof, cat, *a, **kw)
        used[r.id] = out[0]
        return out

    acc.release_params_for_row = wrap
    try:
        res = acc.run_validation(
            public_files_default(), own_files_default(), kfold=False, holdout=[holdout]
        )
    finally:
        acc.release_params_for_row = orig
    return res["loso"], used


def parts_table(loso: pd.DataFrame, used: dict) -> pd.DataFrame:
    """One line per InferenceX DeepSeek-R1 8-GPU TPOT row: measured, predicted, step parts."""
    rows = pd.concat(
        [pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()]
    ).set_index("id")
    cat = load_catalog()
    recs = []
    for _, r in loso[loso["metric"] == "tpot_ms_median"].iterrows():
        m = rows.loc[r["id"]]
        if m["n_gpus"] != "8" or m["model"] != "deepseek-v3" or r["id"] not in used:
            continue
        isl = int(re.search(r"random_input_len=(\d+)", m["notes"]).group(1))
        osl = int(re.search(r"random_output_len=(\d+)", m["notes"]).group(1))
        lay = row_parallel_layout(m)
        p = used[r["id"]]
        sm = step_model(m["model"], m["hardware"], m["precision"], m["kv_precision"] or None,
                        layout=lay, params=p, catalog=cat)  # fmt: skip
        b = decode_step(sm, float(m["concurrency"]), 0.9 * isl + osl / 2)
        ms = 1e3
        recs.append({
            "gpu": m["hardware"], "fw": m["framework"], "prec": m["precision"],
            "layout": lay.label, "isl/osl": f"{isl}/{osl}", "conc": int(m["concurrency"]),
            "tpot_meas": float(r["measured"]), "tpot_pred": float(r["predicted"]),
            "step": b.time_s * ms, "gemm": b.t_gemm_s * ms, "attn": b.t_attn_s * ms,
            "comm": b.t_comm_s * ms, "fixed": b.t_overhead_s * ms,
            "weights_GB": b.weight_bytes / 1e9, "weights_at_peak": b.weight_bytes / sm.bw_bytes_s * ms,
            "kv_GB": b.kv_read_bytes / 1e9, "mem_eff": p.mem_eff, "kv_mem_eff": p.kv_mem_eff,
            "sched_ms": p.sched_overhead_s * ms, "node": r["provenance"].split(";")[0],
        })  # fmt: skip
    d = pd.DataFrame(recs)
    keys = ["gpu", "fw", "prec", "layout", "isl/osl", "conc"]
    g = d.groupby(keys, sort=True)
    out = g.median(numeric_only=True)
    out.insert(0, "rows", g.size())
    out.insert(3, "pred/meas", out["tpot_pred"] / out["tpot_meas"])
    out["node"] = g["node"].first()
    return out.round(2).reset_index()


def disagg_parts(ids: list[str], profile: str | None) -> pd.DataFrame:
    """The decode pool of disaggregated InferenceX rows ``ids`` (``disagg_rows``' build, its
    recipe's K and per-rank batch limit), one decode step of ``min(concurrency / decode
    replicas, limit x ranks)`` sequences at the mean context ``0.9 x ISL + OSL / 2``, split
    as :meth:`StepModel.step` does (attention: KV read or MLA FLOPs, whichever binds).
    ``profile``: a profile YAML (e.g. ``r1_frontier.py --profile``'s held-out fit; None:
    the bundled one)."""
    import planner.catalog.profile as profile_mod
    from planner.benchmarks.disagg_rows import build_spec_row
    from planner.benchmarks.schema import cell, number

    if profile:
        profile_mod.DEFAULT_PROFILE = Path(profile)
    rows = pd.concat(
        [pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()]
    ).set_index("id")
    cat = load_catalog()
    recs = []
    for i in ids:
        r = {"id": i, **rows.loc[i].to_dict()}
        got = build_spec_row(r, cat)
        if isinstance(got, str):
            recs.append({"id": i, "reason": got})
            continue
        d, lay = got
        sm, y = d.decode.sm, lay["y"]
        isl = int(re.search(r"(?:random_input_len=|nominal input )(\d+)", r["notes"]).group(1))
        osl = re.search(r"(?:random_output_len=|nominal input \d+ / output )(\d+)", r["notes"])
        osl = int(osl.group(1))
        cap = lay["decode"].get("max_num_seqs") or float("inf")
        batch = min(number(r, "concurrency") / y, cap * sm.attention_dp)
        b = decode_step(sm, batch, 0.9 * isl + osl / 2)
        ms, p = 1e3, sm.params
        recs.append({
            "id": i, "gpu": cell(r, "hardware"), "prec": cell(r, "precision"),
            "decode": f"{y} x {sm.layout_label}", "K": sm.spec_tokens,
            "seqs/rank": round(batch / sm.attention_dp, 1), "step": b.time_s * ms,
            "gemm": b.t_gemm_s * ms, "attn": b.t_attn_s * ms,
            "attn_mem": (b.kv_read_bytes + b.kv_write_bytes) / (sm.bw_bytes_s * p.kv_mem_eff) * ms,
            "attn_TFLOP": b.attention_flops / 1e12, "comm": b.t_comm_s * ms,
            "fixed": b.t_overhead_s * ms, "draft": b.t_draft_s * ms,
            "weights_GB": b.weight_bytes / 1e9, "kv_GB": b.kv_read_bytes / 1e9,
            "attn_eff": p.attn_eff, "kv_mem_eff": p.kv_mem_eff,
            "mla_TFLOPS": sm.mla_decode_flops_s / 1e12,
        })  # fmt: skip
    return pd.DataFrame(recs).round(2)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", help="write the table to this CSV")
    ap.add_argument(
        "--disagg",
        help="comma-separated disaggregated row ids: their decode pool's step parts instead",
    )
    ap.add_argument("--profile", help="with --disagg: the profile YAML (default: bundled)")
    a = ap.parse_args(argv)
    if a.disagg:
        t = disagg_parts(a.disagg.split(","), a.profile)
        with pd.option_context("display.width", 250, "display.max_columns", 50):
            print(t.to_string(index=False))
        if a.save:
            t.to_csv(a.save, index=False)
        return 0
    loso, used = held_out_params()
    t = parts_table(loso, used)
    if a.save:
        t.to_csv(a.save, index=False)
    with pd.option_context("display.width", 250, "display.max_rows", 500):
        print(t.drop(columns=["node"]).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
