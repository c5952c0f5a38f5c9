"""The serving TTFT rows just outside the 20% line, row by row, and what a term could buy
(issue 32, item 1, TTFT half; a row-level account, nothing is simulated).

Reads a ``scripts/latency_rows.py`` CSV (the unscaled prediction planner uses, through
``scripts/ttft_groups.py load``) and prints:

1. every TTFT row with ``lo`` < |error| <= ``hi`` (20-35% by default): source, engine and
   release, GPU, model and whether it is MLA, prompt / output tokens, concurrency or rate,
   layout, signed error, the same run's TPOT ratio, and its near-line group
   (:func:`near_group`);
2. per near-line group, over *all* its TTFT rows: rows within 20%, rows at 20-35% under /
   over, and the in-sample upper bound of one multiplicative level per group
   (:func:`best_level`): the most rows that any single factor on that group brings within
   20%, net of the rows it pushes out. A group whose bound is small cannot carry the
   missing rows even when fitted on itself;
3. for InferenceX SGLang MLA runs, the prompt's per-token cost (:func:`prompt_slopes`):
   the same node, layout, release and concurrency at about 1k and 8k prompt tokens, so
   ``(TTFT_8k - TTFT_1k) / (tokens_8k - tokens_1k)`` [ms per 1k prompt tokens], measured and
   predicted. Fixed costs (queueing, admission, the client) cancel in the difference;
4. which sources hold each MLA 8k cell (:func:`cell_sources`): a term for a cell held by
   one source cannot be fitted leave-one-source-out.

Usage: ``python scripts/ttft_near_line.py [CSV] [--lo 20] [--hi 35] [--md OUT.md]``
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

_spec = importlib.util.spec_from_file_location(
    "ttft_groups", Path(__file__).with_name("ttft_groups.py")
)
tt = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("ttft_groups", tt)
_spec.loader.exec_module(tt)

MISS_PCT = tt.MISS_PCT
#: models with multi-head latent attention (DeepSeek-V2 / V3 / R1 architecture)
MLA_MODELS = ("deepseek-v3", "deepseek-r1", "deepseek-v2", "kimi-k2")
#: a prompt above this many tokens is the "8k" class of InferenceX (random 8192, ratio 0.8)
LONG_PROMPT = 4000.0

#: near-line groups, in the order :func:`near_group` tries them
NEAR_GROUPS = (
    "InferenceX SGLang MLA, 8k prompts",
    "InferenceX SGLang MLA, 1k prompts",
    "InferenceX TensorRT-LLM",
    "GPUStack offline bursts",
    "MLPerf harness (server / interactive)",
    "TensorRT-LLM perf-overview (Triton, Poisson)",
    "dstack (2025-02 / 03 builds)",
    "SGLang cookbooks",
    "other",
)


def is_mla(model) -> bool:
    """Whether ``model`` uses multi-head latent attention (:data:`MLA_MODELS`)."""
    return str(model).lower() in MLA_MODELS


def prompt_tokens(r) -> float:
    """The row's mean prompt [tokens]: the CSV's ``prompt_tokens``, else ``isl``."""
    p = r.get("prompt_tokens")
    if p is not None and np.isfinite(p):
        return float(p)
    p = r.get("isl")
    return float(p) if p is not None and np.isfinite(p) else float("nan")


def near_group(r) -> str:
    """One near-line group per TTFT row (:data:`NEAR_GROUPS`, first match wins), by source,
    engine, model and prompt class: the sets a single term would act on."""
    src, eng = str(r.get("source", "")), str(r.get("engine", ""))
    if "InferenceX" in src and eng == "sglang" and is_mla(r.get("model")):
        return NEAR_GROUPS[0] if prompt_tokens(r) > LONG_PROMPT else NEAR_GROUPS[1]
    if "InferenceX" in src and eng == "trtllm":
        return NEAR_GROUPS[2]
    if src.startswith("GPUStack"):
        return NEAR_GROUPS[3]
    if r.get("mode") in ("server", "interactive"):
        return NEAR_GROUPS[4]
    if src.startswith("TensorRT-LLM perf-overview"):
        return NEAR_GROUPS[5]
    if src.startswith("dstack"):
        return NEAR_GROUPS[6]
    if src.startswith("SGLang cookbook"):
        return NEAR_GROUPS[7]
    return NEAR_GROUPS[8]


def best_level(err_pct, lo: float = 0.5, hi: float = 2.0, n: int = 301) -> tuple:
    """The single factor on a group's predictions that maximises its rows within 20%.

    Parameters
    ----------
    err_pct : array-like
        The group's signed errors [%] (predicted / measured - 1).
    lo, hi : float
        Factor range searched (log-uniform grid of ``n`` points).

    Returns
    -------
    tuple
        ``(factor, within_before, within_after)``: the factor, and the group's rows within
        :data:`MISS_PCT` before and after it. In sample: an upper bound on any one
        multiplicative term for the group.
    """
    r = 1.0 + np.asarray(err_pct, dtype=float) / 100.0
    before = int((np.abs(r - 1.0) * 100.0 <= MISS_PCT).sum())
    best = (1.0, before, before)
    for f in np.geomspace(lo, hi, n):
        k = int((np.abs(r * f - 1.0) * 100.0 <= MISS_PCT).sum())
        if k > best[2]:
            best = (float(f), before, k)
    return best


def group_table(t: pd.DataFrame, lo: float, hi: float) -> pd.DataFrame:
    """Per near-line group: rows, within 20%, near under / over, and :func:`best_level`."""
    out = []
    for g in NEAR_GROUPS:
        d = t[t["near_group"] == g]
        if d.empty:
            continue
        f, b, a = best_level(d["err"])
        near = d[(d["ape"] > lo) & (d["ape"] <= hi)]
        out.append(dict(group=g, n=len(d), mdape_pct=d["ape"].median(),
                        bias_pct=d["err"].median(), within=b,
                        near_under=int((near["err"] < 0).sum()),
                        near_over=int((near["err"] > 0).sum()),
                        best_factor=f, within_at_best=a, gain=a - b))  # fmt: skip
    return pd.DataFrame(out).set_index("group")


_REL = re.compile(r"(\d+\.\d+\.\d+(?:\.post\d+)?)")


def release_of(text) -> str:
    """The first ``x.y.z`` release in a release string ('' without one)."""
    m = _REL.search(str(text or ""))
    return m.group(1) if m else ""


def prompt_slopes(t: pd.DataFrame) -> pd.DataFrame:
    """Per-token prompt cost of InferenceX SGLang MLA runs, measured and predicted.

    Pairs a 1k-class and an 8k-class row (:data:`LONG_PROMPT`) of the same source, GPU,
    precision, TP, EP, attention-DP, release and concurrency (rows with several runs take
    their median TTFT), and returns per pair the measured and predicted slope
    ``(TTFT_8k - TTFT_1k) / (tokens_8k - tokens_1k) x 1000`` [ms per 1k prompt tokens] and
    their ratio. The 1k row's fixed costs (client, admission, queueing at that
    concurrency) cancel, to the extent they do not grow with the prompt.
    """
    d = t[t["near_group"].isin(NEAR_GROUPS[:2])].copy()
    if d.empty:
        return pd.DataFrame()
    d["rel"] = d["release"].map(release_of)
    d["cls"] = np.where(d["pt"] > LONG_PROMPT, "8k", "1k")
    k = ["source", "gpu", "precision", "tp", "ep", "attention_dp", "rel", "concurrency"]
    agg = d.groupby(k + ["cls"], dropna=False).agg(
        meas=("measured", "median"), pred=("pred", "median"), pt=("pt", "median"),
        n=("id", "size"))  # fmt: skip
    w = agg.unstack("cls").dropna()
    if w.empty:
        return pd.DataFrame()
    dp = w[("pt", "8k")] - w[("pt", "1k")]
    out = pd.DataFrame(index=w.index)
    out["ttft_1k_meas"] = w[("meas", "1k")]
    out["ttft_8k_meas"] = w[("meas", "8k")]
    out["ttft_8k_pred"] = w[("pred", "8k")]
    out["slope_meas"] = (w[("meas", "8k")] - w[("meas", "1k")]) / dp * 1e3
    out["slope_pred"] = (w[("pred", "8k")] - w[("pred", "1k")]) / dp * 1e3
    out["slope_ratio"] = out["slope_meas"] / out["slope_pred"]
    out["err_8k_pct"] = (w[("pred", "8k")] / w[("meas", "8k")] - 1.0) * 100.0
    out["err_1k_pct"] = (w[("pred", "1k")] / w[("meas", "1k")] - 1.0) * 100.0
    out = out.reset_index()
    out["source"] = np.where(out["source"].str.contains("history"), "ixh", "ixm")
    return out.sort_values(["gpu", "precision", "tp", "rel", "concurrency"])


def cell_sources(t: pd.DataFrame) -> pd.DataFrame:
    """Which sources hold SGLang MLA rows of 8k-class prompts per (GPU, precision, layout),
    with each cell's :func:`best_level` (in sample): a cell held by one source has no other
    source to fit a term on held out, so its held-out gain is nil whatever its in-sample one."""
    d = t[(t["engine"] == "sglang") & t["model"].map(is_mla) & (t["pt"] > LONG_PROMPT)]
    if d.empty:
        return pd.DataFrame()
    d = d.assign(layout=[f"TP{int(a)} EP{int(b)}" for a, b in zip(d["tp"], d["ep"], strict=True)])
    lv = d.groupby(["gpu", "precision", "layout"])["err"].apply(best_level)
    return d.groupby(["gpu", "precision", "layout"]).agg(
        n=("id", "size"), sources=("source", lambda s: "; ".join(sorted(set(s)))),
        n_sources=("source", "nunique"), bias_pct=("err", "median"),
        within=("ape", lambda a: int((a <= MISS_PCT).sum()))).assign(
        best_factor=lv.map(lambda b: b[0]), gain_in_sample=lv.map(lambda b: b[2] - b[1]))  # fmt: skip


def near_rows(t: pd.DataFrame, lo: float, hi: float) -> pd.DataFrame:
    """The rows with ``lo`` < |error| <= ``hi`` [%], one line each, by group and error."""
    d = t[(t["ape"] > lo) & (t["ape"] <= hi)].copy()
    d["release_short"] = d["release"].map(release_of).replace("", np.nan)
    d["release_short"] = d["release_short"].fillna(d["release"].str.slice(0, 16))
    d["mla"] = d["model"].map(is_mla)
    d["load"] = np.where(d["mode"] == "concurrency", "C=" + d["concurrency"].astype(str),
                         d["mode"] + " " + d["rate"].astype(str) + "/s")  # fmt: skip
    d["layout"] = [f"TP{a:g} EP{b:g} DP{c:g}" for a, b, c in
                   zip(d["tp"].fillna(0), d["ep"], d["attention_dp"], strict=True)]  # fmt: skip
    cols = ["id", "near_group", "engine", "release_short", "gpu", "model", "mla", "precision",
            "layout", "pt", "osl", "load", "measured", "pred", "err", "tpot_ratio_same_run"]  # fmt: skip
    d = d.sort_values(["near_group", "err"])
    return d[cols].rename(columns={"pt": "prompt_tok", "err": "err_pct", "pred": "predicted",
                                   "tpot_ratio_same_run": "tpot_meas_over_pred"})  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="?", default="docs/latency_rows.csv")
    ap.add_argument("--lo", type=float, default=20.0)
    ap.add_argument("--hi", type=float, default=35.0)
    ap.add_argument("--md", default=None, help="also write the tables as Markdown here")
    a = ap.parse_args(argv)
    try:
        t = tt.load(a.csv)
    except (OSError, KeyError, ValueError) as e:
        print(f"error: cannot read {a.csv}: {e}", file=sys.stderr)
        return 1
    t["pt"] = [prompt_tokens(r) for r in t.to_dict("records")]
    t["near_group"] = [near_group(r) for r in t.to_dict("records")]
    parts = []

    def show(title, df):
        print(f"== {title}\n{df.round(2).to_string()}\n")
        parts.append(f"### {title}\n\n{tt.tg.md(df.round(2))}\n")

    n_in, need = int((t["ape"] <= MISS_PCT).sum()), len(t) // 2 + 1
    print(f"TTFT rows {len(t)}, MdAPE {t['ape'].median():.2f}%, bias {t['err'].median():+.2f}%; "
          f"within {MISS_PCT:g}%: {n_in} (a median <= {MISS_PCT:g}% needs {need})\n")  # fmt: skip
    show(f"near-line groups (all their rows; near = {a.lo:g}-{a.hi:g}%)",
         group_table(t, a.lo, a.hi))  # fmt: skip
    show(f"rows at {a.lo:g}-{a.hi:g}%", near_rows(t, a.lo, a.hi).set_index("id"))
    s = prompt_slopes(t)
    if len(s):
        show("InferenceX SGLang MLA: prompt cost per 1k tokens (8k minus 1k, same run setup)", s)
    c = cell_sources(t)
    if len(c):
        show("SGLang MLA 8k-class rows by cell: the sources that hold them", c)
    if a.md:
        Path(a.md).write_text("\n".join(parts))
        print("wrote", a.md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
