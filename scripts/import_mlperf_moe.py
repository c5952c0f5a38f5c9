"""MLPerf Inference DeepSeek-R1 results with their layouts -> data/benchmarks/public_mlperf_moe.csv.

Reads the submissions of two rounds from local git mirrors (no work tree needed):

* v5.1: ``mlcommons/inference_results_v5.1`` (the ``fetch`` tool's mirror);
* v6.0: ``gbeezybez/inference_results_v6.0`` (a copy of ``mlcommons/inference_results_v6.0``,
  whose own snapshot is not stored).

For every ``<division>/<submitter>/results/<system>/deepseek-r1/<scenario>/performance/run_1/
mlperf_log_summary.txt`` it writes one row per published number: Offline "Tokens per second";
Server / Interactive "Completed tokens per second" and the mean and 99th-percentile TTFT and
TPOT (loadgen's "first token latency" and "time to output token", ns -> ms). The layout
comes from the submitter's TensorRT-LLM config (``configs/<system>/<scenario>/deepseek-r1.py``
and, for disaggregated Interactive runs, the prefill / decode worker ``.yml`` files it names):
``tensor_parallelism T`` with ``enable_attention_dp`` is TensorRT-LLM's attention-DP layout
(DEP-T: the planner's ``tp 1, attention_dp T``), ``moe_expert_parallelism`` is ``ep``.

The MLPerf DeepSeek-R1 dataset (4,388 samples, outputs up to 20,000 tokens) has variable
lengths, so ``isl`` / ``osl`` stay empty and the notes name the set (the serving predictor
reads its distribution, ``planner.workload.presets.mlperf_deepseek_r1_lengths``); the notes
give the mean generated tokens per sample (tokens/s / samples/s of the same run).

Usage (from the repository root)::

    python scripts/import_mlperf_moe.py            # rewrite the CSV
    python scripts/import_mlperf_moe.py --check    # compare with the committed CSV
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

from planner.benchmarks.schema import SCHEMA_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "benchmarks" / "public_mlperf_moe.csv"
MIRRORS = Path("/work/.mirror")

#: the row schema's columns (planner/benchmarks/schema.py); these files state no moe_tp
COLUMNS = [c for c in SCHEMA_COLUMNS if c != "moe_tp"]

#: round -> (mirror dir, repo label, source name, id prefix, as_of)
ROUNDS = {
    "v5.1": (
        "mlcommons+inference_results_v5.1",
        "mlcommons/inference_results_v5.1",
        "MLPerf Inference v5.1 DeepSeek-R1",
        "mlds51",
        "2025-09-09",
    ),
    "v6.0": (
        "gbeezybez+inference_results_v6.0",
        "gbeezybez/inference_results_v6.0 (copy of mlcommons/inference_results_v6.0)",
        "MLPerf Inference v6.0 DeepSeek-R1",
        "mlds60",
        "2026-04-01",
    ),
}

#: accelerator_model_name of the system json -> catalog id
GPUS = (
    ("GB300", "nvidia-gb300"),
    ("GB200", "nvidia-gb200"),
    ("B300", "nvidia-b300"),
    ("B200", "nvidia-b200"),
    ("H200", "nvidia-h200-sxm"),
)
#: loadgen constraint of each scenario (mlperf_log_summary.txt "Test Parameters Used")
DATASET = (
    "dataset: the MLPerf DeepSeek-R1 performance set (4,388 samples, outputs up to 20,000 "
    "tokens, reasoning traces), variable ISL/OSL (isl/osl empty; lengths: "
    "workload.presets.mlperf_deepseek_r1_lengths)"
)


TPOT_MEAN = "Mean Time to Output Token (ns)"


def git(mirror: str, *args: str) -> str:
    d = MIRRORS / mirror / "repo"
    return subprocess.run(
        ["git", f"--git-dir={d}", *args], check=True, capture_output=True, text=True
    ).stdout


def show(mirror: str, path: str) -> str | None:
    try:
        return git(mirror, "show", f"HEAD:{path}")
    except subprocess.CalledProcessError:
        return None


def summary(text: str) -> dict[str, float | str]:
    """The numbers of a loadgen mlperf_log_summary.txt (ns latencies kept in ns)."""
    out: dict[str, float | str] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        k, v = (s.strip() for s in line.split(":", 1))
        try:
            out[k] = float(v)
        except ValueError:
            out[k] = v
    return out


def _int(pat: str, text: str) -> int | None:
    m = re.search(pat, text)
    return int(m.group(1)) if m else None


def _float(pat: str, text: str) -> float | None:
    m = re.search(pat, text)
    return float(m.group(1)) if m else None


def _code(text: str) -> str:
    """A python config without its comment lines (commented-out alternatives)."""
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))


def flags_block(text: str, name: str) -> str:
    """The body of the ``llm_fields.<name>: {...}`` dict of a config (braces matched), or ""."""
    m = re.search(rf"{name}:\s*\{{", text)
    if m is None:
        return ""
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[m.end() : i - 1]


def py_config(text: str) -> dict:
    """Layout and engine settings of an NVIDIA-harness ``deepseek-r1.py`` config.

    ``max_tokens`` is the runtime flag where the config states one: the harness passes
    ``trtllm_runtime_flags['max_num_tokens']`` to ``trtllm-serve --max_num_tokens`` and
    takes the build flag only when the runtime one is unset (``code/llmlib/config.py``:
    ``runtime_flags[config] = runtime_flags.get(config) or build_flags[config]``;
    ``code/llmlib/launch_server.py``)."""
    t = _code(text)
    runtime = flags_block(t, "trtllm_runtime_flags")
    graphs = re.search(r"'cuda_graph_batch_sizes':\s*\[([^\]]*)\]", runtime)
    return {
        "tp": _int(r"tensor_parallelism:\s*(\d+)", t),
        "pp": _int(r"pipeline_parallelism:\s*(\d+)", t) or 1,
        "ep": _int(r"moe_expert_parallelism:\s*(\d+)", t),
        "adp": bool(re.search(r"'enable_attention_dp':\s*True", t)),
        "batch": _int(r"gpu_batch_size:\s*\{[^}]*'deepseek-r1':\s*(\d+)", t),
        "max_tokens": _int(r"'max_num_tokens':\s*(\d+)", runtime)
        or _int(r"'max_num_tokens':\s*(\d+)", t),
        "mem_frac": _float(r"'kvcache_free_gpu_mem_frac':\s*([\d.]+)", t),
        "stream_interval": _int(r"[\"']stream_interval[\"']:\s*(\d+)", runtime),
        "graph_sizes": " ".join(graphs.group(1).split()) if graphs else None,
        "graph_padding": bool(re.search(r"'cuda_graph_padding_enabled':\s*True", runtime)),
        "backend": (re.search(r"'trtllm_backend':\s*'(\w+)'", runtime) or [None, None])[1],
        "kv": (re.search(r"'kv_cache_dtype':\s*'(\w+)'", t) or [None, None])[1],
        "precision": (re.search(r"precision:\s*'(\w+)'", t) or [None, None])[1],
        "mtp": _int(r"'num_nextn_predict_layers':\s*(\d+)", t),
        "moe_backend": (re.search(r"'moe_backend':\s*'(\w+)'", t) or [None, None])[1],
        "prefill_workers": _int(r"'num_prefill_workers':\s*(\d+)", t),
        "decode_workers": _int(r"'num_decode_workers':\s*(\d+)", t),
        "yml": re.findall(r"'trtllm_yml_override':\s*'/work/([^']+)'", t),
        "qps": _product(re.search(r"server_target_qps:\s*([\d.]+(?:\s*\*\s*[\d.]+)*)", t)),
    }


def _product(m: re.Match | None) -> float | None:
    """The value of a config's ``a * b * ...`` literal (``5 * 9``), or None."""
    if m is None:
        return None
    out = 1.0
    for x in m.group(1).split("*"):
        out *= float(x)
    return out


