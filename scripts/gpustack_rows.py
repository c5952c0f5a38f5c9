"""Per-row diagnosis of GPUStack performance lab's vLLM serving rows (issue 32).

Usage::

    PYTHONPATH=$PWD python scripts/gpustack_rows.py [--details CSV] [--cache F] [-o OUT.md]
        [--comm-floor X]

Fits a profile without "GPUStack performance lab" (the held-out fit ``planner validate
--holdout`` makes; kept in ``--cache``, a pickle) and prints, per GPUStack vLLM burst case
(one model, GPU, precision, layout, prompt length): the measured and held-out predicted mean
TTFT / TPOT (from ``--details``, the CSV ``planner validate --details`` writes), the
held-out parameters (compute_eff, comm_eff), and the parts of two steps under those
parameters: a prefill step of one full chunk (``max_num_batched_tokens``: the row's flag,
else the engine's default on that GPU) and a decode step of the burst's batch (the
request count capped at ``max_num_seqs``) at the mean context.

The burst (``request rate inf``) TTFT mean is about half the time to prefill every prompt
(the page's 2K cases: 26,861 ms against 55.28 s / 2), so the measured prefill rate is read
as ``requests x ISL / (2 x mean TTFT)`` [tok/s], compared with the predicted chunk rate
``chunk / prefill step``. ``--comm-floor``: fit with comm_eff bounded below (an experiment;
the cache key carries it).
"""

from __future__ import annotations

import argparse
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import planner.calibration.fit as fit
from planner.benchmarks.io import load_measurements
from planner.catalog.catalog import load_catalog
from planner.catalog.layout import Layout
from planner.catalog.profile import model_family, resolve_params
from planner.engine.step import step_model

SOURCE = "GPUStack performance lab"


def _profile(cache: Path, floor: float | None):
    key = f"{SOURCE}|floor={floor}"
    got = pickle.loads(cache.read_bytes()) if cache.exists() else {}
    if key in got:
        return got[key]
    if floor:
        lo, hi, w = fit.FIT_BOUNDS["comm_eff"]
        fit.FIT_BOUNDS["comm_eff"] = (floor, hi, w)
    cat = load_catalog()
    rows = fit.prepare_rows(load_measurements(fit.public_files_default(), cat), cat)
    own = fit.prepare_rows(load_measurements(fit.own_files_default(), cat), cat)
    train = [r for r in rows if r.source != SOURCE and (r.ok or r.steady)]
    train += [r for r in own if r.ok or r.steady]
    targets = [
        (r.vendor or None, r.framework, r.arch, r.gpu, r.precision or None, r.family)
        for r in rows
        if r.source == SOURCE and r.vendor != "?"
    ]
    print("fitting without", SOURCE, file=sys.stderr, flush=True)
    got[key] = fit.fit_profile(train, targets=targets)
    cache.write_bytes(pickle.dumps(got))
    return got[key]


def _chunk(row: dict, cat) -> tuple[int, int]:
    fw = cat.framework("vllm")
    seqs, btok = fw.scheduler_defaults(
        cat.gpu(row["hardware"]), row["framework_version"], row["as_of"]
    )
    m = re.search(r"max_num_batched_tokens=(\d+)", row["notes"])
    return seqs, int(m.group(1)) if m else int(btok or 8192)


def table(details: str, profile, cat) -> pd.DataFrame:
    """One line per (model, GPU, precision, TP, ISL) burst case with its step parts [ms]."""
    d = pd.read_csv(details)
    d = d[d.source.eq(SOURCE) & d.framework.eq("vllm")]
    rows = pd.concat(
        pd.read_csv(f, dtype=str, keep_default_na=False) for f in fit.public_files_default()
    ).set_index("id")
    out = []
    for _, r in d[d.metric.isin(["ttft_ms_mean", "tpot_ms_mean"])].iterrows():
        row = rows.loc[r["id"]].to_dict()
        isl, osl = int(row["isl"]), int(row["osl"])
        n = int(re.search(r"(\d+) requests completed", row["notes"]).group(1))
        tp = int(row["tp"] or 1)
        m = cat.model_ref(row["model"])
        p, prov = resolve_params(
            row["hardware"], "vllm", row["precision"], profile=profile, catalog=cat,
            family=model_family(m),
        )  # fmt: skip
        sm = step_model(m, row["hardware"], row["precision"], None, params=p, catalog=cat,
                        layout=Layout(tp=tp))  # fmt: skip
        seqs, chunk = _chunk(row, cat)
        k = max(1, chunk // isl)  # whole prompts per chunk (one partial prompt when ISL > chunk)
        toks = min(chunk, k * isl)
        pairs = k * isl * (isl + 1) / 2 if isl <= chunk else chunk * (isl / 2)
        pf = sm.step(toks, k, k, toks, pairs)
        b = min(n, seqs)
        ctx = isl + osl / 2
        dc = sm.step(b, b, b, b * ctx, b * ctx)
        out.append(
            dict(
                id=r["id"],
                metric=r["metric"],
                gpu=row["hardware"].replace("nvidia-", ""),
                model=row["model"],
                prec=row["precision"],
                tp=tp,
                isl=isl,
                n=n,
                meas=r["measured"],
                pred=r["predicted"],
                err_pct=100 * np.expm1(r["log_err"]),
                compute_eff=p.compute_eff,
                comm_eff=p.comm_eff,
                chunk=chunk,
                pf_gemm=1e3 * pf.t_gemm_s,
                pf_attn=1e3 * pf.t_attn_s,
                pf_comm=1e3 * pf.t_comm_s,
                pf_fixed=1e3 * pf.t_overhead_s,
                pf_rate_pred=toks / pf.time_s,
                pf_rate_meas=n * isl / (2e-3 * r["measured"])
                if r["metric"] == "ttft_ms_mean"
                else np.nan,
                dec_b=b,
                dec_gemm=1e3 * dc.t_gemm_s,
                dec_attn=1e3 * dc.t_attn_s,
                dec_comm=1e3 * dc.t_comm_s,
                dec_fixed=1e3 * dc.t_overhead_s,
                node=prov[:60],
            )  # fmt: skip
        )
    return pd.DataFrame(out)


def _md(df: pd.DataFrame) -> str:
    """A Markdown table (no tabulate dependency)."""
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--details", required=True, help="planner validate --details CSV")
    ap.add_argument("--cache", default="/tmp/gpustack_rows_profiles.pkl")
    ap.add_argument("--comm-floor", type=float, default=None)
    ap.add_argument("-o", "--output", default=None, help="Markdown table")
    a = ap.parse_args(argv)
    cat = load_catalog()
    prof = _profile(Path(a.cache), a.comm_floor)
    t = table(a.details, prof, cat)
    pd.set_option("display.width", 250)
    cols = ["gpu", "model", "prec", "tp", "isl", "n", "meas", "pred", "err_pct", "compute_eff",
            "comm_eff", "chunk", "pf_gemm", "pf_attn", "pf_comm", "pf_fixed", "pf_rate_pred",
            "pf_rate_meas", "dec_b", "dec_gemm", "dec_attn", "dec_comm", "dec_fixed"]  # fmt: skip
    for metric in ("ttft_ms_mean", "tpot_ms_mean"):
        s = t[t.metric == metric].sort_values(["model", "gpu", "prec", "tp", "isl"])
        print(f"== {metric}: n {len(s)}, MdAPE {s.err_pct.abs().median():.1f}%, "
              f"bias {s.err_pct.median():+.1f}%")  # fmt: skip
        print(s[cols].round(3).to_string(index=False))
    if a.output:
        Path(a.output).write_text(_md(t[["metric", *cols]].round(3)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
