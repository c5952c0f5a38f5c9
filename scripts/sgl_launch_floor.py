"""SGLang DeepSeek-R1 on B200 / B300, launch by launch: the measured TPOT at low concurrency
against the decode step's parts, to show where a launch's per-step floor sits (issue 29 item 1,
docs/changes/2026-12-07e/fp4step.md).

For every InferenceX (open results and history) and SGLang cookbook DeepSeek-R1 TPOT row of
SGLang on one B200 / B300 server (single node, no MTP), grouped by (GPU, image, precision,
layout, ISL / OSL, concurrency): the measured median TPOT [ms]; the decode step of
``concurrency`` sequences at the mean context (0.9 x ISL + OSL / 2) with the row's parameters
from a profile (default: the bundled one, i.e. IN SAMPLE: a diagnosis, not a held-out
score), split into the bytes / FLOPs parts (GEMM, attention, collective bytes) and the floor
(``collectives x comm_latency_s`` + ``step_overhead_s + layer_overhead_s x layers`` +
``seq_overhead_s x batch``); and ``resid`` = measured - (GEMM + attention + collective bytes):
the floor the measurement leaves, to compare with the model's ``floor``. The fitted fields
of the node used are printed with it.

``--item1 CSV`` instead reads saved held-out predictions (``ep_accuracy.py --save``) and
prints issue 29 item 1 (EP + DEP TPOT MdAPE, rows within 25 %) as saved and with the SGLang
NVFP4 TP+EP rows' predicted TPOT lowered by each ``--delta-ms``: a WHAT-IF that sizes the
per-step term those rows lack, not the score of any built term.

Usage::

    python scripts/sgl_launch_floor.py [--max-conc 4] [--profile data/calibration/profile.yaml]
    python scripts/sgl_launch_floor.py --item1 ep.csv --delta-ms 0.5,1.0,1.5
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.benchmarks.schema import row_parallel_layout  # noqa: E402
from planner.calibration.fit import prepare_rows, public_files_default  # noqa: E402
from planner.calibration.release_fit import release_params_for_row  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402
from planner.catalog.profile import load_profile  # noqa: E402
from planner.engine.phases import decode_step  # noqa: E402
from planner.engine.step import step_model  # noqa: E402

GPUS = ("nvidia-b200", "nvidia-b300")
SOURCES = ("SemiAnalysis InferenceX", "SGLang cookbook")


def launch_rows(max_conc: int) -> pd.DataFrame:
    """The SGLang DeepSeek-R1 single-node TPOT rows on B200 / B300 the table covers."""
    df = pd.concat(
        [pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()]
    )
    keep = (
        (df["framework"] == "sglang") & df["hardware"].isin(GPUS) & (df["model"] == "deepseek-v3")
        & df["metric"].isin(["tpot_ms_median", "tpot_ms_mean"])
        & df["source"].str.startswith(SOURCES) & ~df["notes"].str.contains("layout_unsupported")
        & (pd.to_numeric(df["concurrency"], errors="coerce") <= max_conc)
    )  # fmt: skip
    return df[keep]


def floor_table(df: pd.DataFrame, profile_path: str | None) -> pd.DataFrame:
    """One line per group of rows: measured TPOT, the decode step's parts, the residual floor."""
    cat = load_catalog()
    prof = load_profile(profile_path)
    prepared = {r.id: r for r in prepare_rows(df, cat)}
    recs = []
    for m in df.to_dict("records"):
        pr = prepared.get(m["id"])
        if pr is None or (pr.reason and not pr.reason.startswith("serving row")):
            continue
        isl = re.search(r"(?:random_input_len=|input_len=|input )(\d+)", m["notes"])
        osl = re.search(r"(?:random_output_len=|output_len=|output )(\d+)", m["notes"])
        isl, osl = int(isl.group(1)) if isl else 1000, int(osl.group(1)) if osl else 1000
        p, prov, used, _ = release_params_for_row(pr, prof, cat)
        lay = row_parallel_layout(m)
        sm = step_model(m["model"], m["hardware"], m["precision"], m["kv_precision"] or None,
                        layout=lay, params=p, catalog=cat)  # fmt: skip
        c = float(m["concurrency"])
        b = decode_step(sm, c, 0.9 * isl + osl / 2)
        lat = sm.collectives * p.comm_latency_s
        fixed = float(b.t_overhead_s)
        ms = 1e3
        img = re.search(r"sglang:(v[\w.]+?)(?:-cu|\s|$)", m["framework_version"])
        recs.append({
            "gpu": m["hardware"].replace("nvidia-", ""), "src": m["source"].split()[0],
            "img": img.group(1) if img else (m["framework_version"] or "-")[:10],
            "prec": m["precision"], "layout": lay.label, "isl/osl": f"{isl}/{osl}", "conc": int(c),
            "meas": float(m["value"]), "step": float(b.time_s) * ms,
            "gemm": float(b.t_gemm_s) * ms, "attn": float(b.t_attn_s) * ms,
            "comm_bytes": (float(b.t_comm_s) - lat) * ms, "floor": (lat + fixed) * ms,
            "resid": float(m["value"]) - (float(b.t_gemm_s) + float(b.t_attn_s) + float(b.t_comm_s) - lat) * ms,
            "layer_oh_us": p.layer_overhead_s * 1e6, "step_oh_us": p.step_overhead_s * 1e6,
            "comm_lat_us": p.comm_latency_s * 1e6, "mem_eff": p.mem_eff, "node": prov.split(";")[0],
        })  # fmt: skip
    d = pd.DataFrame(recs)
    keys = ["gpu", "src", "img", "prec", "layout", "isl/osl", "conc"]
    g = d.groupby(keys, sort=True)
    out = g.median(numeric_only=True)
    out.insert(0, "rows", g.size())
    out["node"] = g["node"].first()
    return out.round(2).reset_index()