def yml_config(text: str) -> dict:
    """Layout and engine settings of a TensorRT-LLM worker ``.yml`` (disaggregated pools)."""
    return {
        "tp": _int(r"(?m)^tensor_parallel_size:\s*(\d+)", text),
        "ep": _int(r"(?m)^moe_expert_parallel_size:\s*(\d+)", text),
        "adp": bool(re.search(r"(?m)^enable_attention_dp:\s*true", text)),
        "batch": _int(r"(?m)^max_batch_size:\s*(\d+)", text),
        "max_tokens": _int(r"(?m)^max_num_tokens:\s*(\d+)", text),
        "mem_frac": _float(r"free_gpu_memory_fraction:\s*([\d.]+)", text),
        "mtp": _int(r"num_nextn_predict_layers:\s*(\d+)", text),
    }


def find_config(mirror: str, div_sub: str, system: str, scenario: str) -> tuple[str, str] | None:
    division, submitter = div_sub.split("/")
    other = "closed" if division == "open" else "open"
    for d in (div_sub, f"{other}/{submitter}"):  # an Open run may use its Closed config
        for name in (system, re.sub(r"_TRT$", "", system)):
            p = f"{d}/configs/{name}/{scenario}/deepseek-r1.py"
            t = show(mirror, p)
            if t is not None:
                return p, t
    return None


