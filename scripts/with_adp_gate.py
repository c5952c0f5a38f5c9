"""Run a script with the attention-DP balance gate in the serving loop (what-if of
``planner.benchmarks.scheduler_waits.ADP_GATE_IN_LOOP``, OFF by default;
changes/s14-mlperfr1.md). Usage (repository root)::

    PYTHONPATH=$PWD python scripts/with_adp_gate.py scripts/ep_accuracy.py --save /tmp/on.csv
    PYTHONPATH=$PWD python scripts/with_adp_gate.py scripts/latency_rows.py -o /tmp/lat_on.csv \\
        --cache /tmp/lat.pkl
"""

import runpy
import sys

import planner.benchmarks.scheduler_waits as waits

if __name__ == "__main__":
    waits.ADP_GATE_IN_LOOP = True
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")
