"""Derive the ``since`` / ``until`` of each flag in ``data/engine_flags.yaml`` from the
argument definitions of unpacked engine releases (how the vLLM and SGLang sections were made).

Usage: python scripts/engine_flags.py ENGINE DIR > section.yaml, where DIR holds one folder per
release (``DIR/0.10.1/vllm/engine/arg_utils.py``, unpacked from the release's wheel on PyPI,
``pip download vllm==0.10.1 --no-deps``). A flag is present in a release when its quoted
spelling (``"--max-num-seqs"``) appears in one of the engine's argument files; a command when
its module file exists. The output lists, per setting, the runs of consecutive read releases
that have each spelling.

TensorRT-LLM is not read this way: its trtllm section was written by hand from NVIDIA's versioned
docs pages (https://nvidia.github.io/TensorRT-LLM/<release>/commands/trtllm-serve.html, from
1.0.0 .../commands/trtllm-serve/trtllm-serve.html: the Syntax section sphinx-click renders from
tensorrt_llm/commands/serve.py at the release) and, for the LLM-API YAML keys, the release's
_modules/tensorrt_llm/llmapi/llm_args.html; tests/test_trtllm_flags.py quotes each page's
option list and checks the section against it.
"""

from __future__ import annotations

import sys
from pathlib import Path