def _harness_file(mirror: str, div_sub: str, rel: str) -> tuple[str, str] | None:
    """(path, text) of a harness source file: the submitter's own copy, else NVIDIA's of
    the same round (the closed submissions run NVIDIA's harness; some ship no code)."""
    for d in (div_sub, "closed/NVIDIA"):
        t = show(mirror, f"{d}/{rel}")
        if t is not None:
            return f"{d}/{rel}", t
    return None


def front_end(mirror: str, div_sub: str, cfg_text: str, cfg: dict, scenario: str = "Server") -> str:
    """What serves the run, from the harness source: the loadgen harness' core for
    DeepSeek-R1 (``DEFAULT_CORE_TYPE`` of ``code/deepseek-r1/tensorrt/__init__.py``, unless
    the config sets ``core_type``), the TensorRT-LLM backend (the config's
    ``trtllm_backend``, else the harness default in ``code/llmlib/config.py``), the
    ``stream_interval`` (config, else harness default) and the CUDA-graph batch sizes.
    ``TRTLLM_ENDPOINT`` is ``trtllm-serve`` (``code/llmlib/launch_server.py`` starts
    ``trtllm-serve ... --backend pytorch`` and loadgen's client streams from it); the text
    then names the PyTorch backend, which
    :func:`planner.benchmarks.scheduler_waits.trtllm_pytorch_backend` reads.

    An Offline run does not stream (:func:`offline_front_end`): the harness turns streaming
    off for that scenario, so its text says so and its ``stream_interval`` is not applied."""
    init = _harness_file(mirror, div_sub, "code/deepseek-r1/tensorrt/__init__.py")
    conf = _harness_file(mirror, div_sub, "code/llmlib/config.py")
    if init is None or conf is None:
        return ""
    m = re.search(r"core_type:\s*[\w.]*?(TRTLLM_\w+|\w+)'?,", _code(cfg_text))
    core = m.group(1).upper() if m else None
    core_src = "the config's core_type"
    if core is None:
        m = re.search(r"DEFAULT_CORE_TYPE\s*=\s*CoreType\.(\w+)", init[1])
        core, core_src = (m.group(1) if m else None), f"DEFAULT_CORE_TYPE of {init[0]}"
    backend, back_src = cfg.get("backend"), "the config's trtllm_backend"
    if backend is None:
        m = re.search(r"'trtllm_backend':\s*'(\w+)'", conf[1])
        backend, back_src = (m.group(1) if m else None), f"the harness default in {conf[0]}"
    si, si_src = cfg.get("stream_interval"), "the config"
    if si is None:
        m = re.search(r"'stream_interval':\s*(\d+)", conf[1])
        si, si_src = (int(m.group(1)) if m else None), f"the harness default in {conf[0]}"
    out = []
    if core == "TRTLLM_ENDPOINT" and backend == "pytorch":
        out.append(
            f"front end trtllm-serve on the PyTorch backend (harness core {core}: {core_src}; "
            f"trtllm_backend 'pytorch': {back_src}; code/llmlib/launch_server.py starts "
            "trtllm-serve --backend pytorch, loadgen's client streams the tokens from it)"
        )
    elif core or backend:
        out.append(f"harness core {core or 'not stated'}, trtllm_backend {backend or 'not stated'}")
    if si is not None:
        every = "every iteration" if si == 1 else f"every {si} iterations"
        out.append(f"stream_interval {si} (a streamed response per request {every}; {si_src})")
    if cfg.get("graph_sizes"):
        pad = ", padding on" if cfg.get("graph_padding") else ""
        out.append(f"CUDA graphs for batch sizes [{cfg['graph_sizes']}] per rank{pad}")
    text = "; ".join(out)
    return offline_front_end(text, conf[0]) if scenario == "Offline" else text


