#!/usr/bin/env python3
"""Request traces for bench/serve_ref.py, drawn on the CPU with the planner's own presets.

For each scenario (a preset of planner/workload.py: prompt and answer length distributions) one
list of requests is drawn (lengths from the preset, Poisson arrivals at unit rate, seed fixed);
the trace for rate r holds the first max(n_min, r * seconds) requests with arrival times / r.
Written as bench/traces/<scenario>_rate<r>.csv with the columns of `planner simulate --trace`
(timestamp,input_tokens,output_tokens; timestamp = arrival in seconds).

  .venv/bin/python bench/make_traces.py            # needs the planner package, not torch
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from planner.workload import preset

SCENARIOS = {  # scenario: (rates in req/s, seconds of arrivals, minimum requests)
    # Llama-3.1-8B: 5 ... 50 and 1 ... 7; Qwen2.5-14B: 4, 10, 16, 22 and 1, 2.5, 3.5 (the same
    # unit-rate list: adding a rate adds a file and leaves the others unchanged)
    "chat": ([4, 5, 10, 15, 16, 22, 25, 35, 50], 20.0, 100),
    "rag": ([1, 2.5, 3.5, 4, 5.5, 7], 30.0, 40),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(__file__), "traces"))
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    for scen, (rates, secs, n_min) in SCENARIOS.items():
        w = preset(scen)
        n_max = max(n_min, int(max(rates) * secs))
        rng = np.random.default_rng(args.seed)
        unit = np.cumsum(rng.exponential(1.0, n_max))
        unit -= unit[0]
        n_in = w.input_tokens.sample(n_max, rng)
        n_out = w.output_tokens.sample(n_max, rng)
        for r in rates:
            n = max(n_min, int(r * secs))
            path = os.path.join(args.out_dir, f"{scen}_rate{r:g}.csv")
            with open(path, "w") as f:
                f.write("timestamp,input_tokens,output_tokens\n")
                for i in range(n):
                    f.write(f"{unit[i] / r:.4f},{int(n_in[i])},{int(n_out[i])}\n")
            print(
                f"{path}: {n} requests, mean in {n_in[:n].mean():.0f}, "
                f"mean out {n_out[:n].mean():.0f}, max in+out {(n_in[:n] + n_out[:n]).max()}"
            )


if __name__ == "__main__":
    main()
