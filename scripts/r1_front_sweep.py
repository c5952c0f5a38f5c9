"""The planner's own best DeepSeek-R1 8-GPU layout at each interactivity level, over
concurrencies between those InferenceX measured (issue 29, "Done when" item 2).

``ep_accuracy.deepseek_front_ix`` builds the planner's front from its held-out predictions
of the measured points only, so the planner's curve of a configuration is known only at the
concurrencies InferenceX ran (H200 TensorRT-LLM TP8 EP8 1k/1k: c4, c8, c32). This script
asks the planner for the rest: for each measured configuration (GPU, engine, precision,
layout, ISL/OSL; its newest measured row as the template: engine release, launch flags,
lengths), the closed loop of ``concurrency`` clients for every level of :data:`CONCS`
inside the configuration's measured concurrency range (beyond it the measured front has no
point to compare: InferenceX's TP8 sweeps stop at 64 clients), with
the **held-out parameters** that the InferenceX fold of ``planner validate --holdout`` gives
that row (``r1_decode_parts.held_out_params``: the profile fitted without any InferenceX
row), ``10 x concurrency`` requests as InferenceX runs them. The planner's front of each
configuration group is then read as InferenceX's calculator reads it
(``scripts/ix_pareto.py``) and set against the measured front read the same way.

What the template keeps: the launch's flags as the row states them (CUDA-graph sizes, max
running requests, chunk size). InferenceX's DEP recipes tie the CUDA-graph batch to the
concurrency (``CONC / 4``); those configurations are swept with the template's graph sizes
and say so (``graphs from c=``).

Usage (from the repository root; the held-out fold ~4 min, the sweep a few more)::

    python scripts/r1_front_sweep.py --params /tmp/r1params.pkl --save /tmp/r1sweep.csv
    python scripts/r1_front_sweep.py --load /tmp/r1sweep.csv   # the tables again
"""

from __future__ import annotations

import argparse
import pickle
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from ep_accuracy import _int, _lengths, deepseek_points  # noqa: E402
from ix_pareto import value_at  # noqa: E402

from planner.calibration.accuracy import _md_table  # noqa: E402
from planner.calibration.fit import public_files_default  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402

GPUS = ("nvidia-h200-sxm", "nvidia-b200", "amd-mi355x")
LEVELS = (20.0, 40.0, 60.0)
#: concurrencies asked for each configuration, inside its measured range (InferenceX
#: sweeps TP 4 to 64, DEP up to 1024)
CONCS = (1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128, 192, 256, 384, 512, 1024)
THR, TPOT = "output_tok_s_total", "tpot_ms_median"
_COUNT = re.compile(r"\b(\d[\d,]*) requests\b")
_PROMPTS = re.compile(r"--num-prompts \d+")
_CONC = re.compile(r"--max-concurrency \d+")


def configurations(loso: pd.DataFrame, used: dict, gpus=GPUS) -> pd.DataFrame:
    """One template row per (GPU, engine, precision, layout, ISL/OSL): the newest measured
    output-throughput row of InferenceX's 8-GPU DeepSeek-R1 points whose held-out parameters
    were captured."""
    rows = pd.concat(
        [pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()],
        ignore_index=True,
    ).set_index("id")
    ix = loso[loso["source"].str.contains("InferenceX") & (loso["metric"] == THR)]
    ix = ix[ix["id"].isin(list(used))]
    meta = rows.loc[ix["id"]].copy()
    meta = meta[(meta["n_gpus"] == "8") & meta["hardware"].isin(gpus)]
    meta = meta[meta["model"] == "deepseek-v3"]
    meta["lengths"] = [_lengths(n) for n in meta["notes"]]
    meta["layout"] = [
        f"TP{_int(t)}" + (f" EP{_int(e)}" if _int(e) > 1 else "")
        + (f" DP-attn{_int(a)}" if _int(a) > 1 else "")
        for t, e, a in zip(meta["tp"], meta["ep"], meta["attention_dp"], strict=True)
    ]  # fmt: skip
    meta["concurrency_n"] = pd.to_numeric(meta["concurrency"])
    # the catalog's precision id (mxfp4 -> fp4), as ``deepseek_points`` names it
    meta["precision"] = ix.set_index("id").loc[meta.index, "precision"].to_numpy()
    meta = meta.reset_index().sort_values(["as_of", "id"])
    keys = ["hardware", "framework", "precision", "layout", "lengths"]
    g = meta.groupby(keys, as_index=False)
    out = g.last()
    out["conc_min"] = g["concurrency_n"].min()["concurrency_n"].to_numpy()
    out["conc_max"] = g["concurrency_n"].max()["concurrency_n"].to_numpy()
    return out


