"""MLPerf Llama-2-70B Server and Interactive (tight TPOT): predicted per-GPU throughput at
the scenario's latency limits against the results, per GPU (planner/benchmarks/mlperf_latency.py).

Usage: PYTHONPATH=$PWD python scripts/mlperf_tight_tpot.py [-o table.csv]
"""

from __future__ import annotations

import argparse

from planner.benchmarks.io import load_measurements
from planner.benchmarks.mlperf_latency import tight_tpot_table
from planner.calibration.fit import public_files_default
from planner.catalog import load_catalog
from planner.catalog.profile import load_profile


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default="/tmp/mlperf_tight_tpot.csv")
    a = ap.parse_args(argv)
    cat = load_catalog()
    t = tight_tpot_table(load_measurements(public_files_default(), cat), cat, load_profile())
    t.to_csv(a.output, index=False)
    print(t.to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
