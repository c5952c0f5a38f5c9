"""The DEP / DP-attention TPOT rows, one line per run: measured and held-out TPOT, the
decoding sequences per attention rank (measured by Little's law, simulated), and the decode
step the planner adds up at both (issue 29, TPOT of the EP / DEP rows; changes/deptpot.md).

Held out by source (``run_validation(holdout=SOURCES)``: each source is predicted by the
profile fitted without its rows), the script keeps, per serving row, the replica the
simulator built (wrapping ``serving_rows.build_replica``) and the simulation's metrics
(``serving_row_details``). For each TPOT row it then evaluates one decode step of the
replica at ``n`` sequences per attention rank and the mean decoding context (mean prompt +
mean answer / 2), split as :meth:`planner.engine.step.StepModel.step` does: GEMM, attention,
communication, fixed GPU overheads, plus the host time the engine charges per iteration
(``EngineConfig.host_time_s`` over the replica's sequences; overlapped as ``max(gpu, host)``
where ``host_overlap``), at ``n`` = the simulated and the measured count.

* measured sequences per rank: output tok/s x mean TPOT / GPUs (one attention rank per GPU
  in these layouts; for a median-TPOT row, the median);
* simulated: completed req/s x mean decode time / GPUs.

Usage (repository root; a few minutes on two shared cores)::

    PYTHONPATH=$PWD python scripts/dep_tpot_parts.py [--csv OUT.csv]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from planner.benchmarks import serving_rows  # noqa: E402
from planner.calibration import accuracy  # noqa: E402
from planner.calibration.fit import own_files_default, public_files_default  # noqa: E402
from planner.engine.phases import decode_step  # noqa: E402

SOURCES = (
    "MLPerf Inference v5.1 DeepSeek-R1",
    "MLPerf Inference v6.0 DeepSeek-R1",
    "SGLang DeepSeek-V3 H200 benchmark",
)
KEYS = ("output_tok_s_total", "tpot_ms_mean", "tpot_ms_median", "ttft_ms_mean", "req_s",
        "e2e_ms_mean", "ttft_ms_median", "e2e_ms_median", "queue_growth")  # fmt: skip


def _mean_context(row) -> float:
    """Mean context of a decoding sequence [tokens]: mean prompt + mean answer / 2."""
    isl, osl = serving_rows.number(row, "isl"), serving_rows.number(row, "osl")
    if isl is not None and osl is not None:
        return isl + osl / 2.0
    from planner.workload.presets import mlperf_deepseek_r1_lengths

    inp, out = mlperf_deepseek_r1_lengths()
    return inp.mean_tokens() + out.mean_tokens() / 2.0


def run(sources=SOURCES) -> pd.DataFrame:
    """One record per held-out DEP TPOT row."""
    seen: dict[str, dict] = {}
    reps: dict[str, object] = {}
    current: list[str] = [""]
    value, build = accuracy._serving_value, serving_rows.build_replica

    def keep(record, catalog, params, scale):
        rid = str(record["id"])
        current[0] = rid
        v = value(record, catalog, params, scale)
        if rid not in seen:
            d = serving_rows.serving_row_details(record, catalog, params, prefill_scale=scale)
            seen[rid] = {f"sim_{k}": d.get(k) for k in KEYS}
        return v

    def build_keep(*a, **kw):
        rep = build(*a, **kw)
        reps.setdefault(current[0], rep)
        return rep

    accuracy._serving_value = keep
    serving_rows.build_replica = build_keep
    try:
        res = accuracy.run_validation(
            public_files_default(), own_files_default(), kfold=False, holdout=list(sources)
        )
    finally:
        accuracy._serving_value = value
        serving_rows.build_replica = build
    loso = res["loso"]
    raw = pd.concat(
        pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()
    ).set_index("id")
    out = []
    tp = loso[loso["metric"].str.startswith("tpot")]
    for _, p in tp.iterrows():
        rid = p["id"]
        r = raw.loc[rid]
        if int(float(r["attention_dp"] or 1)) <= 1:
            continue
        # the rows of one run: same source detail, rate and GPUs
        same = ["source_detail", "request_rate", "n_gpus"]
        group = raw[(raw[same] == r[same]).all(axis=1)]
        meas = dict(zip(group["metric"], pd.to_numeric(group["value"]), strict=False))
        ids = list(group.index)
        rep = next((reps[i] for i in ids if i in reps), None)
        sim = next((seen[i] for i in ids if i in seen), {})
        n = float(r["n_gpus"])
        dp = int(float(r["attention_dp"]))
        si = re.search(r"stream_interval (\d+) \(", r["notes"])
        tpot_key = "tpot_ms_mean" if "tpot_ms_mean" in meas else "tpot_ms_median"
        rec = {
            "id": rid, "source": r["source"][:24], "gpu": r["hardware"],
            "system": (r["source_detail"].split("/results/")[1].split("/")[0]
                       if "/results/" in r["source_detail"] else r["framework_version"][:20]),
            "n_gpus": int(n), "dp": dp, "rate": float(r["request_rate"] or "nan"),
            "stream_interval": int(si.group(1)) if si else None, "metric": p["metric"],
            "meas": float(p["measured"]), "pred": float(p["predicted"]),
        }  # fmt: skip
        tok = meas.get("output_tok_s_total")
        rec["meas_per_rank"] = tok * meas[tpot_key] / 1e3 / n if tok else float("nan")
        e2e = sim.get("sim_e2e_ms_mean") or sim.get("sim_e2e_ms_median")
        ttft = sim.get("sim_ttft_ms_mean") or sim.get("sim_ttft_ms_median")
        rec["sim_per_rank"] = (
            sim["sim_req_s"] * (e2e - ttft) / 1e3 / n if e2e and sim.get("sim_req_s") else None
        )
        if rep is not None:
            ctx = _mean_context(r)
            eng = rep.engine
            rec["ctx"] = round(ctx)
            rec["host_overlap"] = eng.host_overlap
            for tag in ("sim", "meas"):
                k = rec[f"{tag}_per_rank"]
                if not k or k != k:
                    continue
                nrep = k * dp  # sequences of the replica (one rank per GPU: n / replicas = dp)
                b = decode_step(rep.sm, nrep, ctx)
                ms = 1e3
                host = eng.host_time_s(nrep)
                gpu = float(b.time_s)
                rec[f"{tag}_step"] = ms * (max(gpu, host) if eng.host_overlap else gpu + host)
                if tag == "meas":
                    rec.update({
                        "gemm": ms * float(b.t_gemm_s), "attn": ms * float(b.t_attn_s),
                        "comm": ms * float(b.t_comm_s), "fixed": ms * float(b.t_overhead_s),
                        "host": ms * host,
                    })  # fmt: skip
        out.append(rec)
    return pd.DataFrame(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", help="also write the table here")
    a = ap.parse_args(argv)
    t = run().sort_values(["source", "gpu", "rate", "metric"])
    pd.set_option("display.width", 300)
    print(t.drop(columns=["id"]).round(1).to_string(index=False))
    if a.csv:
        t.to_csv(a.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