TODAY = "2026-12-06"
ENGINES = {
    "vllm": {
        "repo": "https://github.com/vllm-project/vllm",
        "files": [
            "vllm/engine/arg_utils.py",
            "vllm/entrypoints/openai/cli_args.py",
            "vllm/benchmarks/serve.py",
            "vllm/benchmarks/datasets.py",
            "vllm/benchmarks/datasets/datasets.py",
        ],
        "tag": "v{r}",
        "value_files": [
            "vllm/config.py",
            "vllm/config/__init__.py",
            "vllm/config/cache.py",
            "vllm/config/model.py",
            "vllm/config/parallel.py",
        ],
        "values": {
            "kv_dtype": ["fp8"],
            "quantization": ["fp8"],
            "dtype": ["bfloat16", "float16"],
            "executor": ["ray"],
        },
        "settings": {
            "command": (
                "the server command",
                [
                    (
                        "python -m vllm.entrypoints.openai.api_server",
                        "file:vllm/entrypoints/openai/api_server.py",
                    ),
                    ("vllm serve", "file:vllm/scripts.py|vllm/entrypoints/cli/serve.py"),
                ],
            ),
            "model": ("the model (--model of the API server)", [("--model", None)]),
            "host": ("the listen address", [("--host", None)]),
            "port": ("the port", [("--port", None)]),
            "tp": ("tensor parallelism", [("--tensor-parallel-size", None)]),
            "pp": ("pipeline parallelism", [("--pipeline-parallel-size", None)]),
            "ep": ("expert parallelism", [("--enable-expert-parallel", None)]),
            "dp": ("data-parallel attention ranks", [("--data-parallel-size", None)]),
            "dtype": ("the activation dtype", [("--dtype", None)]),
            "quantization": ("the weight quantization", [("--quantization", None)]),
            "kv_dtype": ("the KV-cache dtype", [("--kv-cache-dtype", None)]),
            "max_num_seqs": ("the sequence cap", [("--max-num-seqs", None)]),
            "max_num_batched_tokens": (
                "the token budget per step",
                [("--max-num-batched-tokens", None)],
            ),
            "memory_fraction": ("the GPU memory fraction", [("--gpu-memory-utilization", None)]),
            "max_model_len": ("the context limit", [("--max-model-len", None)]),
            "chunked_prefill": ("chunked prefill", [("--enable-chunked-prefill", None)]),
            "prefix_caching": ("prefix caching", [("--enable-prefix-caching", None)]),
            "spec_model": (
                "the draft model / speculative method (old spelling)",
                [("--speculative-model", None)],
            ),
            "spec_tokens": (
                "the number of speculative tokens (old spelling)",
                [("--num-speculative-tokens", None)],
            ),
            "spec_config": ("speculative decoding", [("--speculative-config", None)]),
            "kv_transfer": (
                "the KV connector of disaggregated serving",
                [("--kv-transfer-config", None)],
            ),
            "executor": (
                "the distributed executor (Ray across nodes)",
                [("--distributed-executor-backend", None)],
            ),
            "bench_command": (
                "the benchmark client",
                [("vllm bench serve", "file:vllm/entrypoints/cli/benchmark/serve.py")],
            ),
            "bench_backend": ("the benchmark backend", [("--backend", "bench")]),
            "bench_base_url": ("the server URL", [("--base-url", "bench")]),
            "bench_dataset": ("the dataset", [("--dataset-name", "bench")]),
            "bench_input_len": ("the prompt length", [("--random-input-len", "bench")]),
            "bench_output_len": ("the answer length", [("--random-output-len", "bench")]),
            "bench_range_ratio": ("the length spread", [("--random-range-ratio", "bench")]),
            "bench_rate": ("the request rate", [("--request-rate", "bench")]),
            "bench_burstiness": ("the arrival burstiness", [("--burstiness", "bench")]),
            "bench_num_prompts": ("the number of prompts", [("--num-prompts", "bench")]),
            "bench_save": ("saving the result", [("--save-result", "bench")]),
            "bench_result_file": ("the result file name", [("--result-filename", "bench")]),
            "bench_percentiles": ("the percentiles reported", [("--metric-percentiles", "bench")]),
            "bench_percentile_metrics": (
                "the metrics with percentiles",
                [("--percentile-metrics", "bench")],
            ),
            "bench_ignore_eos": ("fixed answer lengths", [("--ignore-eos", "bench")]),
        },
    },
    "sglang": {
        "repo": "https://github.com/sgl-project/sglang",
        "files": ["sglang/srt/server_args.py"],
        "tag": "v{r}",
        "value_files": [],
        "values": {
            "kv_dtype": ["fp8_e4m3"],
            "quantization": ["fp8"],
            "dtype": ["bfloat16", "float16"],
            "spec_algorithm": ["EAGLE", "EAGLE3"],
            "disagg_backend": ["mooncake"],
        },
        "settings": {
            "command": (
                "the server command",
                [("python -m sglang.launch_server", "file:sglang/launch_server.py")],
            ),
            "model": ("the model", [("--model-path", None)]),
            "host": ("the listen address", [("--host", None)]),
            "port": ("the port", [("--port", None)]),
            "tp": ("tensor parallelism", [("--tp-size", None)]),
            "pp": ("pipeline parallelism", [("--pp-size", None)]),
            "ep": ("expert parallelism", [("--ep-size", None)]),
            "enable_ep_moe": ("expert parallelism (old switch)", [("--enable-ep-moe", None)]),
            "dp_attention": ("data-parallel attention", [("--enable-dp-attention", None)]),
            "dp": ("data-parallel ranks", [("--dp-size", None)]),
            "dtype": ("the activation dtype", [("--dtype", None)]),
            "quantization": ("the weight quantization", [("--quantization", None)]),
            "kv_dtype": ("the KV-cache dtype", [("--kv-cache-dtype", None)]),
            "max_num_seqs": ("the sequence cap", [("--max-running-requests", None)]),
            "max_num_batched_tokens": (
                "the prefill chunk (token budget)",
                [("--chunked-prefill-size", None)],
            ),
            "memory_fraction": ("the static memory fraction", [("--mem-fraction-static", None)]),
            "max_model_len": ("the context limit", [("--context-length", None)]),
            "no_prefix_caching": (
                "turning the radix (prefix) cache off",
                [("--disable-radix-cache", None)],
            ),
            "spec_algorithm": ("speculative decoding", [("--speculative-algorithm", None)]),
            "spec_tokens": (
                "the number of draft tokens",
                [("--speculative-num-draft-tokens", None)],
            ),
            "spec_steps": ("the number of draft steps", [("--speculative-num-steps", None)]),
            "spec_topk": ("the draft top-k", [("--speculative-eagle-topk", None)]),
            "nnodes": ("the number of nodes", [("--nnodes", None)]),
            "node_rank": ("this node's rank", [("--node-rank", None)]),
            "dist_init_addr": ("the rendezvous address across nodes", [("--dist-init-addr", None)]),
            "disagg_mode": ("the disaggregation role", [("--disaggregation-mode", None)]),
            "disagg_backend": (
                "the KV transfer backend",
                [("--disaggregation-transfer-backend", None)],
            ),
        },
    },
}


