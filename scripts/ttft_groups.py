"""Serving TTFT misses held out by source, grouped by cause (issue 32, item 1, TTFT half).

The TTFT counterpart of ``scripts/tpot_groups.py``. Reads a ``scripts/latency_rows.py`` CSV
(``docs/latency_rows.csv`` or a copy) and prints, for the TTFT rows, with the prediction
planner uses (no prefill scale: the CSV's ``measured / measured_over_unscaled``):

1. MdAPE, bias and the rows beyond 20% by engine and vendor;
2. every row in one cause group (:func:`assign_group`, rules in order, first match wins),
   with the group's MdAPE, bias and misses, and the overall MdAPE if that group alone were
   predicted exactly or corrected by its own median level (in sample: upper bounds);
3. the rows near the 20% line (15-30%), by group and sign: the rows a change must move
   for the median to cross 20%;
4. the offline bursts (:func:`burst_table`): every request sent at t = 0, so the mean TTFT
   is the queue behind the other prompts and follows the run's length. Measured length =
   requests x (ISL + OSL) / the run's measured total token rate (the raw row of the same
   run); predicted length from the CSV's ``total_tok_s_pred``. A burst TTFT whose error
   matches the length's error is a throughput miss, not a first-token miss.

Nothing is simulated here: the rows' predictions come from the CSV.

Usage: ``python scripts/ttft_groups.py [CSV] [--md OUT.md]``
"""

from __future__ import annotations

import glob
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

_spec = importlib.util.spec_from_file_location(
    "tpot_groups", Path(__file__).with_name("tpot_groups.py")
)
tg = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("tpot_groups", tg)
_spec.loader.exec_module(tg)

#: a TTFT row is a miss beyond this absolute error [%] (the issue's TTFT target)
MISS_PCT = 20.0
#: the same run's measured / predicted TPOT within this factor of the TTFT's: step time
STEP_TRACK = 1.25
#: raw data files (the runs' request counts and measured token rates)
RAW_GLOB = tg.RAW_GLOB
_NREQ = re.compile(r"all (\d[\d,]*) requests sent|--num-prompts (\d+)")

#: cause groups, in the order :func:`assign_group` tries them
GROUPS = (
    "over capacity",
    "EP / attention-DP layout",
    "early DeepSeek stack (2024-12 to 2025-03 builds)",
    "offline burst (queue behind the prompts)",
    "MLPerf harness (server / interactive)",
    "vLLM: pooled or transferred node",
    "predicted from another release series",
    "step time (same run's TPOT off alike)",
    "other",
)


def load(csv: str | Path, raw_glob: str | None = RAW_GLOB) -> pd.DataFrame:
    """The TTFT rows of a latency_rows CSV with ``pred``, ``err``, ``ape`` [ms, %, %] (the
    unscaled prediction) and ``ep`` / ``attention_dp`` from the raw files."""
    o = pd.read_csv(csv)
    t = o[o["metric_class"] == "ttft"].copy()
    # a --no-scale CSV has no measured_over_unscaled: its prediction is the unscaled one
    if "measured_over_unscaled" in t:
        t["pred"] = t["measured"] / t["measured_over_unscaled"]
    else:
        t["pred"] = t["predicted"]
    t["err"] = (t["pred"] / t["measured"] - 1.0) * 100.0
    t["ape"] = t["err"].abs()
    t["ep"], t["attention_dp"] = 1.0, 1.0
    if raw_glob:
        lay = _raw(raw_glob)
        if lay is not None and "ep" in lay:
            lay = lay.drop_duplicates("id").set_index("id")
            t["ep"] = t["id"].map(lay["ep"]).fillna(1.0)
            t["attention_dp"] = t["id"].map(lay["attention_dp"]).fillna(1.0)
    return t


def _raw(raw_glob: str) -> pd.DataFrame | None:
    parts = [pd.read_csv(f) for f in sorted(glob.glob(raw_glob))]
    return pd.concat(parts, ignore_index=True) if parts else None


