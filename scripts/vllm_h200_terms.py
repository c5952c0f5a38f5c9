"""Which fitted term makes vLLM fp8 TP2 on H200 need ~4x TensorRT-LLM's GPUs (a diagnosis).

The buyer's case (docs/changes/2026-12-09/vllmh200.md): llama-3.1-70b, 1,500 / 300 tokens, TTFT p99 2 s,
TPOT p99 50 ms, H200, fp8, TP2. The script copies the calibration profile and replaces, one
group at a time, the parameters of the release node vLLM takes when no release is named
(``vllm@0.6.3.post2.dev308`` on nvidia-h100-sxm, fp8) with TensorRT-LLM's H200 fp8 values,
then runs ``planner capacity`` and ``planner estimate`` on each copy. The copies are
what-ifs, not fits.

    PYTHONPATH=$PWD python scripts/vllm_h200_terms.py [--calibration PROFILE.yaml] [--out DIR]
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import tempfile
from pathlib import Path

import yaml

NODE = ("vllm", "nvidia-h100-sxm", "fp8", "0.6.3.post2.dev308")
TRT = "trtllm@1.0"  # the donor of the swapped values: trtllm@1.0 / nvidia-h200-sxm / fp8
OVERHEADS = ("step_overhead_s", "layer_overhead_s", "seq_overhead_s", "sched_overhead_s",
             "eager_layer_s")  # fmt: skip
GROUPS = {
    "base": (),
    "overheads=trt": OVERHEADS,
    "comm_eff=trt": ("comm_eff",),
    "compute_eff=trt": ("compute_eff", "compute_half_tokens"),
    "compute+comm=trt": ("compute_eff", "compute_half_tokens", "comm_eff"),
    "all=trt": (
        "mem_eff",
        "kv_mem_eff",
        "compute_eff",
        "compute_half_tokens",
        "attn_eff",
        "comm_eff",
        *OVERHEADS,
    ),  # fmt: skip
}
CASE = ["--input-tokens", "1500", "--output-tokens", "300", "--peak-rps", "50",
        "--headroom", "0.2"]  # fmt: skip
SCENARIO = """name: vllmh200
model: llama-3.1-70b
workload:
  preset: chat
  traffic: {peak_rps: 50, arrival: poisson}
slo:
  ttft: {max_s: 2.0, percentile: p99}
  tpot: {max_s: 0.05, percentile: p99}
deployment: {gpu: nvidia-h200-sxm, framework: vllm, precision: fp8, tp: 2}
"""


def _run(args: list[str]) -> dict:
    out = subprocess.run(["planner", *args, "--format", "json"], capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibration", default="data/calibration/profile.yaml")
    ap.add_argument("--out", default=None, help="folder for the profile copies (default: temp)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    (out / "scenario.yaml").write_text(SCENARIO)
    prof = yaml.safe_load(Path(args.calibration).read_text())
    node = next(n for n in prof["release_nodes"]
                if (n["framework"], n["gpu"], n["precision"], n["release"]) == NODE)  # fmt: skip
    base = copy.deepcopy(node["params"])
    trt = _run(["estimate", "--model", "llama-3.1-70b", "--gpu", "nvidia-h200-sxm",
                "--precision", "fp8", "--framework", TRT, "--tp", "2", "--batch", "1",
                "--input-len", "1500", "--output-len", "300",
                "--calibration", args.calibration])["params"]  # fmt: skip
    print("variant | req/s per replica | GPUs | TPOT p99 | mean batch | decode step b=32 [ms] "
          "(gemm / comm / overhead) | prefill 32 x 1500 [s]")  # fmt: skip
    for name, keys in GROUPS.items():
        node["params"] = {**base, **{k: trt[k] for k in keys}}
        f = out / f"profile_{name.replace('=', '_').replace('+', '_')}.yaml"
        f.write_text(yaml.safe_dump(prof, sort_keys=False))
        cap = _run(["capacity", str(out / "scenario.yaml"), "--no-curve", *CASE,
                    "--calibration", str(f)])  # fmt: skip
        est = _run(["estimate", "--model", "llama-3.1-70b", "--gpu", "nvidia-h200-sxm",
                    "--precision", "fp8", "--framework", "vllm", "--tp", "2", "--batch", "32",
                    "--input-len", "1500", "--output-len", "300", "--calibration", str(f)])  # fmt: skip
        d = est["decode"]
        print(
            f"{name} | {cap['max_rate_per_replica']:.3f} | {cap['num_gpus']} | "
            f"{cap['tpot_p99_at_max_rate_s'] * 1e3:.1f} ms | {cap['batch_size_mean']:.1f} | "
            f"{d['time_s'] * 1e3:.1f} ({d['t_gemm_s'] * 1e3:.1f} / {d['t_comm_s'] * 1e3:.1f} / "
            f"{d['t_overhead_s'] * 1e3:.1f}) | {est['prefill']['time_s']:.2f}"
        )


if __name__ == "__main__":
    main()
