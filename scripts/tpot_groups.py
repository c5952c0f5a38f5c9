"""Serving TPOT misses held out by source, grouped by cause (issue 32, item 1, TPOT half).

Reads a ``scripts/latency_rows.py`` CSV (``docs/latency_rows.csv`` or a copy) and prints,
for the TPOT / ITL rows, with the prediction planner uses (no prefill scale: the CSV's
``measured / measured_over_unscaled``):

1. MdAPE, bias and the rows beyond 15% by engine, vendor and source;
2. every row in one cause group (:func:`assign_group`, rules in order, first match wins),
   with the group's MdAPE, bias and misses, and the overall MdAPE if that group alone were
   predicted exactly (what fixing it would buy);
3. the 8k / 1k test (:func:`length_pairs`): in runs measured at both prompt lengths with
   the same engine, GPU, precision, TP, release and clients, measured and predicted
   TPOT(8k) / TPOT(1k). A level error of the step cancels in the ratio; an error in the
   prefill interleaved during decode does not. Predicted / measured ratio ``q`` near 1:
   the interference is right and the error is the step's level;
4. predicted / measured TPOT by clients for the 1k InferenceX SGLang rows (little
   interference at 1k prompts): how the step's error grows with the batch.

Nothing is simulated here: the rows' predictions come from the CSV.

Usage: ``python scripts/tpot_groups.py [CSV] [--md OUT.md]``
"""

from __future__ import annotations

import argparse
import glob
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

#: a row is a miss beyond this absolute error [%] (the issue's TPOT target)
MISS_PCT = 15.0

#: raw data files whose rows state the layout (ep, attention_dp columns)
RAW_GLOB = "data/benchmarks/public*.csv"

_SERIES = re.compile(r"(\d+)\.(\d+)")


def series(text) -> tuple[int, int] | None:
    """The release series (first two numbers) of a release text, None without one
    (``"SGLang 0.4.3.post2, CUDA 12.4"`` -> (0, 4); ``"0.5.12 (image ...)"`` -> (0, 5))."""
    if not isinstance(text, str):
        return None
    m = _SERIES.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def load(csv: str | Path, raw_glob: str | None = RAW_GLOB) -> pd.DataFrame:
    """The TPOT / ITL rows of a latency_rows CSV with the unscaled prediction ``pred`` [ms],
    its error ``err`` [%] and ``ape`` [%], and (from the raw files) ``ep`` and
    ``attention_dp``."""
    o = pd.read_csv(csv)
    t = o[o["metric_class"] == "tpot/itl"].copy()
    t["pred"] = t["measured"] / t["measured_over_unscaled"]
    t["err"] = (t["pred"] / t["measured"] - 1.0) * 100.0
    t["ape"] = t["err"].abs()
    t["ep"], t["attention_dp"] = 1.0, 1.0
    if raw_glob:
        raw = []
        for f in sorted(glob.glob(raw_glob)):
            with open(f) as fh:
                if "attention_dp" not in fh.readline():
                    continue
            raw.append(pd.read_csv(f, usecols=["id", "ep", "attention_dp"]))
        if raw:
            lay = pd.concat(raw).drop_duplicates("id").set_index("id")
            t["ep"] = t["id"].map(lay["ep"]).fillna(1.0)
            t["attention_dp"] = t["id"].map(lay["attention_dp"]).fillna(1.0)
    return t


#: cause groups, in the order :func:`assign_group` tries them
GROUPS = (
    "over capacity",
    "EP / attention-DP layout",
    "early DeepSeek stack (2024-12 to 2025-03 builds)",
    "vLLM: pooled or transferred node",
    "predicted from another release series",
    "InferenceX SGLang: donor of a bare launch",
    "other",
)


