"""The MLPerf Llama-2-70B OpenOrca lengths of planner.workload.presets, derived from their
two sources (issue 32): the prompt lengths of the whole 24,576-sample performance set, and
the answer lengths the submitted engines generated in MLPerf v5.1's TEST06 compliance runs.

Usage: python scripts/openorca_lengths.py --dashboard GIT_DIR --results GIT_DIR

  --dashboard: a git directory of github:openshift-psap/performance-dashboard (@7cd1065):
      mlperf-data/summaries/llama2-70b-99.csv, one row per sample of
      open_orca_gpt4_tokenized_llama.sampled_24576.pkl (tok_input_length, tok_output_length:
      the GPT-4 reference answer).
  --results: a git directory of github:mlcommons/inference_results_v5.1 (@965182b0): every
      closed/*/compliance/*/llama2-70b-99/*/TEST06/accuracy/mlperf_log_accuracy.json, one
      entry per completed query with its qsl_idx and token_count (loadgen's n_tokens).

Prints the quantiles at OPENORCA_PROBS (numpy "inverted_cdf") of the prompt lengths and of the
generated lengths, their means, and the blocks of the set (it is ordered by OpenOrca subset:
its first 2,162 samples, which the planner used before, are the short-prompt quarter).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess

import numpy as np
import pandas as pd

from planner.workload.presets import OPENORCA_PROBS

SUMMARY = "mlperf-data/summaries/llama2-70b-99.csv"


def _git(git_dir: str, *args: str) -> str:
    env = dict(os.environ, GIT_DIR=git_dir)
    return subprocess.run(
        ["git", *args], env=env, capture_output=True, text=True, check=True
    ).stdout


def prompt_lengths(dashboard: str) -> pd.DataFrame:
    """input_length, output_length (GPT-4 reference) of the 24,576 samples, in set order."""
    return pd.read_csv(io.StringIO(_git(dashboard, "show", f"HEAD:{SUMMARY}")))


def generated_lengths(results: str) -> pd.DataFrame:
    """submitter, system, scenario, qsl_idx, token_count of every TEST06 completion whose log
    parses (Cisco's six logs are cut at 4,096 characters and do not)."""
    paths = [
        p
        for p in _git(results, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
        if "/llama2-70b-99/" in p and p.endswith("TEST06/accuracy/mlperf_log_accuracy.json")
    ]
    rows = []
    for p in paths:
        try:
            entries = json.loads(_git(results, "show", f"HEAD:{p}"))
        except json.JSONDecodeError:
            continue
        parts = p.split("/")
        rows += [(parts[1], parts[3], parts[5], e["qsl_idx"], e["token_count"]) for e in entries]
    return pd.DataFrame(rows, columns=["submitter", "system", "scenario", "qsl_idx", "tokens"])


def quantiles(x) -> list[int]:
    return [int(v) for v in np.quantile(np.asarray(x), OPENORCA_PROBS, method="inverted_cdf")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dashboard", required=True)
    ap.add_argument("--results", required=True)
    a = ap.parse_args(argv)
    ds = prompt_lengths(a.dashboard)
    gen = generated_lengths(a.results)
    print(f"prompts: {len(ds)} samples, mean {ds.input_length.mean():.2f}")
    print("  quantiles", quantiles(ds.input_length))
    print("  blocks of 2,048 (mean prompt, mean reference answer):")
    for s in range(0, len(ds), 2048):
        b = ds.iloc[s : s + 2048]
        print(f"    {s:>6}: {b.input_length.mean():6.1f} {b.output_length.mean():6.1f}")
    print(f"  first 2,162: mean {ds.input_length.iloc[:2162].mean():.1f}")
    print(
        f"generated: {len(gen)} completions of {gen.qsl_idx.nunique()} samples, "
        f"{gen.submitter.nunique()} submitters; mean {gen.tokens.mean():.2f}, "
        f"under 20 tokens {100 * (gen.tokens < 20).mean():.2f}%"
    )
    print("  quantiles", quantiles(gen.tokens))
    print(f"  their prompts: mean {ds.input_length.values[gen.qsl_idx].mean():.1f}")
    ref = ds.output_length * 290.0 / ds.output_length.mean()
    print(f"GPT-4 reference scaled to 290: under 20 tokens {100 * (ref < 20).mean():.2f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
