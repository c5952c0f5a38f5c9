"""Where issue 30's held-out disaggregated throughput is too fast (docs/changes/2026-12-10/i30fast.md).

Groups the InferenceX rows of an ``issue30_holdout.py --csv`` file into runs (one published
point: its output tok/s, median TPOT / TTFT / E2E) and splits each run's log error of output
throughput (predicted over measured, positive = too fast) into three parts:

* ``L_little``: the run's own loss against Little's law. Measured output tok/s x median E2E
  / (C x mean output) is below 1 when the run's drain counts; the planner's is ~1;
* ``L_ttft``: the E2E error the TTFT alone makes (measured TTFT in place of the predicted);
* ``L_dec``: the rest of the E2E error, the decode part.

Usage::

    python scripts/issue30_holdout.py --csv i30.csv   # held-out predictions, one per row
    python scripts/i30_fast_decompose.py i30.csv
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
FILES = ("public_inferencex.csv", "public_inferencex_history.csv")
_IO = re.compile(r"nominal input (\d+) / output (\d+) tokens, range ratio ([0-9.]+)")


def runs(csv: str) -> pd.DataFrame:
    b = pd.concat(
        [pd.read_csv(ROOT / "data/benchmarks" / f, dtype=str, keep_default_na=False) for f in FILES]
    )
    d = pd.read_csv(csv)
    m = d.merge(b[["id", "hardware", "framework", "concurrency", "metric", "notes"]], on="id")
    m = m[m["held out"].notna() & m.notes.str.contains("disaggregated prefill/decode")]
    k = m.notes.str.replace(r"^.*?InferenceX multi-node", "", regex=True)
    m["key"] = k.str.replace(r"; image.*$", "", regex=True)
    out = []
    for (hw, fw, c, _), g in m.groupby(["hardware", "framework", "concurrency", "key"]):
        v = {r.metric_y: (r.measured, r["held out"]) for _, r in g.iterrows()}
        io = _IO.search(g.notes.iloc[0])
        need = ("output_tok_s_total", "e2e_ms_median", "ttft_ms_median", "tpot_ms_median")
        if not io or not all(n in v for n in need):
            continue
        oslm = int(io[2]) * (1 + float(io[3])) / 2
        (om, op), (em, ep), (tm, tp) = (v[n] for n in need[:3])
        c = float(c)
        lm, lp = om * em / 1e3 / (c * oslm), op * ep / 1e3 / (c * oslm)
        out.append(
            dict(
                fw=fw, hw=hw, conc=c, little_m=lm, little_p=lp,
                L_tot=np.log(op / om), L_little=np.log(lp / lm),
                L_ttft=np.log((tm + ep - tp) / ep), L_dec=np.log(em / (tm + ep - tp)),
                tpot_fast=v["tpot_ms_median"][0] / v["tpot_ms_median"][1] - 1,
            )
        )  # fmt: skip
    return pd.DataFrame(out)


def main(argv: list[str]) -> int:
    r = runs(argv[0])
    cols = ["little_m", "little_p", "L_tot", "L_little", "L_ttft", "L_dec", "tpot_fast"]
    g = r.groupby(["fw", "hw"]).agg(n=("conc", "size"), **{c: (c, "median") for c in cols})
    pd.set_option("display.width", 200)
    print(g.round(3).to_string())
    print("all", len(r), r[cols].median().round(3).to_dict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