def item1_whatif(loso: pd.DataFrame, deltas_ms) -> pd.DataFrame:
    """Issue 29 item 1 on saved held-out predictions ``loso`` (``ep_accuracy.py --save``):
    EP + DEP TPOT rows, their MdAPE [%] and rows within 25 %, as saved (delta 0) and with the
    SGLang NVFP4 TP+EP rows on B200 / B300 predicted ``delta`` ms faster (a what-if)."""
    t = loso[loso["layout_kind"].isin(("TP+EP", "DEP / DP-attention"))]
    t = t[t["metric"].str.startswith(("tpot", "itl"))]
    sel = (
        (t["framework"] == "sglang") & t["gpu"].isin(GPUS)
        & t["precision"].astype(str).str.contains("fp4") & (t["layout_kind"] == "TP+EP")
    )  # fmt: skip
    meas = t["measured"].astype(float)
    recs = []
    for dm in (0.0, *deltas_ms):
        pred = t["predicted"].astype(float).where(~sel, t["predicted"].astype(float) - dm)
        ape = (pred - meas).abs() / meas
        recs.append({
            "delta_ms": dm, "rows": len(t), "sources": t["source"].nunique(),
            "TPOT MdAPE %": round(100 * float(ape.median()), 1), "within 25%": int((ape <= 0.25).sum()),
            "SGLang NVFP4 rows": int(sel.sum()), "their MdAPE %": round(100 * float(ape[sel].median()), 1),
        })  # fmt: skip
    return pd.DataFrame(recs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-conc", type=int, default=4, help="highest concurrency kept (default 4)")
    ap.add_argument("--profile", help="profile YAML (default: the bundled one, in sample)")
    ap.add_argument("--save", help="write the table to this CSV")
    ap.add_argument(
        "--item1", help="saved held-out predictions (ep_accuracy.py --save): item 1 what-if"
    )
    ap.add_argument("--delta-ms", default="0.5,1.0,1.5", help="with --item1: comma-separated ms")
    a = ap.parse_args(argv)
    if a.item1:
        deltas = [float(x) for x in a.delta_ms.split(",") if x]
        print(item1_whatif(pd.read_csv(a.item1), deltas).to_string(index=False))
        return 0
    t = floor_table(launch_rows(a.max_conc), a.profile)
    if a.save:
        t.to_csv(a.save, index=False)
    with pd.option_context(
        "display.width", 300, "display.max_rows", 500, "display.max_colwidth", 70
    ):
        print(t.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
