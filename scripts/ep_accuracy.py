"""Held-out error of the published rows by layout kind (issue 29: EP / DEP / DP-attention).

Leave-one-source-out over the sources that publish expert-parallel, attention data-parallel
or multi-node rows (``planner.calibration.accuracy.run_validation`` with ``holdout``: each of
those sources is refitted without its own rows and predicted), then one table by layout kind:

* ``TP``: a tensor (x pipeline) parallel group inside one node;
* ``TP multi-node``: a TP group wider than one 8-GPU node (SGLang ``--tp 16 --nnodes 2``);
* ``TP+EP``: expert parallel inside a TP group (``ep > 1``, no attention data-parallel);
* ``DEP / DP-attention``: attention data-parallel ranks (``attention_dp > 1``), with or
  without expert parallel.

``--as-tp`` reads every EP / DP-attention row as the plain TP group of the same GPUs
(``tp = tp x attention_dp``, ``ep = attention_dp = 1``): what the planner did before it could
express these layouts. ``--write`` puts the tables into docs/accuracy.md between the
``layout-kinds`` markers (``planner validate`` keeps that section).

Usage (from the repository root; a few minutes on two cores)::

    python scripts/ep_accuracy.py                    # print the table
    python scripts/ep_accuracy.py --as-tp            # the same rows read as TP
    python scripts/ep_accuracy.py --save /tmp/ep.csv # keep the per-row predictions
    # InferenceX only, with the DeepSeek-R1 8-GPU frontier (issue 29; about 2 min):
    python scripts/ep_accuracy.py --sources "SemiAnalysis InferenceX" --frontier
    python scripts/ep_accuracy.py --load /tmp/ep.csv --frontier   # from saved predictions
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from planner.calibration.accuracy import _md_table, run_validation  # noqa: E402
from planner.calibration.fit import own_files_default, public_files_default  # noqa: E402
from planner.calibration.sections import put_section  # noqa: E402

#: the sources that publish EP / DP-attention / multi-node rows (substrings of ``source``)
EP_SOURCES = (
    "dstack benchmark: DeepSeek-R1",
    "SemiAnalysis InferenceX",
    "TensorRT-LLM perf-overview (release/1.2 data)",
    "TensorRT-LLM perf-overview (per-GPU tables",
    "GPUStack performance lab",
    "SGLang DeepSeek-V3 H200 benchmark",
    "TensorRT-LLM DeepSeek-R1 best-performance guide",
    "TensorRT-LLM tech blog 1: DeepSeek-R1 min-latency on B200",
    "MLPerf Inference v5.1 DeepSeek-R1",
    "MLPerf Inference v6.0 DeepSeek-R1",
)
#: GPUs of one node (HGX / MI300X platform) when the catalog does not say
NODE_GPUS = 8
KINDS = ("TP", "TP multi-node", "TP+EP", "DEP / DP-attention")
#: the issue's combined figure: the expert-parallel and attention-DP rows of every kind
EP_KINDS = ("TP+EP", "DEP / DP-attention")
COMBINED = "EP + DEP together"


def _int(v, default: int = 1) -> int:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return int(f) if f == f else default


def layout_kind(row) -> str:
    """One of :data:`KINDS` for a benchmark row (its tp, pp, ep, attention_dp cells)."""
    tp, pp = _int(row.get("tp")), _int(row.get("pp"))
    ep, dp = _int(row.get("ep")), _int(row.get("attention_dp"))
    if dp > 1:
        return "DEP / DP-attention"
    if ep > 1:
        return "TP+EP"
    return "TP multi-node" if tp * pp > NODE_GPUS else "TP"


def as_tp(df: pd.DataFrame) -> pd.DataFrame:
    """Every EP / DP-attention row read as a plain TP group of the same GPUs."""
    out = df.copy()
    for c in ("ep", "attention_dp"):
        if c not in out:
            out[c] = ""
    ep = pd.to_numeric(out["ep"], errors="coerce").fillna(1)
    dp = pd.to_numeric(out["attention_dp"], errors="coerce").fillna(1)
    tp = pd.to_numeric(out["tp"], errors="coerce")
    moved = (ep > 1) | (dp > 1)
    out.loc[moved, "tp"] = (tp[moved] * dp[moved]).astype(int).astype(str)
    out.loc[moved, ["ep", "attention_dp"]] = ""
    if "moe_tp" in out:
        out.loc[moved, "moe_tp"] = ""
    return out


def _files(read_as_tp: bool, tmp: Path) -> list[Path]:
    files = public_files_default()
    if not read_as_tp:
        return files
    out = []
    for f in files:
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
        p = tmp / f.name
        as_tp(df).to_csv(p, index=False)
        out.append(p)
    return out


def evaluate(read_as_tp: bool = False, sources=EP_SOURCES) -> pd.DataFrame:
    """Per-row held-out predictions of ``sources`` with their layout kind."""
    with tempfile.TemporaryDirectory() as d:
        files = _files(read_as_tp, Path(d))
        res = run_validation(files, own_files_default(), kfold=False, holdout=list(sources))
        loso = res["loso"]
        frames = [pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()]
    rows = pd.concat(frames, ignore_index=True).set_index("id")
    loso = loso[loso["source"].apply(lambda s: any(k in s for k in sources))].copy()
    loso["layout_kind"] = [layout_kind(rows.loc[i]) for i in loso["id"]]
    return loso


def kind_table(loso: pd.DataFrame) -> pd.DataFrame:
    """Rows, sources, throughput MdAPE, TPOT MdAPE and throughput bias by layout kind, and
    the EP + DEP rows together (:data:`COMBINED`)."""
    recs = []
    for kind in (*KINDS, COMBINED):
        g = loso[loso["layout_kind"].isin(EP_KINDS if kind == COMBINED else (kind,))]
        thr = g[g["metric_class"] == "throughput"]
        tpot = g[g["metric"].str.startswith(("tpot", "itl"))]

        def md(x):
            return round(100 * float(np.median(x["ape"])), 1) if len(x) else None

        recs.append(
            {
                "layout kind": kind,
                "rows": len(g),
                "sources": g["source"].nunique(),
                "throughput rows": len(thr),
                "throughput sources": thr["source"].nunique(),
                "throughput MdAPE %": md(thr),
                "throughput bias %": round(100 * float(np.expm1(np.median(thr["log_err"]))), 1)
                if len(thr)
                else None,
                "TPOT rows": len(tpot),
                "TPOT sources": tpot["source"].nunique(),
                "TPOT MdAPE %": md(tpot),
                "TPOT bias %": round(100 * float(np.expm1(np.median(tpot["log_err"]))), 1)
                if len(tpot)
                else None,
            }
        )
    return pd.DataFrame(recs)


BEGIN, END = "<!-- layout-kinds:begin -->", "<!-- layout-kinds:end -->"
DOC = ROOT / "docs" / "accuracy.md"


BEFORE_LABEL = (
    "main before issue 29: these layouts were `layout_unsupported`, never predicted nor "
    "fitted; only the TP rows of the same sources are scored"
)


def section(
    before: pd.DataFrame,
    as_tp_: pd.DataFrame,
    after: pd.DataFrame,
    note: str,
    before_label: str = BEFORE_LABEL,
) -> str:
    """The docs/accuracy.md section: the three tables and what they mean."""
    ep = after[after["layout_kind"].isin(["TP+EP", "DEP / DP-attention"])]
    thr = ep[ep["metric_class"] == "throughput"]
    tpot = ep[ep["metric"].str.startswith(("tpot", "itl"))]
    lines = [
        BEGIN,
        "## Published rows by layout kind (issue 29), leave-one-source-out",
        "",
        "Generated by `python scripts/ep_accuracy.py --write` from the held-out predictions of "
        "the sources that publish expert-parallel (EP), attention data-parallel (DEP, DP "
        "attention) or multi-node rows: "
        + "; ".join(sorted(after["source"].unique()))
        + ". Each source is refitted without its own rows (`planner validate --holdout`), "
        "closed-loop and rate rows simulated. TPOT = TPOT and ITL rows; bias = median(predicted"
        " / measured) - 1. Targets on EP / DEP / DP-attention rows: throughput MdAPE <= 20%, "
        "TPOT <= 25%, each over >= 100 rows from >= 3 sources.",
        "",
        f"**Before** ({before_label}):",
        "",
        _md_table(kind_table(before)),
        "**Read as TP** (the same rows with their layout ignored: DEP8 read as TP8, `TP8 EP8` as"
        " TP8, so the fit also sees them as TP):",
        "",
        _md_table(kind_table(as_tp_)),
        "**After** (each row's own layout; the plain rows fitted as before, then the "
        "expert-parallel fields (planner/calibration/ep_fit.py `EP_BOUNDS`) fitted per framework "
        "on the expert-parallel / attention-DP rows):",
        "",
        _md_table(kind_table(after)),
        f"EP / DEP / DP-attention rows after: {len(thr)} throughput rows from "
        f"{thr['source'].nunique()} sources, {len(tpot)} TPOT rows from "
        f"{tpot['source'].nunique()} sources.",
        "",
        "By source and metric (EP / DEP / DP-attention rows, after):",
        "",
        _md_table(
            ep.groupby(["source", "layout_kind", "metric"])
            .agg(
                n=("ape", "size"),
                mdape_pct=("ape", lambda x: round(100 * float(np.median(x)), 1)),
                bias_pct=("log_err", lambda x: round(100 * float(np.expm1(np.median(x))), 1)),
            )
            .reset_index()
        ),
        note,
        END,
        "",
    ]
    return "\n".join(lines)


def write_section(text: str, path: Path = DOC) -> None:
    """Replace the layout-kinds section of ``path`` (or put it before the next kept one)."""
    put_section(path, text, (BEGIN, END))


def best_at_levels(d: pd.DataFrame, by: list[str], levels) -> pd.DataFrame:
    """The best throughput per GPU among points reaching each interactivity level.

    ``d``: one row per measured point with ``thr_m`` / ``thr_p`` (measured / predicted
    throughput per GPU [tok/s]), ``int_m`` / ``int_p`` (measured / predicted interactivity,
    1000 / median TPOT [tok/s/user]) and optionally ``kind`` and ``config`` (the layout).
    For each group of ``by`` and level: the measured best among points whose measured
    interactivity reaches the level (its kind: the measured Pareto front's there), the
    planner's prediction of that same point, and the planner's own best among the points its
    predicted interactivity qualifies (a point it cannot predict never qualifies)."""
    recs = []
    for key, g in d.groupby(by):
        key = key if isinstance(key, tuple) else (key,)
        for lv in levels:
            m = g[g["int_m"] >= lv]
            p = g[(g["int_p"] >= lv) & g["thr_p"].notna()]
            rec = {**dict(zip(by, key, strict=True)), "interactivity >= tok/s/user": lv,
                   "points": len(g)}  # fmt: skip
            bm = m.loc[m["thr_m"].idxmax()] if len(m) else None
            bp = p.loc[p["thr_p"].idxmax()] if len(p) else None
            rec["measured best tok/s/GPU"] = (
                round(float(bm["thr_m"]), 0) if bm is not None else None
            )
            if "kind" in g:
                rec["measured kind"] = bm["kind"] if bm is not None else None
                rec["measured config"] = bm.get("config") if bm is not None else None
                rec["measured id"] = bm.get("id") if bm is not None else None
                same = float(bm["thr_p"]) if bm is not None else float("nan")
                ok = same == same
                rec["planner on that point"] = round(same, 0) if ok else None
                rec["its ratio"] = round(same / float(bm["thr_m"]), 2) if ok else None
                rec["planner TPOT reaches level"] = bool(bm["int_p"] >= lv) if ok else None
            rec["planner best tok/s/GPU"] = round(float(bp["thr_p"]), 0) if bp is not None else None
            if "kind" in g:
                rec["planner kind"] = bp["kind"] if bp is not None else None
                rec["planner config"] = bp.get("config") if bp is not None else None
            recs.append(rec)
    out = pd.DataFrame(recs)
    out["ratio"] = (out["planner best tok/s/GPU"] / out["measured best tok/s/GPU"]).round(2)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--as-tp", action="store_true", help="read EP / DP-attention rows as TP")
    ap.add_argument("--save", help="write the per-row predictions to this CSV")
    ap.add_argument(
        "--write",
        nargs=3,
        metavar=("BEFORE", "AS_TP", "AFTER"),
        help="write the docs/accuracy.md section from three saved runs (--save of the code "
        "before issue 29, of --as-tp, and of this code)",
    )
    ap.add_argument(
        "--before-label", help="what the BEFORE file is (default: main before issue 29)"
    )
    ap.add_argument("--note", default="", help="text after the tables (--write)")
    ap.add_argument(
        "--sources", nargs="+", metavar="TEXT", help="hold out only these sources (substrings)"
    )
    ap.add_argument(
        "--frontier", action="store_true", help="also print the DeepSeek-R1 8-GPU frontier"
    )
    ap.add_argument("--load", help="read per-row predictions saved by --save (no refit)")
    a = ap.parse_args(argv)
    if a.write:
        before, as_tp_, after = (pd.read_csv(p) for p in a.write)
        write_section(section(before, as_tp_, after, a.note, a.before_label or BEFORE_LABEL))
        return 0
    if a.load:
        loso = pd.read_csv(a.load)
    else:
        loso = evaluate(a.as_tp, tuple(a.sources) if a.sources else EP_SOURCES)
    if a.save:
        loso.to_csv(a.save, index=False)
    print(_md_table(kind_table(loso)))
    if a.frontier:
        print(_md_table(deepseek_frontier(loso)))
        print(_md_table(deepseek_front_ix(loso)))
        print(_md_table(deepseek_front_ix(loso, by=("gpu", "lengths"))))
    return 0


def deepseek_points(loso: pd.DataFrame) -> pd.DataFrame:
    """InferenceX's DeepSeek-R1 points on one 8-GPU server (single node, no MTP, no
    disaggregation) that publish both output tok/s and median TPOT, one row each: ``gpu``,
    ``framework``, ``precision``, ``lengths`` (ISL/OSL), ``concurrency``, ``layout``,
    ``thr_m`` / ``thr_p`` (measured / held-out predicted output tok/s per GPU) and ``int_m``
    / ``int_p`` (1000 / median TPOT [tok/s/user]). InferenceX's EP / DEP points publish
    total_tok_s only, so they do not enter."""
    rows = pd.concat(
        [pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()],
        ignore_index=True,
    ).set_index("id")
    ix = loso[loso["source"].str.contains("InferenceX")].copy()
    ix = ix[ix["metric"].isin(["output_tok_s_total", "tpot_ms_median"])]
    meta = rows.loc[ix["id"]]
    ix["n_gpus"] = pd.to_numeric(meta["n_gpus"].to_numpy())
    ix["point"] = [
        re.sub(r"^(?:output_tok_s_total|tpot_ms_median) = [^;]*;", "", n)
        + f"|{c}|{h}|{p}|{t}"
        for n, c, h, p, t in zip(
            meta["notes"], meta["concurrency"], meta["hardware"], meta["precision"], meta["tp"],
            strict=True,
        )
    ]  # fmt: skip
    ix["concurrency"] = pd.to_numeric(meta["concurrency"].to_numpy(), errors="coerce")
    ix["layout"] = [
        f"TP{_int(t)}" + (f" EP{_int(e)}" if _int(e) > 1 else "")
        + (f" DP-attn{_int(a)}" if _int(a) > 1 else "")
        for t, e, a in zip(meta["tp"], meta["ep"], meta["attention_dp"], strict=True)
    ]  # fmt: skip
    ix["lengths"] = [_lengths(n) for n in meta["notes"]]
    ix = ix[ix["n_gpus"] == 8]
    wide = ix.pivot_table(
        index=["point", "gpu", "framework", "precision", "lengths", "concurrency", "layout"],
        columns="metric",
        values=["measured", "predicted"],
        aggfunc="first",
    ).dropna()
    idx = wide.index
    return pd.DataFrame(
        {
            **{k: idx.get_level_values(k) for k in ("gpu", "framework", "precision",
                                                    "lengths", "concurrency", "layout")},
            "thr_m": (wide[("measured", "output_tok_s_total")] / 8).to_numpy(),
            "thr_p": (wide[("predicted", "output_tok_s_total")] / 8).to_numpy(),
            "int_m": (1000 / wide[("measured", "tpot_ms_median")]).to_numpy(),
            "int_p": (1000 / wide[("predicted", "tpot_ms_median")]).to_numpy(),
        }
    )  # fmt: skip


_ISL = re.compile(r"(?:random_input_len=|nominal input )(\d+)")
_OSL = re.compile(r"(?:random_output_len=|nominal input \d+ / output )(\d+)")


def _lengths(notes: str) -> str:
    i, o = _ISL.search(notes), _OSL.search(notes)
    return f"{i.group(1)}/{o.group(1)}" if i and o else "?"


def deepseek_frontier(loso: pd.DataFrame, levels=(20.0, 40.0, 60.0)) -> pd.DataFrame:
    """DeepSeek-R1 on one 8-GPU server (InferenceX, single node, no MTP, no disaggregation):
    the best output tok/s per GPU among the measured points whose interactivity (1000 /
    median TPOT [tok/s/user]) reaches each level, measured and as the planner predicts it
    (the planner's own TPOT decides which points qualify), every sequence length together.
    Only points that publish TPOT enter (InferenceX's EP / DEP points publish total_tok_s
    only). :func:`deepseek_front_ix` reads the same points as InferenceX does."""
    d = deepseek_points(loso)
    out = best_at_levels(d, ["gpu"], levels)
    return out[["gpu", "interactivity >= tok/s/user", "points", "measured best tok/s/GPU",
                "planner best tok/s/GPU", "ratio"]]  # fmt: skip


def deepseek_front_ix(
    loso_or_points: pd.DataFrame, levels=(20.0, 40.0, 60.0), by=("gpu",)
) -> pd.DataFrame:
    """The DeepSeek-R1 8-GPU front read as InferenceX's throughput calculator reads it
    (``scripts/ix_pareto.py``): per (GPU, ISL/OSL, engine, precision) the Pareto front of
    (interactivity, output tok/s per GPU) and a monotone cubic through it at each level, no
    extrapolation above the front; the best of these over the engines and precisions (and
    the lengths unless ``by`` holds ``lengths``). The planner's front is built the same way
    from its held-out predictions of the same points (its own TPOT placing each point).

    ``loso_or_points``: held-out predictions (``evaluate`` / ``--save``) or
    :func:`deepseek_points`' table."""
    from ix_pareto import value_at

    d = loso_or_points if "thr_m" in loso_or_points else deepseek_points(loso_or_points)
    keys = ["gpu", "lengths", "framework", "precision"]
    recs = []
    for key, g in d.groupby(list(by)):
        key = key if isinstance(key, tuple) else (key,)
        for lv in levels:
            best = {"m": (None, None), "p": (None, None)}
            for sub_key, s in g.groupby([k for k in keys if k not in by]):
                for side in ("m", "p"):
                    pts = list(zip(s[f"int_{side}"], s[f"thr_{side}"], strict=True))
                    v = value_at(pts, lv)
                    if v is not None and (best[side][0] is None or v > best[side][0]):
                        best[side] = (v, " ".join(map(str, sub_key)))
            (vm, wm), (vp, wp) = best["m"], best["p"]
            recs.append(
                {
                    **dict(zip(by, key, strict=True)),
                    "interactivity >= tok/s/user": lv,
                    "measured tok/s/GPU": None if vm is None else round(vm, 1),
                    "measured from": wm,
                    "planner tok/s/GPU": None if vp is None else round(vp, 1),
                    "planner from": wp,
                    "ratio": None if vm is None or vp is None else round(vp / vm, 2),
                }
            )
    return pd.DataFrame(recs)


if __name__ == "__main__":
    sys.exit(main())
