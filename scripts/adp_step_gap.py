"""TensorRT-LLM attention-DP (DEP) decode: how large the missing per-step cost is, read from
held-out predictions (issue 29 items 1 and 2; docs/changes/2026-12-09/trtdp.md).

No simulation and no fit; seconds. Two tables from ``scripts/ep_accuracy.py --save`` output:

* **The shortfall.** Every held-out TPOT row of a TensorRT-LLM attention data-parallel
  layout (``framework == trtllm``, layout kind ``DEP / DP-attention``), by source: measured
  and predicted TPOT [ms], the shortfall ``measured - predicted`` [ms] and the ratio
  ``predicted / measured``, medians and quartiles. A cost the step model lacks that is the
  same on every step (a fixed per-step term) shows as a shortfall in ms that is flat across
  rows; one that scales with the step shows as a flat ratio.
* **The what-if.** A constant ``C`` [ms] added to every step of those deployments, as a
  per-step term would add it, for a grid of ``C``:

  - TPOT rows: ``TPOT' = TPOT + C``. TPOT is the mean gap between a sequence's tokens, i.e.
    the mean step time the sequence sees, so a constant per-step cost adds exactly ``C``.
  - The DeepSeek-R1 8-GPU front (InferenceX points, ``ep_accuracy.deepseek_front_ix``): each
    TensorRT-LLM attention-DP point's predicted interactivity becomes ``1000 / (TPOT + C)`` and
    its output tok/s per GPU ``x TPOT / (TPOT + C)``. That scaling is exact for a closed loop
    whose requests spend all their time decoding; it ignores the time to the first token
    (1-4 % of a 1k/1k request on these points), so it slightly overstates the throughput
    drop.
  - Throughput rows of offline or rate-driven runs are not recomputed: their step counts are
    not in the saved predictions. The table says so.

  The what-if is a sizing tool, not a model change: ``C`` is not a published number.

Usage (repository root)::

    PYTHONPATH=$PWD python scripts/adp_step_gap.py --predictions HELD_OUT.csv [--costs 0,1,2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from mlperf_stream_gap import markdown  # noqa: E402  (the same pipe table)

#: layout kinds of issue 29 item 1 (scripts/ep_accuracy.py EP_KINDS)
EP_KINDS = ("TP+EP", "DEP / DP-attention")
#: the band of issue 29 (|predicted / measured - 1| <= 0.25)
BAND = 0.25
#: interactivity levels of issue 29 item 2 [tok/s/user]
LEVELS = (20.0, 40.0, 60.0)


def is_tpot(metric: pd.Series) -> pd.Series:
    """TPOT / ITL rows (what ``ep_accuracy.kind_table`` scores as TPOT)."""
    return metric.astype(str).str.startswith(("tpot", "itl"))


def trt_dep(loso: pd.DataFrame) -> pd.Series:
    """Rows of a TensorRT-LLM attention data-parallel deployment."""
    return (loso["framework"] == "trtllm") & (loso["layout_kind"] == "DEP / DP-attention")


def shortfall_table(loso: pd.DataFrame) -> pd.DataFrame:
    """The held-out TPOT shortfall of the TensorRT-LLM attention-DP rows, by source."""
    d = loso[is_tpot(loso["metric"]) & trt_dep(loso)].copy()
    d["short_ms"] = d["measured"] - d["predicted"]
    d["ratio"] = d["predicted"] / d["measured"]
    recs = []
    for src, g in d.groupby("source"):
        q = g["short_ms"].quantile([0.25, 0.5, 0.75])
        r = g["ratio"].quantile([0.25, 0.5, 0.75])
        recs.append(
            {
                "source": src[:48],
                "rows": len(g),
                "measured ms (median)": round(float(g["measured"].median()), 1),
                "predicted ms (median)": round(float(g["predicted"].median()), 1),
                "shortfall ms q25 / q50 / q75": " / ".join(f"{v:.1f}" for v in q),
                "pred/meas q25 / q50 / q75": " / ".join(f"{v:.2f}" for v in r),
                "within 25%": int((abs(g["ratio"] - 1) <= BAND).sum()),
            }
        )
    return pd.DataFrame(recs)


def with_step_cost(loso: pd.DataFrame, c_ms: float) -> pd.DataFrame:
    """``loso`` with ``c_ms`` [ms] added to the predicted TPOT of every TensorRT-LLM
    attention-DP TPOT row (``ape`` and ``log_err`` recomputed); other rows unchanged."""
    if c_ms < 0:
        raise ValueError("the per-step cost must be >= 0 ms")
    out = loso.copy()
    m = is_tpot(out["metric"]) & trt_dep(out)
    out.loc[m, "predicted"] = out.loc[m, "predicted"] + c_ms
    out.loc[m, "log_err"] = np.log(out.loc[m, "predicted"] / out.loc[m, "measured"])
    out.loc[m, "ape"] = (out.loc[m, "predicted"] / out.loc[m, "measured"] - 1).abs()
    return out


def tpot_score(loso: pd.DataFrame) -> dict:
    """Issue 29 item 1, TPOT half: EP + DEP TPOT rows, MdAPE [%], bias [%], rows within 25 %."""
    g = loso[loso["layout_kind"].isin(EP_KINDS) & is_tpot(loso["metric"])]
    return {
        "EP+DEP TPOT rows": len(g),
        "MdAPE %": round(100 * float(np.median(g["ape"])), 1),
        "bias %": round(100 * float(np.expm1(np.median(g["log_err"]))), 1),
        "within 25%": int((g["ape"] <= BAND).sum()),
    }


def points_with_step_cost(points: pd.DataFrame, c_ms: float) -> pd.DataFrame:
    """The front's points (``ep_accuracy.deepseek_points``) with ``c_ms`` [ms] on every step of
    the TensorRT-LLM attention-DP points: interactivity ``1000 / (TPOT + C)``, output tok/s
    per GPU ``x TPOT / (TPOT + C)`` (a closed loop that only decodes)."""
    if c_ms < 0:
        raise ValueError("the per-step cost must be >= 0 ms")
    out = points.copy()
    m = (out["framework"] == "trtllm") & out["layout"].str.contains("DP-attn")
    tpot = 1000.0 / out.loc[m, "int_p"]
    out.loc[m, "int_p"] = 1000.0 / (tpot + c_ms)
    out.loc[m, "thr_p"] = out.loc[m, "thr_p"] * tpot / (tpot + c_ms)
    return out


def what_if(loso: pd.DataFrame, costs, gpus=("nvidia-b200", "nvidia-h200-sxm", "amd-mi355x")):
    """One line per per-step cost: issue 29 item 1's TPOT score and item 2's front ratios."""
    from ep_accuracy import deepseek_front_ix, deepseek_points

    pts = deepseek_points(loso)
    recs = []
    for c in costs:
        rec = {"C ms": c, **tpot_score(with_step_cost(loso, c))}
        front = deepseek_front_ix(points_with_step_cost(pts, c))
        for gpu in gpus:
            f = front[front["gpu"] == gpu].set_index("interactivity >= tok/s/user")["ratio"]
            rec[gpu.split("-")[1] + " front 20/40/60"] = " / ".join(
                "-" if pd.isna(f.get(lv)) else f"{f.get(lv):.2f}" for lv in LEVELS
            )
        recs.append(rec)
    return pd.DataFrame(recs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--predictions", required=True, help="scripts/ep_accuracy.py --save CSV")
    ap.add_argument("--costs", default="0,1,2,3,4,5,6", help="per-step costs C [ms], comma list")
    a = ap.parse_args(argv)
    try:
        costs = [float(x) for x in a.costs.split(",") if x.strip()]
        if any(c < 0 for c in costs):
            raise ValueError("costs must be >= 0")
    except ValueError as e:
        print(f"error: --costs: {e}", file=sys.stderr)
        return 2
    try:
        loso = pd.read_csv(a.predictions, dtype={"id": str})
        loso[["measured", "predicted"]]  # noqa: B018  (the columns must be there)
        loso["layout_kind"]  # noqa: B018
    except (OSError, KeyError, pd.errors.ParserError) as e:
        print(f"error: cannot read held-out predictions from {a.predictions}: {e}", file=sys.stderr)
        return 2
    print("TensorRT-LLM attention-DP TPOT rows, held out (shortfall = measured - predicted):\n")
    print(markdown(shortfall_table(loso)))
    print("\nWhat-if: C ms on every step of those deployments (a sizing tool, not a model):\n")
    print(markdown(what_if(loso, costs)))
    print(
        "\nThroughput rows of offline / rate-driven runs are not recomputed (their step counts "
        "are not in the predictions)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