def at_concurrency(row: dict, c: int) -> dict:
    """The template row asked at ``c`` clients, ``10 x c`` requests (InferenceX's run)."""
    r = dict(row)
    r["concurrency"] = str(c)
    n = 10 * c
    notes = _COUNT.sub(f"{n} requests", r["notes"])
    notes = _PROMPTS.sub(f"--num-prompts {n}", notes)
    r["notes"] = _CONC.sub(f"--max-concurrency {c}", notes)
    return r


def sweep(cfgs: pd.DataFrame, used: dict, concs=CONCS) -> pd.DataFrame:
    """Predicted output tok/s per GPU and median TPOT of each configuration at each
    concurrency of ``concs`` inside the range InferenceX measured that configuration at
    (``conc_min`` to ``conc_max``; beyond it the measured front has nothing to compare),
    with its template row's held-out parameters."""
    from planner.benchmarks.serving_rows import serving_row_details

    cat = load_catalog()
    recs = []
    for _, t in cfgs.iterrows():
        params = used[t["id"]]
        inside = [c for c in concs if t["conc_min"] <= c <= t["conc_max"]]
        for c in sorted({*inside, int(t["conc_min"]), int(t["conc_max"])}):
            d = serving_row_details(at_concurrency(t.to_dict(), c), cat, params)
            thr, tpot = d.get(THR), d.get(TPOT)
            recs.append(
                {
                    "gpu": t["hardware"], "framework": t["framework"],
                    "precision": t["precision"], "layout": t["layout"],
                    "lengths": t["lengths"], "template": t["id"],
                    "graphs from c": t["concurrency"], "concurrency": c,
                    "thr_p": None if thr is None else thr / 8,
                    "int_p": None if not tpot else 1000.0 / tpot,
                    "reason": d.get("reason", ""),
                }
            )  # fmt: skip
    return pd.DataFrame(recs)


def front_table(points: pd.DataFrame, swept: pd.DataFrame, levels=LEVELS, by=("gpu",)):
    """Measured front (InferenceX's reading of the measured points), the planner's front
    from its predictions of the measured points, and the planner's front over the swept
    concurrencies, each the best over engines, precisions, layouts and (unless ``by`` holds
    it) lengths."""
    keys = ["gpu", "lengths", "framework", "precision"]
    recs = []
    for key, g in points.groupby(list(by)):
        key = key if isinstance(key, tuple) else (key,)
        s = swept
        for k, v in zip(by, key, strict=True):
            s = s[s[k] == v]
        for lv in levels:
            rec = {**dict(zip(by, key, strict=True)), "interactivity >= tok/s/user": lv}
            for name, frame, x, y, grp in (
                ("measured", g, "int_m", "thr_m", keys),
                ("planner, measured points", g, "int_p", "thr_p", keys),
                ("planner, swept", s, "int_p", "thr_p", [*keys, "layout"]),
            ):
                best, where = None, None
                for sub, f in frame.groupby([k for k in grp if k not in by]):
                    v = value_at(list(zip(f[x], f[y], strict=True)), lv)
                    if v is not None and (best is None or v > best):
                        best, where = v, " ".join(map(str, sub))
                rec[f"{name} tok/s/GPU"] = None if best is None else round(best, 1)
                rec[f"{name} from"] = where
            m = rec["measured tok/s/GPU"]
            for name in ("planner, measured points", "planner, swept"):
                p = rec[f"{name} tok/s/GPU"]
                rec[f"ratio ({name})"] = None if m is None or p is None else round(p / m, 2)
            recs.append(rec)
    return pd.DataFrame(recs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", help="pickle of (loso, params by row id): read, else write")
    ap.add_argument("--save", help="write the swept predictions to this CSV")
    ap.add_argument("--load", help="read swept predictions saved by --save")
    a = ap.parse_args(argv)
    ppath = Path(a.params) if a.params else None
    if ppath is not None and ppath.exists():
        loso, used = pickle.loads(ppath.read_bytes())
    else:
        from r1_decode_parts import held_out_params

        loso, used = held_out_params()
        if ppath is not None:
            ppath.write_bytes(pickle.dumps((loso, used)))
    if a.load:
        swept = pd.read_csv(a.load)
    else:
        cfgs = configurations(loso, used)
        print(f"{len(cfgs)} configurations x {len(CONCS)} concurrencies", file=sys.stderr)
        swept = sweep(cfgs, used)
        if a.save:
            swept.to_csv(a.save, index=False)
    pts = deepseek_points(loso)
    pts = pts[pts["gpu"].isin(GPUS)]
    print("## All lengths together\n")
    print(_md_table(front_table(pts, swept)))
    print("## By sequence length\n")
    print(_md_table(front_table(pts, swept, by=("gpu", "lengths"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
