"""InferenceX SGLang TPOT rows: where the held-out error sits, and what the same launch
measures from one SGLang image to the next (issue 32 item 1, issue 29 item 1's TPOT part).

Three tables, from the benchmark rows (``data/benchmarks/public_inferencex*.csv``) and, for
the first and third, a CSV of held-out predictions (one row per (benchmark row, metric):
``id``, ``metric``, ``measured``, ``predicted``, ``provenance``; what
``scripts/ep_accuracy.py --save`` writes):

1. **error by group**: the SGLang TPOT rows of both InferenceX sources by source, GPU,
   precision, layout, release and concurrency: rows, MdAPE, median predicted / measured.
2. **same launch, another image** (needs no prediction): the rows whose notes carry the
   same server command (``server: python3 -m sglang.launch_server ...``, host / port / model
   path dropped) or, for the history rows that carry none, the same InferenceX config
   (source, GPU, precision, TP / EP / attention DP), for the same ISL / OSL and concurrency,
   grouped by SGLang release: the median of measured TPOT / the same point's TPOT in the
   newest release of the group. Any difference there is the image (or the machine the run
   drew), not a flag.
3. **error by donor**: the fit each held-out row was predicted from (the provenance label).

Usage (from the repository root; seconds)::

    python scripts/sgl_tpot_table.py --predictions held_out.csv
    python scripts/sgl_tpot_table.py                 # table 2 only
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FILES = (
    ROOT / "data/benchmarks/public_inferencex.csv",
    ROOT / "data/benchmarks/public_inferencex_history.csv",
)
TPOT = ("tpot_ms_median", "tpot_ms_mean", "itl_ms_median")
_RELEASE = re.compile(r"v?(\d+\.\d+\.\d+(?:\.post\d+)?)")
_SERVER = re.compile(r"server: (python3? -m sglang\.launch_server[^;\"]*)")
_DROP = re.compile(r"\s--(?:model-path|host|port|served-model-name)[= ]\S+")
_DATE = re.compile(r"run date (\d{4}-\d\d-\d\d)")
_LEN = re.compile(r"random_(input|output)_len=(\d+)")
_SPEC = re.compile(r"spec '(?!none)[^']+'|speculative-algorithm|layout_unsupported", re.I)


def release_of(framework_version: str) -> str:
    """The SGLang release of a ``framework_version`` cell (``0.5.12 (image
    lmsysorg/sglang:v0.5.12-cu130) | ...`` -> ``0.5.12``; ``image
    lmsysorg/sglang:v0.5.10.post1-cu130`` -> ``0.5.10.post1``); '' when none is named."""
    m = _RELEASE.search(framework_version or "")
    return m.group(1) if m else ""


def release_key(release: str) -> tuple[int, ...]:
    """Sort key of a release (``0.5.10.post1`` -> (0, 5, 10, 1); unknown -> ())."""
    nums = re.findall(r"\d+", release or "")
    return tuple(int(n) for n in nums)


def launch_of(notes: str) -> str:
    """The server command a row's notes state, without the model path, host and port (''
    when the notes state none)."""
    m = _SERVER.search(notes or "")
    if not m:
        return ""
    return " ".join(_DROP.sub("", " " + m.group(1)).split())


def lengths_of(notes: str) -> str:
    """``ISL/OSL`` of a random-dataset row (``1024/1024``), '' when the notes state none."""
    got = dict(_LEN.findall(notes or ""))
    return f"{got['input']}/{got['output']}" if {"input", "output"} <= got.keys() else ""


def sglang_tpot_rows(files=FILES) -> pd.DataFrame:
    """The SGLang TPOT rows of the InferenceX sources without speculative decoding, with the
    columns the tables group by (``release``, ``date``, ``launch``, ``lengths``,
    ``layout``, ``conc``, ``measured``, and ``mismatch``: the row carries the
    ``workload_mismatch`` tag of ``scripts/annotate_workload_mismatch.py``)."""
    rows = pd.concat([pd.read_csv(f, dtype=str, keep_default_na=False) for f in files])
    rows = rows[(rows["framework"] == "sglang") & rows["metric"].isin(TPOT)]
    rows = rows[~rows["notes"].str.contains(_SPEC)].copy()
    rows["release"] = rows["framework_version"].map(release_of)
    rows["date"] = rows["notes"].str.extract(_DATE)[0].fillna("")
    rows["launch"] = rows["notes"].map(launch_of)
    rows["lengths"] = rows["notes"].map(lengths_of)
    rows["layout"] = (
        "tp" + rows["tp"] + " ep" + rows["ep"].replace("", "1")
        + " adp" + rows["attention_dp"].replace("", "1")
    )  # fmt: skip
    rows["mismatch"] = rows["notes"].str.contains("workload_mismatch:", regex=False)
    rows["conc"] = pd.to_numeric(rows["concurrency"], errors="coerce")
    rows["measured"] = pd.to_numeric(rows["value"], errors="coerce")
    return rows.reset_index(drop=True)


def same_launch(rows: pd.DataFrame) -> pd.DataFrame:
    """Each row's measured TPOT over the same point's in the newest release of its launch.

    A point is (source, GPU, precision, layout, metric, ISL / OSL, concurrency, launch);
    ``launch`` is the server command, or '' for rows without one (their InferenceX config
    is then the key). Points measured in one release only are dropped. Returns one line per
    row: the point, ``release``, ``newest`` (the newest release of the point),
    ``measured``, ``newest_measured`` (the median over the newest release's rows) and
    ``ratio`` = measured / newest_measured.
    """
    keys = ["source", "hardware", "precision", "layout", "metric", "lengths", "conc", "launch"]
    out = []
    for _, g in rows.groupby(keys, sort=False):
        rel = g["release"].map(release_key)
        if g["release"].nunique() < 2 or not rel.map(len).all():
            continue
        newest = g.loc[rel.idxmax(), "release"]
        base = g.loc[g["release"] == newest, "measured"].median()
        part = g.assign(newest=newest, newest_measured=base, ratio=g["measured"] / base)
        out.append(part)
    if not out:
        return pd.DataFrame(columns=[*keys, "release", "newest", "measured", "ratio"])
    return pd.concat(out, ignore_index=True)


def release_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    """:func:`same_launch` by (GPU, release, ISL / OSL, tagged ``workload_mismatch``): rows
    and the median ratio."""
    keys = ["hardware", "precision", "release", "newest", "lengths"]
    g = pairs.groupby(keys + (["mismatch"] if "mismatch" in pairs else []))
    out = g.agg(rows=("ratio", "size"), median_ratio=("ratio", "median"),
                min_ratio=("ratio", "min"), max_ratio=("ratio", "max"))  # fmt: skip
    return out.round(3).reset_index()


def with_predictions(rows: pd.DataFrame, predictions: pd.DataFrame) -> pd.DataFrame:
    """``rows`` joined to held-out ``predictions`` (by id and metric): ``predicted``,
    ``ratio`` = predicted / measured, ``ape`` = |ratio - 1| and the donor ``provenance``."""
    p = predictions[["id", "metric", "predicted", "provenance"]].copy()
    p["predicted"] = pd.to_numeric(p["predicted"], errors="coerce")
    d = rows.merge(p, on=["id", "metric"], how="inner")
    d["ratio"] = d["predicted"] / d["measured"]
    d["ape"] = (d["ratio"] - 1).abs()
    return d


def error_table(d: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows, MdAPE [%] and median predicted / measured of ``d`` by ``keys``."""
    g = d.groupby(keys)
    out = g.agg(rows=("ape", "size"), mdape_pct=("ape", "median"), ratio=("ratio", "median"))
    out["mdape_pct"] *= 100
    return out.round(3).reset_index()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--predictions", help="CSV of held-out predictions (id, metric, ...)")
    a = ap.parse_args(argv)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 500)
    pd.set_option("display.max_colwidth", 60)
    rows = sglang_tpot_rows()
    if a.predictions:
        d = with_predictions(rows, pd.read_csv(a.predictions, dtype=str))
        d["source"] = d["source"].str[:40]
        print(f"## 1. Held-out TPOT error ({len(d)} rows)\n")
        for keys in (["source"], ["source", "release"], ["source", "hardware", "precision",
                     "layout"], ["source", "hardware", "conc"]):  # fmt: skip
            print(error_table(d, keys).to_string(index=False), "\n")
        print("## 3. By donor\n")
        print(error_table(d, ["source", "provenance"]).to_string(index=False), "\n")
    pairs = same_launch(rows)
    print(f"## 2. Same launch, another image ({len(pairs)} rows in points with 2+ releases)\n")
    print(release_summary(pairs).to_string(index=False))
    lo = pairs[pairs["release"] != pairs["newest"]]
    if len(lo):
        print(f"\nolder releases: median measured / newest {np.median(lo['ratio']):.3f} "
              f"over {len(lo)} rows")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
