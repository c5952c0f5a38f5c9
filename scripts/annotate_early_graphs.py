"""Write into the notes of serving rows what their engine did with CUDA graphs, read in the
engine's or harness's source at the release the rows name (issues 29, 32).

* **dstack, TensorRT-LLM H200** (``public_amd.csv``, the 36 ``trtllm-serve --backend pytorch
  --tp_size 8 --ep_size 4`` rows; image built from TensorRT-LLM commit 9b931c0f, the dstack
  task in ``dstackai/benchmarks`` ``Deepseek-R1/README.md`` @ branch deepseek-r1-benchmark):
  ``tensorrt_llm/_torch/pyexecutor/config.py`` @ 9b931c0f6305 declares
  ``use_cuda_graph: bool = False`` ("If true, use CUDA graphs for decoding"), and
  ``trtllm-serve`` (``tensorrt_llm/commands/serve.py`` of that period) builds the PyTorch
  backend's config as ``PyTorchConfig(enable_overlap_scheduler=True)`` (or none at all in the
  earlier version, i.e. the defaults); the task passes no ``--extra_llm_api_options``. So every
  step ran eagerly: the rows get the clause ``CUDA graphs off`` that
  :func:`planner.benchmarks.schema.graphs_off` reads (measured: TPOT 55.1 / 55.9 / 57.6 ms at
  concurrency 4 / 8 / 16, flat in the batch, as a launch-bound step is).
* **SGLang v0.4.1, DeepSeek-V3 on 8x H200, the single-node FP8 table** (``public_nvidia.csv``,
  the 16 ``--tp 8 --quantization fp8 --kv-cache-dtype fp8_e5m2 --enable-dp-attention`` rows of
  sgl-project/sglang ``benchmark/benchmark_dsv3/README.md`` @ 26db155e, "Benchmark for SGLang
  v0.4.1"): the command does not pass ``--disable-cuda-graph``, but SGLang 0.4.1 turned the
  graphs off itself. ``python/sglang/srt/model_executor/model_runner.py`` of the 0.4.1 wheel
  (PyPI ``sglang==0.4.1``, ``sglang/version.py`` dated 2024-12-25), ``ModelRunner.__init__``,
  "Model-specific adjustment": with MLA on (``attention_arch == AttentionArch.MLA and not
  disable_mla``) it sets ``attention_backend = "triton"`` and, under ``# FIXME(HandH1998)``,
  ``if "DeepseekV3ForCausalLM" in ...architectures and not disable_cuda_graph:
  disable_cuda_graph = True``. The 0.4.1.post1 wheel (2024-12-27) no longer has those lines,
  and 0.4.1.post2's release note (PR #2643) headlines "Using CUDA Graph". The source's other
  three tables already pass ``--disable-cuda-graph`` (``cuda_graph=disabled``).

* **MLPerf Inference v4.1, Dell XE9680 MI300X, Server** (``public.csv``, mlp41-0057 / 0058 /
  0060): the notes quote the *Offline* script's ``--enforce-eager`` (the source of their
  precision), which :func:`~planner.benchmarks.schema.graphs_off` would read as eager. The
  Server run is not: ``closed/Dell/code/llama2-70b-99/test_VllmFp8/test_VllmFp8_SyncServer_perf.sh``
  @ a2f5d66d passes no ``--enforce-eager``, and ``VllmFp8/mainVllmFp8_SyncServer.py`` @ b06ceefc
  keeps ``DefaultEngineInput.enforce_eager: bool = False`` (the argument's default is None,
  so the dataclass's False stands). The rows get ``CUDA graphs on``, which wins.

The clause is appended to ``notes``; running the script twice changes nothing.
Usage: ``python scripts/annotate_early_graphs.py [--check]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (file, text that picks the rows' lines, clause appended to their notes)
RULES = (
    (
        "data/benchmarks/public_amd.csv",
        "server: trtllm-serve --backend pytorch --tp_size 8 --ep_size 4;",
        "CUDA graphs off (TensorRT-LLM @ 9b931c0f tensorrt_llm/_torch/pyexecutor/config.py:"
        " PyTorchConfig use_cuda_graph: bool = False; trtllm-serve passes"
        " PyTorchConfig(enable_overlap_scheduler=True) and the task no extra_llm_api_options)",
    ),
    (
        "data/benchmarks/public_nvidia.csv",
        "table 'DeepSeek V3 on 8xH200 (single-node) / FP8'",
        "CUDA graphs off (SGLang 0.4.1 sglang/srt/model_executor/model_runner.py, model-specific"
        " adjustment with MLA on: DeepseekV3ForCausalLM sets server_args.disable_cuda_graph ="
        " True under FIXME(HandH1998); gone in 0.4.1.post1)",
    ),
    (
        "data/benchmarks/public.csv",
        "inference_results_v4.1 @ 198fc46799b3 closed/Dell/results/XE9680_MI300X_192GBx8/"
        "llama2-70b-99/Server/",
        "CUDA graphs on (added 2026-12-07, issue 32, branch s8-vllmlat: the Server run, unlike"
        " the Offline script quoted above, passes no --enforce-eager:"
        " closed/Dell/code/llama2-70b-99/test_VllmFp8/test_VllmFp8_SyncServer_perf.sh @ a2f5d66d;"
        " VllmFp8/mainVllmFp8_SyncServer.py @ b06ceefc DefaultEngineInput 'enforce_eager: bool"
        " = False', the --enforce-eager argument defaulting to None)",
    ),
)


def annotate(text: str, pick: str, clause: str) -> tuple[str, int]:
    """Append ``; clause`` to the notes (the last, quoted field) of every line containing
    ``pick`` that does not carry the clause yet; returns the new text and the count."""
    out, n = [], 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if pick in body and clause not in body and body.endswith('"'):
            body = body[:-1] + "; " + clause + '"'
            n += 1
        out.append(body + line[len(line.rstrip("\r\n")) :])
    return "".join(out), n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only say how many rows would change")
    args = ap.parse_args(argv)
    total = 0
    for rel, pick, clause in RULES:
        path = ROOT / rel
        new, n = annotate(path.read_text(), pick, clause)
        total += n
        print(f"{rel}: {n} rows {'would change' if args.check else 'annotated'}")
        if n and not args.check:
            path.write_text(new)
    return 1 if (args.check and total) else 0


if __name__ == "__main__":
    sys.exit(main())