#: what a Server / Interactive row's front-end clause says about streaming
_STREAMS = ", loadgen's client streams the tokens from it)"
_SI_CLAUSE = re.compile(
    r"stream_interval (\d+) \(a streamed response per request [^;()]*; ([^()]*)\)"
)


def offline_front_end(text: str, config_path: str = "code/llmlib/config.py") -> str:
    """The front-end clause of an Offline row: the same engine and front end, with no streaming.

    The NVIDIA LLM harness of both rounds (``code/llmlib/config.py``, ``__post_init__``:
    ``self.gen_config.streaming &= (self.workload.scenario != C.Scenario.Offline)``) turns
    streaming off in Offline, and its HTTP client sends ``"stream":
    self.config.gen_config.streaming`` (``code/llmlib/cores/http_async_client.py``). A
    non-streaming request gets one result when it finishes (TensorRT-LLM
    ``LlmRequest::createResult``: ``if (!(isFinished() || (mIsStreaming && ...))) return
    std::nullopt``), so ``stream_interval`` is not applied. Example: ``"...launch_server.py
    starts trtllm-serve --backend pytorch, loadgen's client streams the tokens from it);
    stream_interval 1 (a streamed response per request every iteration; X)"`` becomes
    ``"...launch_server.py starts trtllm-serve --backend pytorch; Offline: no streaming ...);
    stream_interval 1 not applied (no streamed responses; X)"``."""
    no_stream = (
        "; Offline: no streaming, the harness sets gen_config.streaming &= (scenario != "
        f"Offline) in {config_path} and its client sends stream false)"
    )
    text = text.replace(_STREAMS, no_stream)

    def _si(m: re.Match) -> str:
        return f"stream_interval {m.group(1)} not applied (no streamed responses; {m.group(2)})"

    return _SI_CLAUSE.sub(_si, text)


#: the TensorRT-LLM branch a v6.0 system description names in its ``framework`` field
#: (``"TensorRT 10.14, CUDA 13.1, cuDNN 9.17, TensorRT-LLM feat/1.2-mlpinf, ..."``)
_TRTLLM_BRANCH = re.compile(r"TensorRT-LLM (?P<branch>feat/(?P<rel>\d+\.\d+)-mlpinf)\b")
#: a Makefile.build pin of the TensorRT-LLM source: the comment line above ``TRTLLM_HASH``
#: (v5.1: ``# 7/24/25 1.0-mlpinf side branch (AG optimization)``) and its value
_TRTLLM_PIN = re.compile(
    r"^(?:#\s*(?P<comment>[^\n]*)\n)?TRTLLM_HASH\s*:?=\s*(?P<hash>[^\n]*?)\s*$", re.M
)
_TRTLLM_URL = re.compile(r"^TRTLLM_URL\s*=\s*(?P<url>\S+)", re.M)
_PUBLIC_TRTLLM = "github.com/NVIDIA/TensorRT-LLM"