def _present(root: Path, files: list[str], flag: str, rule: str | None) -> bool:
    if rule and rule.startswith("file:"):
        return any((root / f).is_file() for f in rule[5:].split("|"))
    text = ""
    for f in files:
        p = root / f
        if p.is_file():
            text += p.read_text(encoding="utf-8", errors="replace")
    return f'"{flag}"' in text or f"'{flag}'" in text


def _order(r: str):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from planner.deploy.flags import release_order

    return release_order(r)


def main(engine: str, folder: str) -> None:
    spec = ENGINES[engine]
    rels = sorted((p.name for p in Path(folder).iterdir() if p.is_dir()), key=_order)
    repo = spec["repo"]
    print(f"  {engine}:\n    repo: {repo}\n    releases:")
    for r in rels:
        have = [f for f in spec["files"] if (Path(folder) / r / f).is_file()]
        tag = spec["tag"].format(r=r)
        print(f'      - release: "{r}"\n        files: [{", ".join(have)}]')
        print(f'        source: "{repo}/blob/{tag}/{have[0]}"')
        print(
            f'        read: "{engine}-{r} wheel from PyPI (pip download {engine}=={r} --no-deps), the files unpacked"'
        )
        print(f"        as_of: {TODAY}")
    print("    settings:")
    for key, (what, spellings) in spec["settings"].items():
        runs = []
        for flag, rule in spellings:
            present = [_present(Path(folder) / r, spec["files"], flag, rule) for r in rels]
            i = 0
            while i < len(rels):
                if present[i]:
                    j = i
                    while j + 1 < len(rels) and present[j + 1]:
                        j += 1
                    runs.append((flag, rels[i], rels[j] if j < len(rels) - 1 else None, rule))
                    i = j + 1
                else:
                    i += 1
        if not runs:
            print(f"      # {key}: {what}: in no read release", file=sys.stderr)
            continue
        print(f"      {key}:\n        what: {what}\n        spellings:")
        for flag, since, until, rule in runs:
            where = None
            if rule and rule.startswith("file:"):
                where = next(x for x in rule[5:].split("|") if (Path(folder) / since / x).is_file())
            f = where or next(
                x for x in spec["files"] if _present(Path(folder) / since, [x], flag, None)
            )
            print(f'          - flag: "{flag}"\n            since: "{since}"')
            if until:
                print(f'            until: "{until}"')
            print(f'            source: "{repo}/blob/{spec["tag"].format(r=since)}/{f}"')
            print(f"            as_of: {TODAY}")
        vals = spec.get("values", {}).get(key)
        if vals:
            vfiles = spec["files"] + spec.get("value_files", [])
            print("        values:")
            for v in vals:
                present = [_present(Path(folder) / r, vfiles, v, None) for r in rels]
                for i, j in _runs(present):
                    print(f'          - value: "{v}"\n            since: "{rels[i]}"')
                    if j < len(rels) - 1:
                        print(f'            until: "{rels[j]}"')


def _runs(present: list[bool]) -> list[tuple[int, int]]:
    """(first, last) index of each run of consecutive True."""
    out, i = [], 0
    while i < len(present):
        if present[i]:
            j = i
            while j + 1 < len(present) and present[j + 1]:
                j += 1
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
