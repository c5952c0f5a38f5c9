"""MLPerf Llama-2-70B Server and Interactive (tight TPOT): predicted per-GPU throughput at
the scenario's latency limits against the results, per GPU pooled over rounds and per GPU
within each round, and the pairs of GPUs a round orders one way and the planner the other
(planner/benchmarks/mlperf_latency.py).

Usage: PYTHONPATH=$PWD python scripts/mlperf_tight_tpot.py [-o table.csv] [--rows rows.csv]
"""

from __future__ import annotations

import argparse

import pandas as pd

from planner.benchmarks.io import load_measurements
from planner.benchmarks.mlperf_latency import (
    tight_tpot_pooled,
    tight_tpot_records,
    tight_tpot_rounds,
)
from planner.calibration.accuracy import ordering_pairs
from planner.calibration.fit import public_files_default
from planner.catalog import load_catalog
from planner.catalog.profile import load_profile


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default="/tmp/mlperf_tight_tpot.csv")
    ap.add_argument("--rows", default="/tmp/mlperf_tight_tpot_rows.csv", help="per-row CSV")
    a = ap.parse_args(argv)
    pd.set_option("display.width", 250)
    cat = load_catalog()
    df = load_measurements(public_files_default(), cat)
    prof = load_profile()
    recs = tight_tpot_records(df, cat, prof)
    recs.to_csv(a.rows, index=False)
    t = tight_tpot_pooled(recs)
    t.to_csv(a.output, index=False)
    print("Per scenario and GPU, pooled over rounds:")
    print(t.to_string())
    r = tight_tpot_rounds(recs)
    print("\nPer scenario and round:")
    print(r.to_string())
    p = ordering_pairs(r)
    print("\nPairs predicted in the wrong order (ranges_overlap: the round's systems do not "
          "separate them):")  # fmt: skip
    print(p.to_string() if len(p) else "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