def assign_group(r) -> str:
    """One cause group per TPOT row (:data:`GROUPS`, first match wins).

    - ``over capacity``: an open-loop row simulated above its predicted capacity;
    - ``EP / attention-DP layout``: ep > 1 or attention_dp > 1 (issue 29's rows);
    - ``early DeepSeek stack``: a DeepSeek-V3 / R1 row of an engine build from 2024-12 to
      2025-03 (as_of before 2025-04-01): dstack's SGLang 0.4.2-0.4.3, vLLM 0.7.3-0.7.4 and
      TensorRT-LLM 0.17 runs, SGLang's v0.4.1 table;
    - ``vLLM: pooled or transferred node``: a vLLM row predicted from a node pooled over
      GPUs or precisions, or transferred;
    - ``predicted from another release series``: the row's release series differs from the
      series of the release node used (``release_used``);
    - ``InferenceX SGLang``: the InferenceX SGLang rows not caught above;
    - ``other``.
    """
    if bool(r.get("over_capacity")) and r.get("over_capacity") is not np.nan:
        return GROUPS[0]
    if (r.get("ep") or 1) > 1 or (r.get("attention_dp") or 1) > 1:
        return GROUPS[1]
    if str(r.get("model", "")).startswith("deepseek") and str(r.get("as_of", "")) < "2025-04-01":
        return GROUPS[2]
    prov = str(r.get("provenance", ""))
    if r.get("engine") == "vllm" and ("transferred" in prov or "all precisions" in prov):
        return GROUPS[3]
    s_row = series(str(r.get("release", "")).split("|")[0])
    s_used = series(str(r.get("release_used", "")))
    if s_row and s_used and s_row != s_used:
        return GROUPS[4]
    if r.get("engine") == "sglang" and "InferenceX" in str(r.get("source", "")):
        return GROUPS[5]
    return GROUPS[6]


def table(t: pd.DataFrame, by: list[str], miss_pct: float = MISS_PCT) -> pd.DataFrame:
    """n, rows beyond ``miss_pct`` [%], MdAPE [%] and median error [%] by ``by`` (groups of
    the values present: a categorical's empty bins are left out)."""
    return t.groupby(by, dropna=False, observed=True).agg(
        n=("ape", "size"),
        misses=("ape", lambda a: int((a > miss_pct).sum())),
        mdape_pct=("ape", "median"),
        bias_pct=("err", "median"),
    )


def if_exact(t: pd.DataFrame, col: str = "group") -> pd.DataFrame:
    """Per value of ``col``: the overall MdAPE [%] with that group's rows at zero error
    (``mdape_if_exact_pct``), and with that group's predictions divided by the group's
    median predicted / measured ratio (``mdape_if_level_pct``: what a level correction of
    the group alone could buy; in sample, an upper bound for any held-out correction)."""
    out = []
    ratio = t["pred"] / t["measured"]
    for g in t[col].unique():
        sel = t[col] == g
        a = t["ape"].where(~sel, 0.0)
        lvl = ((ratio / ratio[sel].median() - 1.0).abs() * 100.0).where(sel, t["ape"])
        out.append({col: g, "mdape_if_exact_pct": a.median(), "mdape_if_level_pct": lvl.median()})
    return pd.DataFrame(out).set_index(col)


def length_pairs(t: pd.DataFrame, split_tokens: float = 3000.0) -> pd.DataFrame:
    """Runs measured at both a short (< ``split_tokens``) and a long prompt with the same
    source, engine, GPU, precision, TP, release and clients: measured ``m_ratio`` and
    predicted ``p_ratio`` TPOT(long) / TPOT(short), and ``q = p_ratio / m_ratio``."""
    d = t[t["concurrency"].notna()].copy()
    d["L"] = np.where(d["prompt_tokens"] > split_tokens, "long", "short")
    k = ["source", "engine", "gpu", "precision", "tp", "release", "concurrency"]
    m = d.pivot_table(index=k, columns="L", values="measured", aggfunc="first")
    p = d.pivot_table(index=k, columns="L", values="pred", aggfunc="first")
    if "long" not in m or "short" not in m:
        return pd.DataFrame(columns=["m_ratio", "p_ratio", "q"])
    r = pd.DataFrame({"m_ratio": m["long"] / m["short"], "p_ratio": p["long"] / p["short"]})
    r = r.dropna()
    r["q"] = r["p_ratio"] / r["m_ratio"]
    return r.reset_index()


def md(df: pd.DataFrame) -> str:
    """A pipe table of ``df`` with its index as columns (numbers to 1 decimal)."""
    d = df.reset_index()
    cell = lambda v: f"{v:.1f}" if isinstance(v, float) else str(v)  # noqa: E731
    rows = ["| " + " | ".join(map(str, d.columns)) + " |", "|" + "---|" * len(d.columns)]
    rows += ["| " + " | ".join(cell(v) for v in r) + " |" for r in d.itertuples(index=False)]
    return "\n".join(rows)


