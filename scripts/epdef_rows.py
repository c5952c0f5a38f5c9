"""The EP / DEP TPOT rows with no row within 25 % (issue 29, item 1; docs/changes/2026-12-08/epdef.md), row
by row: how each is read, the decoding sequences per rank its own numbers imply, and how far its
held-out prediction is from the 25 % band.

Three groups (docs/changes/2026-12-07f/dep8.md section 1):

* **D**: dstack H200 (TensorRT-LLM TP8 EP4, SGLang DP8 attention), ``public_amd.csv``;
* **E**: MLPerf Inference v5.1 DeepSeek-R1, ``public_mlperf_moe.csv``;
* **F**: SGLang DeepSeek-V3 H200 (v0.4.1), single-node FP8 DP8, ``public_nvidia.csv``.

For each TPOT row it prints the run's load (concurrency or rate), lengths, layout, release,
the CUDA-graph state its notes state, the measured TPOT, the run's output tok/s (the same run's
``output_tok_s_total`` row), the decoding sequences per attention rank by Little's law
(output tok/s x TPOT / ranks; ranks = replicas x attention-DP width, 1 per replica without
attention DP), the held-out prediction and the factor the prediction must be multiplied by to
land within 25 % (1.0 when it already does). No simulation and no fit; seconds.

Usage (repository root)::

    PYTHONPATH=$PWD python scripts/epdef_rows.py --predictions HELD_OUT.csv

``HELD_OUT.csv`` is ``scripts/ep_accuracy.py --save`` output (columns ``id``, ``predicted``).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from mlperf_stream_gap import markdown  # noqa: E402  (the same pipe table)

BENCH = ROOT / "data" / "benchmarks"
#: group -> (data file, source name, extra row filter on the raw rows)
GROUPS = {
    "D": ("public_amd.csv", "dstack benchmark: DeepSeek-R1 on 8xMI300X vs 8xH200", "nvidia-h200-sxm"),
    "E": ("public_mlperf_moe.csv", "MLPerf Inference v5.1 DeepSeek-R1", ""),
    "F": ("public_nvidia.csv", "SGLang DeepSeek-V3 H200 benchmark (v0.4.1)", "nvidia-h200-sxm"),
}  # fmt: skip
#: the rows' layout columns that make a run (with the source detail and the load)
_RUN = ["source_detail", "hardware", "framework", "n_gpus", "tp", "pp", "ep", "attention_dp",
        "isl", "osl", "concurrency", "request_rate", "mode"]  # fmt: skip
_TPOT = ("tpot_ms_mean", "tpot_ms_median")
_GRAPHS_OFF = re.compile(r"CUDA graphs off|cuda_graph=disabled", re.IGNORECASE)
#: the 25 % band of issue 29 item 1 (|predicted / measured - 1| <= 0.25)
BAND = 0.25


def attention_ranks(n_gpus: int, tp: int, pp: int, attention_dp: int) -> int:
    """Attention ranks over all replicas: ``n_gpus / (tp x dp x pp)`` replicas, each with
    ``dp`` attention-DP ranks (1 without attention DP) [ranks]."""
    width = max(tp, 1) * max(attention_dp, 1) * max(pp, 1)
    if n_gpus <= 0 or n_gpus % width:
        raise ValueError(f"{n_gpus} GPUs is not a whole number of {width}-GPU replicas")
    return n_gpus // width * max(attention_dp, 1)


def sequences_per_rank(output_tok_s: float, tpot_ms: float, ranks: int) -> float:
    """Decoding sequences per rank by Little's law: each emits a token every ``tpot_ms``, so
    ``output_tok_s x tpot_s`` decode at once, over ``ranks`` ranks [sequences]."""
    if output_tok_s <= 0 or tpot_ms <= 0 or ranks <= 0:
        raise ValueError("output_tok_s, tpot_ms and ranks must be positive")
    return output_tok_s * tpot_ms / 1000.0 / ranks


def factor_to_band(ratio: float, band: float = BAND) -> float:
    """The factor the prediction must be multiplied by to lie within ``band`` of the
    measurement, given ``ratio`` = predicted / measured (1.0 when it already does)."""
    if ratio <= 0:
        raise ValueError("ratio must be positive")
    if ratio < 1 - band:
        return (1 - band) / ratio
    if ratio > 1 + band:
        return (1 + band) / ratio
    return 1.0


def _int(x, default: int = 1) -> int:
    """A layout cell as an int (``default`` when empty)."""
    return int(x) if str(x).strip() else default


def _load(run: pd.Series) -> str:
    if run["mode"] == "concurrency" and run["concurrency"]:
        return f"c {run['concurrency']}"
    return f"{run['request_rate']} req/s"


def group_rows(group: str, raw: pd.DataFrame, pred: pd.Series) -> pd.DataFrame:
    """One line per TPOT row of ``group`` in ``raw`` (rows of its data file, str cells)."""
    _, source, gpu = GROUPS[group]
    rows = raw[raw["source"] == source]
    if gpu:
        rows = rows[rows["hardware"] == gpu]
    if "attention_dp" in rows:
        rows = rows[(rows["ep"].map(_int) > 1) | (rows["attention_dp"].map(_int) > 1)]
    out = []
    for _, run in rows.groupby(_RUN, dropna=False):
        by = {m: r for m, r in zip(run["metric"], run.to_dict("records"), strict=True)}
        centre = next((m for m in _TPOT if m in by), None)
        if centre is None or "output_tok_s_total" not in by:
            continue
        tok = float(by["output_tok_s_total"]["value"])
        first = by[centre]
        ranks = attention_ranks(
            _int(first["n_gpus"]), _int(first["tp"]), _int(first["pp"]), _int(first["attention_dp"])
        )
        seqs = sequences_per_rank(tok, float(first["value"]), ranks)
        for metric in (*_TPOT, "tpot_ms_p99"):
            if metric not in by:
                continue
            r = by[metric]
            tpot = float(r["value"])
            p = pred.get(r["id"])
            ratio = None if p is None else float(p) / tpot
            out.append(
                {
                    "group": group, "id": r["id"], "engine": r["framework"],
                    "release": str(r["framework_version"]).split(" |")[0][:40],
                    "precision": r["precision"] or "?",
                    "layout": f"TP{r['tp']} EP{r['ep']} DP{r['attention_dp']}",
                    "gpus": _int(r["n_gpus"]), "load": _load(r),
                    "isl/osl": f"{r['isl'] or 'var'}/{r['osl'] or 'var'}",
                    "graphs": "off" if _GRAPHS_OFF.search(r["notes"] or "") else "on",
                    "metric": metric, "tpot_ms": tpot, "out_tok_s": tok,
                    "seqs_per_rank": round(seqs, 1),
                    "predicted_ms": None if p is None else round(float(p), 1),
                    "pred/meas": None if ratio is None else round(ratio, 3),
                    "x_to_25pct": None if ratio is None else round(factor_to_band(ratio), 2),
                }
            )  # fmt: skip
    return pd.DataFrame(out)


def all_rows(pred: pd.Series) -> pd.DataFrame:
    """The TPOT rows of the three groups, sorted by group and per-rank sequences."""
    frames = []
    for g, (fname, _, _) in GROUPS.items():
        raw = pd.read_csv(BENCH / fname, dtype=str, keep_default_na=False)
        frames.append(group_rows(g, raw, pred))
    df = pd.concat(frames, ignore_index=True)
    keys = ["group", "engine", "precision", "seqs_per_rank", "metric"]
    return df.sort_values(keys).reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: PYTHONPATH=$PWD python scripts/epdef_rows.py --predictions "
        "ep_after.csv (from scripts/ep_accuracy.py --save ep_after.csv)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--predictions", required=True, help="held-out predictions CSV (id, predicted)")
    args = ap.parse_args(argv)
    try:
        pred = pd.read_csv(args.predictions).drop_duplicates("id").set_index("id")["predicted"]
    except (OSError, KeyError, pd.errors.ParserError) as e:
        print(f"error: cannot read predictions from {args.predictions}: {e}", file=sys.stderr)
        return 2
    df = all_rows(pred)
    print(markdown(df))
    print()
    s = (
        df.dropna(subset=["pred/meas"])
        .groupby("group")
        .agg(
            rows=("id", "size"),
            median_pred_meas=("pred/meas", "median"),
            median_x_to_25pct=("x_to_25pct", "median"),
            min_x=("x_to_25pct", "min"),
        )
    )
    print(markdown(s.reset_index().round(3)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