def trtllm_release(mirror: str, div_sub: str, system: str, sysj: dict) -> tuple[str, str, str]:
    """(release, what the version cell says of the build, the evidence) of the TensorRT-LLM a
    run used; release "" when the submission does not establish one (the evidence says why).

    Two statements are read, nothing else:

    * the system description's ``framework`` field naming the branch ``feat/X.Y-mlpinf``
      (v6.0: NVIDIA's and Nebius' systems) -> release X.Y;
    * the submitter's own ``Makefile.build`` (this division) pinning ``TRTLLM_HASH`` to a
      commit of the public repository under a comment naming the ``X.Y-mlpinf side branch``
      (v5.1: ``# 7/24/25 1.0-mlpinf side branch (AG optimization)`` then ``TRTLLM_HASH =
      18c0333e...``) -> release X.Y.

    A hash taken from whatever checkout the build found (v6.0's ``TRTLLM_HASH := $(shell
    cd $(TRTLLM_DIR) ... git rev-parse HEAD ...)``), a branch of NVIDIA's internal repository
    or no build file leave the run release-free: the README's container tag is only an
    example (``closed/NVIDIA/README.md``: "for example, use ..."), not the run's build.
    """
    sys_path = f"{div_sub}/systems/{system}.json"
    m = _TRTLLM_BRANCH.search(str(sysj.get("framework") or ""))
    if m:
        return (
            m.group("rel"),
            f"TensorRT-LLM branch {m.group('branch')}",
            f"TensorRT-LLM release {m.group('rel')}: the system description's framework field "
            f"names the branch {m.group('branch')} ({sys_path}); a side branch of the "
            f"{m.group('rel')} release line, not a tagged release",
        )
    mk_path = f"{div_sub}/Makefile.build"
    mk = show(mirror, mk_path)
    if mk is None:
        return (
            "",
            "",
            (
                f"TensorRT-LLM release not established: {sys_path} names none and {div_sub} ships "
                "no Makefile.build"
            ),
        )
    pin, url = _TRTLLM_PIN.search(mk), _TRTLLM_URL.search(mk)
    url_s = url.group("url") if url else "not stated"
    if pin is None:
        return (
            "",
            "",
            (
                f"TensorRT-LLM release not established: {sys_path} names none and {mk_path} "
                "pins no TRTLLM_HASH"
            ),
        )
    h, comment = pin.group("hash"), (pin.group("comment") or "").strip()
    side = re.search(r"\b(\d+\.\d+)-mlpinf side branch\b", comment)
    if re.fullmatch(r"[0-9a-f]{40}", h) and _PUBLIC_TRTLLM in url_s and side:
        rel = side.group(1)
        return (
            rel,
            f"TensorRT-LLM {rel}-mlpinf side branch @ {h[:9]}",
            f"TensorRT-LLM release {rel}: {mk_path} pins TRTLLM_HASH = {h} of {url_s} under "
            f"'# {comment}'; a side branch of the {rel} release line, not a tagged release",
        )
    return (
        "",
        "",
        (
            f"TensorRT-LLM release not established: {sys_path} names none and {mk_path} has "
            f"TRTLLM_HASH {h}" + (f" under '# {comment}'" if comment else "") + f", TRTLLM_URL "
            f"{url_s}: no commit of a public release line"
        ),
    )


def gpu_id(model_name: str) -> str | None:
    for key, gid in GPUS:
        if key in model_name:
            return gid
    return None


def layout_words(tp: int, ep: int, adp: bool) -> str:
    return f"DEP{tp}" if adp and ep == tp else (f"TP{tp} EP{ep}" + (" attention-DP" if adp else ""))