class Report:
    """The tables a groups script prints, kept as Markdown for ``--md`` (this script's and
    ``scripts/ttft_groups.py``'s)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def show(self, title: str, df: pd.DataFrame) -> None:
        print(f"== {title}\n{df.round(2).to_string()}\n")
        self.parts.append(f"### {title}\n\n{md(df)}\n")

    def head(self, t: pd.DataFrame, what: str, miss_pct: float) -> None:
        """All ``what`` rows, how many are within ``miss_pct`` [%] against how many a median
        within it needs (more than half: a median of an even count averages the two middle
        rows), then by engine and by vendor."""
        n_in = int((t["ape"] <= miss_pct).sum())
        self.show(f"all {what} rows", table(t.assign(all="all"), ["all"], miss_pct))
        print(f"within {miss_pct:g}%: {n_in} of {len(t)} (a median <= {miss_pct:g}% needs "
              f"{len(t) // 2 + 1})\n")  # fmt: skip
        self.show("by engine", table(t, ["engine"], miss_pct))
        self.show("by vendor", table(t, ["vendor"], miss_pct))

    def write(self, path: str | None) -> None:
        if path:
            Path(path).write_text("\n".join(self.parts))
            print("wrote", path)


def parser(doc: str) -> argparse.ArgumentParser:
    """The command line both groups scripts share: a latency_rows CSV and ``--md``."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("csv", nargs="?", default="docs/latency_rows.csv")
    ap.add_argument("--md", default=None, help="also write the tables as Markdown here")
    return ap


def main(argv=None) -> int:
    a = parser(__doc__).parse_args(argv)
    try:
        t = load(a.csv)
    except (OSError, KeyError, ValueError) as e:
        print(f"error: cannot read {a.csv}: {e}", file=sys.stderr)
        return 1
    t["group"] = [assign_group(r) for r in t.to_dict("records")]
    rep = Report()
    show = rep.show
    rep.head(t, "TPOT / ITL", MISS_PCT)
    show("by engine and vendor", table(t, ["engine", "vendor"]))
    g = table(t, ["group"]).join(if_exact(t))
    show(
        "by cause group (scripts/tpot_groups.py assign_group)",
        g.loc[[x for x in GROUPS if x in g.index]],
    )
    show("by cause group and source", table(t, ["group", "engine", "source"]))
    t["clients"] = pd.cut(t["concurrency"], [0, 4, 16, 64, 1e9])
    t["prompt"] = pd.cut(t["prompt_tokens"], [0, 2000, 6000, 1e9], labels=["<2k", "2-6k", ">6k"])
    t["output"] = pd.cut(t["osl"], [0, 300, 1200, 1e9], labels=["<300", "300-1200", ">1200"])
    show("by engine, vendor, clients (closed loop; open loop: NaN) and prompt",
         table(t, ["engine", "vendor", "clients", "prompt"]).query("n > 0"))  # fmt: skip
    show("by engine and output length", table(t, ["engine", "output"]).query("n > 0"))
    lp = length_pairs(t)
    if len(lp):
        lp["clients"] = pd.cut(lp["concurrency"], [0, 4, 16, 32, 64, 1e9])
        show("TPOT(8k) / TPOT(1k), measured and predicted, by engine and clients",
             lp.groupby(["engine", "clients"], observed=True)[["m_ratio", "p_ratio", "q"]]
             .median().join(lp.groupby(["engine", "clients"], observed=True).size()
                            .rename("runs")))  # fmt: skip
    ix = t[t["source"].str.contains("InferenceX") & (t["engine"] == "sglang")
           & (t["prompt_tokens"] < 3000)].copy()  # fmt: skip
    if len(ix):
        ix["run"] = (
            ix["gpu"].str.replace(r"^(nvidia|amd)-", "", regex=True)
            + "/"
            + ix["precision"].astype(str)
            + "/tp"
            + ix["tp"].astype(int).astype(str)
        )
        ix["ratio"] = ix["pred"] / ix["measured"]
        show("InferenceX SGLang 1k prompts: predicted / measured TPOT by clients (median)",
             ix.pivot_table(index="run", columns="concurrency", values="ratio",
                            aggfunc="median"))  # fmt: skip
    rep.write(a.md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