def assign_group(r) -> str:
    """One cause group per TTFT row (:data:`GROUPS`, first match wins).

    - ``over capacity``: an open-loop row simulated above its predicted capacity (the
      simulated queue grows: a capacity error, scored by the throughput rows);
    - ``EP / attention-DP layout``: ep > 1 or attention_dp > 1 (issue 29's rows);
    - ``early DeepSeek stack``: a DeepSeek row dated before 2025-04-01;
    - ``offline burst``: mode offline (every request at t = 0);
    - ``MLPerf harness``: mode server / interactive;
    - ``vLLM: pooled or transferred node``: a vLLM row whose node is pooled or transferred;
    - ``predicted from another release series``: release series of the row and of the node
      used differ;
    - ``step time``: the same run's measured / predicted TPOT within :data:`STEP_TRACK` of
      the TTFT's (the step is off, not the first-token path);
    - ``other``.
    """
    g = tg.assign_group(r)
    if g in tg.GROUPS[:3]:
        return GROUPS[tg.GROUPS.index(g)]
    if r.get("mode") == "offline":
        return GROUPS[3]
    if r.get("mode") in ("server", "interactive"):
        return GROUPS[4]
    if g == tg.GROUPS[3]:
        return GROUPS[5]
    if g == tg.GROUPS[4]:
        return GROUPS[6]
    q = r.get("tpot_ratio_same_run")
    m = r.get("measured") / r.get("pred")
    if q is not None and np.isfinite(q) and q > 0 and abs(np.log(m / q)) <= np.log(STEP_TRACK):
        return GROUPS[7]
    return GROUPS[8]