def rows_of_round(rnd: str) -> list[dict[str, str]]:
    mirror, repo, source, prefix, as_of = ROUNDS[rnd]
    commit = git(mirror, "rev-parse", "HEAD").strip()
    paths = git(mirror, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    pat = re.compile(
        r"^((?:closed|open)/[^/]+)/results/([^/]+)/deepseek-r1/(Offline|Server|Interactive)"
        r"/performance/run_1/mlperf_log_summary\.txt$"
    )
    out: list[dict[str, str]] = []
    skipped: list[str] = []
    for p in sorted(paths):
        m = pat.match(p)
        if not m:
            continue
        div_sub, system, scenario = m.groups()
        s = summary(show(mirror, p) or "")
        if s.get("Result is") != "VALID":
            skipped.append(f"{p}: result not VALID")
            continue
        sysj = json.loads(show(mirror, f"{div_sub}/systems/{system}.json") or "{}")
        hw = gpu_id(sysj.get("accelerator_model_name", ""))
        n_gpus = int(sysj.get("number_of_nodes", 0)) * int(sysj.get("accelerators_per_node", 0))
        cfg_found = find_config(mirror, div_sub, system, scenario)
        if not hw or not n_gpus or cfg_found is None:
            skipped.append(f"{p}: gpu {hw!r}, {n_gpus} GPUs, config {cfg_found is not None}")
            continue
        cfg_path, cfg_text = cfg_found
        cfg = py_config(cfg_text)
        division, submitter = div_sub.split("/")
        detail = f"{repo} @ {commit[:12]} {p}; config {cfg_path}"
        if not cfg_path.startswith(div_sub + "/"):
            detail += " (the submitter's config of the other division: this one has none)"
        base_notes = [
            f"MLPerf Inference {rnd} {division}, submitter {submitter}, system {system} "
            f"({sysj.get('system_name') or 'system_name not given'}; {sysj.get('number_of_nodes')} node(s) x "
            f"{sysj.get('accelerators_per_node')} {sysj.get('accelerator_model_name')}; status "
            f"{sysj.get('status', '')})",
            DATASET,
        ]
        rel, build, rel_why = trtllm_release(mirror, div_sub, system, sysj)
        base_notes.append(rel_why)
        # a disaggregated run is served by its own front end (its worker .yml files say
        # the rest): the endpoint core's facts are written for aggregated runs only
        served = (
            "" if cfg["prefill_workers"] else front_end(mirror, div_sub, cfg_text, cfg, scenario)
        )
        if served:
            base_notes.append(served)
        tok_s = s.get("Tokens per second") or s.get("Completed tokens per second")
        smp_s = s.get("Samples per second") or s.get("Completed samples per second")
        if isinstance(tok_s, float) and isinstance(smp_s, float) and smp_s > 0:
            base_notes.append(
                f"mean generated tokens per sample {tok_s / smp_s:.0f} (tokens/s {tok_s} / "
                f"samples/s {smp_s} of the same run)"
            )
        row = {
            "source": source,
            "source_detail": detail,
            "as_of": as_of,
            "hardware": hw,
            "n_gpus": str(n_gpus),
            "model": "deepseek-v3",
            "precision": {"fp4": "nvfp4", "fp8": "fp8"}.get(cfg["precision"] or "", ""),
            "kv_precision": "fp8" if cfg["kv"] == "fp8" else "",
            "framework": "trtllm",
            # the release first (planner.catalog.releases.parse_release reads it), the
            # build it names in brackets, then the system description's software field
            "framework_version": (f"{rel} ({build}) | " if rel else "") + sysj.get("framework", ""),
            "mode": scenario.lower(),
            "request_rate": "inf"
            if scenario == "Offline"
            else f"{float(s.get('target_qps', 0)):g}",
        }
        if cfg["prefill_workers"]:  # disaggregated: two pools of worker configs
            pools = {}
            for y in cfg["yml"]:
                kind = "prefill" if "disagg_prefill" in y else "decode"
                pools[kind] = yml_config(show(mirror, f"{div_sub}/{y}") or "")
            x, yy = cfg["prefill_workers"], cfg["decode_workers"]
            pg, dg = x * pools["prefill"]["tp"], yy * pools["decode"]["tp"]
            if pg + dg != n_gpus:
                skipped.append(f"{p}: {pg} + {dg} pool GPUs != {n_gpus}")
                continue
            k = pools["decode"]["mtp"]
            why = (
                f"layout_unsupported: disaggregated prefill/decode ({pg} prefill + {dg} decode "
                f"GPUs, {x}P/{yy}D workers), multi-node"
                + (f", speculative decoding (MTP, {k} steps)" if k else "")
            )
            pool_txt = "; ".join(
                f"{kind} TP={pools[kind]['tp']} EP={pools[kind]['ep']} DP-attention="
                f"{'true' if pools[kind]['adp'] else 'false'} x {g} GPUs"
                for kind, g in (("prefill", pg), ("decode", dg))
            )
            eng = (
                f"prefill workers max_batch_size {pools['prefill']['batch']}, max_num_tokens "
                f"{pools['prefill']['max_tokens']}, free_gpu_memory_fraction "
                f"{pools['prefill']['mem_frac']}; decode workers max_batch_size "
                f"{pools['decode']['batch']}, max_num_tokens {pools['decode']['max_tokens']}, "
                f"free_gpu_memory_fraction {pools['decode']['mem_frac']}; NVIDIA Dynamo "
                f"frontend (configs {', '.join(cfg['yml'])})"
            )
            notes = [
                why,
                *base_notes,
                pool_txt + (f"; spec 'mtp' (num_nextn_predict_layers {k})" if k else ""),
                eng,
            ]
        else:
            tp, ep, adp = cfg["tp"], cfg["ep"] or 1, cfg["adp"]
            if not tp or n_gpus % (tp * cfg["pp"]):
                skipped.append(f"{p}: TP {tp} does not divide {n_gpus} GPUs")
                continue
            row.update(
                {
                    "tp": "1" if adp else str(tp),
                    "pp": str(cfg["pp"]),
                    "ep": str(ep),
                    "attention_dp": str(tp) if adp else "1",
                }
            )
            lay = (
                f"layout {layout_words(tp, ep, adp)} (TensorRT-LLM tensor_parallelism {tp}"
                f"{' with enable_attention_dp' if adp else ''}, moe_expert_parallelism {ep}); "
                f"{n_gpus // (tp * cfg['pp'])} replica(s) of {tp * cfg['pp']} GPUs"
            )
            notes = []
            if cfg["mtp"]:
                notes.append(
                    f"layout_unsupported: speculative decoding (MTP, {cfg['mtp']} steps: "
                    f"num_nextn_predict_layers {cfg['mtp']})"
                )
            notes += [*base_notes, lay]
            eng = [
                f"max_num_seqs={cfg['batch']}" if cfg["batch"] else "",
                f"max_num_batched_tokens={cfg['max_tokens']}" if cfg["max_tokens"] else "",
                f"kv_cache_dtype={cfg['kv']}" if cfg["kv"] else "",
                f"kv_cache_free_gpu_mem_fraction={cfg['mem_frac']}" if cfg["mem_frac"] else "",
            ]
            notes.append(
                "engine settings from the config (gpu_batch_size = TensorRT-LLM max_batch_size "
                "per attention-DP rank, max_num_tokens, kvcache_free_gpu_mem_frac, moe_backend "
                f"{cfg['moe_backend']}): " + " ".join(e for e in eng if e)
            )
        cons = ""
        if scenario != "Offline" and cfg["qps"] and abs(cfg["qps"] - float(s["target_qps"])) > 1e-9:
            # loadgen's target_qps (the run's user.conf) is the rate; a config that names
            # another one was tuned outside the file (or is not the file the run used)
            notes.append(
                f"the config's server_target_qps {cfg['qps']:g} differs from the run's loadgen "
                f"target_qps {float(s['target_qps']):g} (user.conf): the rate is loadgen's"
            )
        if scenario != "Offline":
            cons = (
                f"{scenario} scenario (Poisson arrivals at target_qps "
                f"{float(s['target_qps']):g}; constraints TTFT p99 <= "
                f"{float(s['ttft_latency (ns)']) / 1e9:g} s, TPOT p99 <= "
                f"{float(s['tpot_latency (ns)']) / 1e6:g} ms; result VALID)"
            )
        metrics = (
            [("output_tok_s_total", "Tokens per second", 1.0, "tok/s")]
            if scenario == "Offline"
            else [
                ("output_tok_s_total", "Completed tokens per second", 1.0, "tok/s"),
                ("ttft_ms_mean", "Mean First Token latency (ns)", 1e-6, "ms"),
                ("ttft_ms_p99", "99.00 percentile first token latency (ns)", 1e-6, "ms"),
                ("tpot_ms_mean", TPOT_MEAN, 1e-6, "ms"),
                ("tpot_ms_p99", "99.00 percentile time to output token (ns)", 1e-6, "ms"),
            ]
        )
        for metric, key, scale, unit in metrics:
            v = s.get(key)
            if key == TPOT_MEAN and v is None:  # v5.1 loadgen: "to"; v6.0 loadgen: "per"
                key = "Mean Time per Output Token (ns)"
                v = s.get(key)
            if not isinstance(v, float):
                skipped.append(f"{p}: no '{key}'")
                continue
            val = f"{v * scale:.3f}".rstrip("0").rstrip(".")  # ms to the ns-derived 0.001
            where = f'loadgen "{key}" {v:.0f}' if scale != 1 else f'loadgen "{key}" {val}'
            where += " x 1e-6" if scale != 1 else ""
            out.append(
                {
                    **row,
                    "metric": metric,
                    "value": val,
                    "unit": unit,
                    "notes": "; ".join(n for n in [notes[0], where, cons, *notes[1:]] if n),
                }
            )
    for i, r in enumerate(out, 1):
        r["id"] = f"{prefix}-{i:04d}"
    for s_ in skipped:
        print(f"skipped {rnd}: {s_}", file=sys.stderr)
    return out


def render(rows: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: r.get(c, "") for c in COLUMNS})
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed CSV")
    a = ap.parse_args(argv)
    rows = [r for rnd in ROUNDS for r in rows_of_round(rnd)]
    text = render(rows)
    if a.check:
        same = OUT.read_text(encoding="utf-8") == text
        print("up to date" if same else "differs")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"{len(rows)} rows -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