def table(t: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """n, rows beyond :data:`MISS_PCT`, MdAPE [%] and median error [%] by ``by``."""
    return tg.table(t, by, MISS_PCT)


def near_line(t: pd.DataFrame, lo: float = 15.0, hi: float = 30.0) -> pd.DataFrame:
    """Rows with ``lo`` < |error| <= ``hi`` [%] by group and sign (under: predicted low)."""
    d = t[(t["ape"] > lo) & (t["ape"] <= hi)].copy()
    d["side"] = np.where(d["err"] < 0, "under", "over")
    d["band"] = np.where(d["ape"] <= MISS_PCT, f"{lo:g}-{MISS_PCT:g}", f"{MISS_PCT:g}-{hi:g}")
    d["col"] = d["band"] + " " + d["side"]
    n = d.groupby(["group", "col"]).size().unstack("col", fill_value=0)
    order = [f"{b} {s}" for b in (f"{lo:g}-{MISS_PCT:g}", f"{MISS_PCT:g}-{hi:g}")
             for s in ("under", "over")]  # fmt: skip
    return n.reindex(columns=order, fill_value=0)


def request_count(notes) -> float:
    """The run's request count from its notes (``"all 1000 requests sent at once"`` or
    ``--num-prompts 1000``), NaN without one."""
    m = _NREQ.search(str(notes or ""))
    if not m:
        return float("nan")
    return float((m.group(1) or m.group(2)).replace(",", ""))


def burst_table(t: pd.DataFrame, raw: pd.DataFrame | None) -> pd.DataFrame:
    """Offline rows: measured and predicted run length [s] and TTFT / length.

    Measured length = requests x (ISL + OSL) / the run's measured ``total_tok_s`` (the raw
    row with the same source, hardware, model, precision, TP, release and notes); predicted
    length = requests x (ISL + OSL) / ``total_tok_s_pred``. ``len_err_pct`` is the
    predicted length's error, ``ttft_err_pct`` the mean TTFT's; equal errors: the TTFT miss
    is the run's throughput miss.
    """
    b = t[t["mode"] == "offline"].copy()
    if raw is None or b.empty or "total_tok_s_pred" not in b:
        return pd.DataFrame()
    raw = raw.copy()
    k = ["source", "hardware", "model", "precision", "tp", "framework_version", "notes"]
    thr = raw[raw["metric"] == "total_tok_s"][k + ["value"]].rename(columns={"value": "tok_s"})
    own = raw[raw["id"].isin(b["id"])][["id", *k]]
    own = own.merge(thr, on=k, how="left").drop_duplicates("id").set_index("id")
    b["n_requests"] = b["id"].map(own["notes"]).map(request_count)
    b["tok_s_measured"] = b["id"].map(own["tok_s"])
    toks = b["n_requests"] * (b["isl"] + b["osl"])
    b["len_s_measured"] = toks / b["tok_s_measured"]
    b["len_s_pred"] = toks / b["total_tok_s_pred"]
    b["len_err_pct"] = (b["len_s_pred"] / b["len_s_measured"] - 1.0) * 100.0
    b["ttft_err_pct"] = b["err"]
    b["ttft_over_len_measured"] = b["measured"] / 1e3 / b["len_s_measured"]
    b["ttft_over_len_pred"] = b["pred"] / 1e3 / b["len_s_pred"]
    cols = ["id", "engine", "gpu", "model", "precision", "tp", "isl", "osl", "n_requests",
            "len_s_measured", "len_s_pred", "len_err_pct", "ttft_err_pct",
            "ttft_over_len_measured", "ttft_over_len_pred"]  # fmt: skip
    return b[cols].sort_values(["engine", "isl", "id"])


def at_measured_length(t: pd.DataFrame, bt: pd.DataFrame) -> pd.DataFrame:
    """``t`` with each offline burst's predicted TTFT scaled by measured / predicted run
    length (:func:`burst_table`): the TTFT error left if the run's throughput were right.
    In sample (it reads the measured length): an upper bound, not a prediction."""
    f = (bt.set_index("id")["len_s_measured"] / bt.set_index("id")["len_s_pred"]).dropna()
    out = t.copy()
    sel = out["id"].isin(f.index)
    out.loc[sel, "pred"] = out.loc[sel, "pred"] * out.loc[sel, "id"].map(f)
    out["err"] = (out["pred"] / out["measured"] - 1.0) * 100.0
    out["ape"] = out["err"].abs()
    return out


def main(argv=None) -> int:
    ap = tg.parser(__doc__)
    ap.add_argument(
        "--bursts",
        default=None,
        help="a latency_rows CSV with total_tok_s_pred for the offline rows (e.g. a "
        "--source GPUStack run) when CSV lacks it",
    )
    a = ap.parse_args(argv)
    try:
        t = load(a.csv)
        b = load(a.bursts) if a.bursts else t
    except (OSError, KeyError, ValueError) as e:
        print(f"error: cannot read {a.csv}: {e}", file=sys.stderr)
        return 1
    t["group"] = [assign_group(r) for r in t.to_dict("records")]
    rep = tg.Report()
    show = rep.show
    rep.head(t, "TTFT", MISS_PCT)
    g = table(t, ["group"]).join(tg.if_exact(t, "group"))
    show("by cause group (scripts/ttft_groups.py assign_group)",
         g.loc[[x for x in GROUPS if x in g.index]])  # fmt: skip
    show("by cause group, engine and source", table(t, ["group", "engine", "source"]))
    show("rows near the 20% line (15-30%) by group and sign", near_line(t))
    bt = burst_table(b.assign(group=""), _raw(RAW_GLOB))
    if len(bt):
        show("offline bursts: run length and mean TTFT, measured and predicted", bt.set_index("id"))
        ok = bt.dropna(subset=["len_err_pct"])
        if len(ok) > 2:
            r = np.corrcoef(np.log1p(ok["len_err_pct"] / 100), np.log1p(ok["ttft_err_pct"] / 100))
            print(f"offline bursts: corr(log length error, log TTFT error) = {r[0, 1]:.2f} "
                  f"over {len(ok)} rows\n")  # fmt: skip
        m = at_measured_length(t, bt)
        by = pd.concat([table(m.assign(part="all"), ["part"]),
                        table(m.rename(columns={"engine": "part"}), ["part"]),
                        table(m.rename(columns={"vendor": "part"}), ["part"])])  # fmt: skip
        show("every TTFT row, the offline bursts at their measured run length (in sample)", by)
    rep.write(a.md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
