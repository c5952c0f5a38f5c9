"""The benchmark-row schema (``planner/benchmarks/README.md``): columns, units, modes."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner.catalog.layout import Layout, layout_of
from planner.errors import PlannerError, shown

REQUIRED_COLUMNS = (
    "hardware",
    "model",
    "framework",
    "mode",
    "metric",
    "value",
    "unit",
)
SCHEMA_COLUMNS = (
    "id",
    "source",
    "source_detail",
    "as_of",
    "hardware",
    "n_gpus",
    "tp",
    "pp",
    "ep",
    "attention_dp",
    "moe_tp",
    "model",
    "precision",
    "kv_precision",
    "framework",
    "framework_version",
    "mode",
    "isl",
    "osl",
    "batch",
    "concurrency",
    "request_rate",
    "context_len",
    "metric",
    "value",
    "unit",
    "notes",
)
SERVING_MODES = ("rate", "server", "concurrency", "interactive")
#: time units accepted for step metrics, in seconds
TIME_UNITS_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}


# --------------------------------------------------------------------------- cells
def cell(row: Mapping[str, Any], key: str) -> str:
    """The text of one cell, stripped; ``""`` when absent, None or NaN (pandas' empty)."""
    v = row.get(key)
    if v.__class__ is str:  # the common case first: this runs several times per row
        return v.strip()
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v).strip()


def number(row: Mapping[str, Any], key: str) -> float | None:
    """A numeric cell as a finite float; None when empty or not a finite number."""
    return _num(cell(row, key))


def whole(row: Mapping[str, Any], key: str, *, default: int | None = None) -> int:
    """A positive whole-number cell; ``default`` when empty (PlannerError without one)."""
    raw = cell(row, key)
    if not raw:
        if default is not None:
            return default
        raise PlannerError(f"{key} is empty")
    try:
        v = float(raw)
    except ValueError:
        raise PlannerError(f"{key} must be a number, got {shown(raw)}") from None
    if v != v or not v.is_integer() or v <= 0:
        raise PlannerError(f"{key} must be a positive whole number, got {shown(raw)}")
    if v > MAX_ROW_INT:
        raise PlannerError(f"{key} must be at most {MAX_ROW_INT:,}, got {shown(raw)}")
    return int(v)


# A token count, batch or GPU count above this is not a plausible measurement (and would
# overflow the step model's arithmetic into inf/NaN).
MAX_ROW_INT = 10**9


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


# --------------------------------------------------------------------------- layout
class UnknownLayoutError(PlannerError):
    """``tp`` is empty on a multi-GPU row: the parallel layout cannot be known."""

    def __init__(self, n_gpus: float) -> None:
        self.n_gpus = n_gpus
        super().__init__(f"tp is empty and n_gpus={n_gpus:g}, so the parallel layout is unknown")


@dataclass(frozen=True)
class RowLayout:
    """Parallel layout of a row: ``n_gpus = replicas x layout.num_gpus``.

    Attributes
    ----------
    layout : the replica's :class:`planner.catalog.layout.Layout` (tp, pp, ep,
        attention_dp, moe_tp; the width rule holds)
    n_gpus : GPUs of the measurement
    replicas : independent replicas sharing the load
    """

    layout: Layout
    n_gpus: int
    replicas: int

    @property
    def tp(self) -> int:
        return self.layout.tp

    @property
    def pp(self) -> int:
        return self.layout.pp

    @property
    def gpus_per_replica(self) -> int:
        """GPUs of one replica: ``tp x attention_dp x pp`` (= ``moe_tp x ep x pp``)."""
        return self.layout.num_gpus

    @property
    def plain(self) -> bool:
        """True for a TP x PP layout (no expert or attention-data parallel)."""
        return self.layout.is_plain


#: optional layout columns of a row beside tp / pp (empty = 1; moe_tp empty = the width rule's)
LAYOUT_COLUMNS = ("ep", "attention_dp", "moe_tp")


def parallelism(row: Mapping[str, Any]) -> tuple[int, int]:
    """(tp, pp) of a row: empty ``pp`` is 1; empty ``tp`` is 1 when the row runs on one GPU
    (``n_gpus`` empty or 1) and :class:`UnknownLayoutError` otherwise."""
    if not cell(row, "tp"):
        n = number(row, "n_gpus")
        if n is not None and n != 1:
            raise UnknownLayoutError(int(n) if n.is_integer() else n)
    return whole(row, "tp", default=1), whole(row, "pp", default=1)


def row_parallel_layout(row: Mapping[str, Any]) -> Layout:
    """The replica :class:`~planner.catalog.layout.Layout` of a row: :func:`parallelism`
    with the optional ``ep``, ``attention_dp`` (empty = 1) and ``moe_tp`` (empty = the width
    rule's ``tp x attention_dp / ep``) columns; a one-line error naming the field when a
    cell is not a whole number or the width rule fails."""
    tp, pp = parallelism(row)
    ep = whole(row, "ep", default=1)
    dp = whole(row, "attention_dp", default=1)
    mtp = whole(row, "moe_tp", default=0) if cell(row, "moe_tp") else None
    bal = adp_balance_setting(cell(row, "notes")) if dp > 1 else None
    return layout_of(tp, pp, ep, dp, mtp, attention_dp_balance=bal)


#: ``enable_balance: true|false`` as a run's notes state it (TensorRT-LLM's
#: ``attention_dp_config``, in a server command, an extra LLM-API YAML or a harness-flags note)
_ADP_BALANCE = re.compile(r"enable_balance[\"' =:]+(true|false)\b", re.IGNORECASE)


def adp_balance_setting(notes: str) -> bool | None:
    """The attention-DP balance a run states in its notes (``attention_dp_config:
    enable_balance: true`` -> True, ``false`` -> False), None when it does not say (the
    engine's default, :data:`planner.catalog.layout.ADP_BALANCE_DEFAULT`)."""
    m = _ADP_BALANCE.search(notes or "")
    return None if m is None else m.group(1).lower() == "true"


#: the MoE backend a TensorRT-LLM run names (``moe_config: {backend: X}`` in an extra LLM-API
#: YAML or JSON, ``MOE_BACKEND=X`` in a harness script, or a ``moe backend X`` note)
_MOE_BACKEND = re.compile(
    r"(?:\"moe_config\":\s*\{\s*\"backend\":\s*\"|moe_config:\s*backend:\s*|MOE_BACKEND=|moe backend )"
    r"([A-Za-z_]+)"
)


def moe_backend_setting(notes: str) -> str | None:
    """The MoE backend a run states in its notes, upper case (``CUTLASS``, ``TRTLLM``,
    ``DEEPGEMM``...), None when it does not say."""
    m = _MOE_BACKEND.search(notes or "")
    return None if m is None else m.group(1).upper()


def layout(row: Mapping[str, Any]) -> RowLayout:
    """THE layout / n_gpus / replicas rule of a row: :func:`row_parallel_layout`, then
    ``n_gpus`` (empty: one replica) must be a multiple of the replica's GPUs ``tp x
    attention_dp x pp``; ``n_gpus / that`` independent replicas share the load."""
    lay = row_parallel_layout(row)
    per = lay.num_gpus
    if not cell(row, "n_gpus"):
        return RowLayout(lay, per, 1)
    n_gpus = whole(row, "n_gpus")
    if n_gpus % per:
        what = "tp x pp" if lay.is_plain else "tp x attention_dp x pp"
        raise PlannerError(f"n_gpus={n_gpus} is not a multiple of {what} = {per}")
    return RowLayout(lay, n_gpus, n_gpus // per)


# --------------------------------------------------------------------------- notes
#: the note of the TensorRT-LLM v0.17 table: ``kv_cache_free_gpu_mem_fraction 0.95``
_KV_FRACTION_NOTE = "fraction 0.95"


#: a tuned run's memory fraction as a notes tag, in the engine's own terms (the framework
#: record says whether it is a fraction of total memory or of the memory left after weights)
_FRACTION_TAG = re.compile(
    r"\b(gpu_memory_utilization|mem_fraction_static|kv_cache_free_gpu_mem_fraction"
    r"|free_gpu_memory_fraction)=(\d*\.?\d+)"
)


def memory_fraction_from_notes(notes: str) -> float | None:
    """GPU memory fraction a row's notes state for the engine (None: the framework's).

    A tag ``gpu_memory_utilization=F`` (vLLM), ``mem_fraction_static=F`` (SGLang) or
    ``kv_cache_free_gpu_mem_fraction=F`` / ``free_gpu_memory_fraction=F`` (TensorRT-LLM), or
    the TensorRT-LLM v0.17 table's note ``kv_cache_free_gpu_mem_fraction 0.95``.

    Raises
    ------
    PlannerError
        on a fraction outside (0, 1] or two tags with different values.
    """
    vals = {float(v) for _, v in _FRACTION_TAG.findall(notes or "")}
    if len(vals) > 1:
        raise PlannerError(f"notes: the memory fraction is given twice ({sorted(vals)})")
    if vals:
        v = vals.pop()
        if not 0 < v <= 1:
            raise PlannerError(f"notes: memory fraction {v:g} is outside (0, 1]")
        return v
    return 0.95 if _KV_FRACTION_NOTE in (notes or "") else None


#: MLPerf's "N-sample perf set" (Krai's rows: "N-sample set"): the dataset loadgen draws from
#: (OpenOrca 24,576, Mixtral 15,000), not the run's length: loadgen repeats it until
#: min_duration / min_query_count (the v5.1 B200 Offline run generated 1,007,616 samples, its
#: mlperf_log_detail.txt ``generated_samples_per_query``; docs/changes/2026-12-07b/mlperfharness.md)
_DATASET_SIZE = re.compile(r"\d[\d,]*-sample (?:perf )?set")


def request_count(notes: str) -> int | None:
    """Requests per run stated in a row's notes (``"1,000 requests"``, ``"500-sample"``); an
    MLPerf dataset size (``"24,576-sample perf set"``, ``"24,576-sample set"``) is not a run
    length."""
    notes = _DATASET_SIZE.sub("", notes or "")
    m = re.search(r"(\d[\d,]*)\s+requests", notes) or re.search(r"(\d[\d,]*)-sample", notes)
    return int(m.group(1).replace(",", "")) if m else None


#: the tag a data row's ``notes`` carries when the source's layout cannot be expressed
#: (disaggregated prefill/decode, speculative decoding, an expert-parallel size not stated):
#: ``layout_unsupported: <reason>``; such rows are kept, never fitted, never predicted
LAYOUT_UNSUPPORTED_TAG = "layout_unsupported:"


def layout_unsupported(notes: str) -> str | None:
    """The reason a row's ``notes`` give for a layout the planner cannot express (the text
    after ``layout_unsupported:`` up to the next ``;``), None when untagged."""
    text = notes or ""
    i = text.find(LAYOUT_UNSUPPORTED_TAG)
    if i < 0:
        return None
    why = text[i + len(LAYOUT_UNSUPPORTED_TAG) :].split(";")[0].strip()
    return why or "no reason given"


#: the tag of a row whose run did not serve the workload its columns state, with the source
#: that says so: ``workload_mismatch: <reason>``; kept, never fitted, never predicted
WORKLOAD_MISMATCH_TAG = "workload_mismatch:"


def workload_mismatch(notes: str) -> str | None:
    """The reason a row's ``notes`` give for a run that did not serve its stated workload (the
    text after ``workload_mismatch:`` up to the next ``;``), None when untagged."""
    text = notes or ""
    i = text.find(WORKLOAD_MISMATCH_TAG)
    if i < 0:
        return None
    return text[i + len(WORKLOAD_MISMATCH_TAG) :].split(";")[0].strip() or "no reason given"


def unexpressible_reason(row: Mapping[str, Any], gpu_vendor: str | None, fw_vendors) -> str:
    """Why a row cannot be modelled before any arithmetic ('' when it can): a
    ``layout_unsupported`` or ``workload_mismatch`` tag, or a framework that does not run
    on the GPU's vendor."""
    why = layout_unsupported(cell(row, "notes"))
    if why is not None and ("disaggregated" in why or "speculative" in why):
        return (
            f"{why}: scored by the disaggregated / speculative model "
            "(scripts/issue30_holdout.py, docs/issue30_holdout.md), not predicted row by row here; "
            "never fitted"
        )
    if why is not None:
        return f"layout not expressible by the planner: {why} (layout_unsupported; never fitted)"
    if (bad := workload_mismatch(cell(row, "notes"))) is not None:
        return f"the run did not serve the stated workload: {bad} (workload_mismatch; never fitted)"
    if gpu_vendor is not None and fw_vendors is not None and gpu_vendor not in fw_vendors:
        return (
            f"framework {cell(row, 'framework')} does not run on {gpu_vendor} GPUs "
            f"(frameworks.yaml lists {', '.join(fw_vendors)}): unknown vendor stack"
        )
    return ""


# --------------------------------------------------------------------------- engine settings
#: engine settings a tuned run (MLPerf submission, vendor max-throughput table) states as
#: ``key=value`` tags in its notes; README.md "Engine settings of tuned runs"
_SETTING_TAG = re.compile(r"\b(max_num_seqs|max_num_batched_tokens|kv_cache_dtype)\s*=\s*([^\s;]*)")
#: kv_cache_dtype values (vLLM / SGLang / TensorRT-LLM spellings) -> catalog KV ids;
#: ``auto`` means the engine's default (None here)
_KV_DTYPES = {
    "auto": None,
    "fp8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "int8": "int8",
}


@dataclass(frozen=True)
class EngineSettings:
    """Engine settings a row's notes state (None: the framework's default is used).

    Attributes
    ----------
    max_num_seqs : largest batch of running sequences [sequences]
    max_num_batched_tokens : tokens one iteration may schedule [tokens]
    kv_cache_dtype : catalog KV precision id the run used (``fp8``)
    """

    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_dtype: str | None = None

    def describe(self, default_seqs: int, default_tokens: int | None, framework: str) -> str:
        """One line for ``provenance``: each setting and whether the row or the framework
        default gave it."""

        def one(name: str, v: int | None, d: int | None) -> str:
            if v is not None:
                return f"{name}={v} (row)"
            return f"{name}={d} ({framework} default)" if d is not None else f"{name} unset"

        return "engine: " + ", ".join(
            (
                one("max_num_seqs", self.max_num_seqs, default_seqs),
                one("max_num_batched_tokens", self.max_num_batched_tokens, default_tokens),
            )
        )


def engine_settings(notes: str) -> EngineSettings:
    """Parse the ``max_num_seqs=N``, ``max_num_batched_tokens=N`` and ``kv_cache_dtype=D``
    tags of a row's notes (the convention of tuned submissions).

    Raises
    ------
    PlannerError
        on a tag whose value is not a positive whole number (or a known KV dtype), or a tag
        given twice with different values.
    """
    found: dict[str, Any] = {}
    for key, raw in _SETTING_TAG.findall(notes or ""):
        raw = raw.rstrip(".,)")
        if key == "kv_cache_dtype":
            if raw.lower() not in _KV_DTYPES:
                raise PlannerError(
                    f"notes: kv_cache_dtype={shown(raw)} is not a known KV dtype "
                    f"(known: {', '.join(_KV_DTYPES)})"
                )
            v: Any = _KV_DTYPES[raw.lower()]
        else:
            txt = raw.replace(",", "")
            if not txt.isdigit() or int(txt) <= 0 or int(txt) > MAX_ROW_INT:
                raise PlannerError(
                    f"notes: {key}={shown(raw)} must be a whole number between 1 and "
                    f"{MAX_ROW_INT:,}"
                )
            v = int(txt)
        if key in found and found[key] != v:
            raise PlannerError(f"notes: {key} is given twice ({found[key]} and {v})")
        found[key] = v
    return EngineSettings(**found)


def row_kv_precision(row: Mapping[str, Any]) -> str | None:
    """The KV precision a row states: its ``kv_precision`` cell, else a ``kv_cache_dtype``
    tag of its notes; None when neither says (the default then applies)."""
    return cell(row, "kv_precision") or engine_settings(cell(row, "notes")).kv_cache_dtype


def row_release(row: Mapping[str, Any]):
    """The engine release a row's ``framework_version`` names (``EngineRelease``), or None
    when the text names none (``planner frameworks --releases --unparsed`` lists those)."""
    from planner.catalog.releases import parse_release

    return parse_release(cell(row, "framework"), cell(row, "framework_version"))


def row_params(row: Mapping[str, Any], catalog, gpu: str, precision: str, family: str | None,
               profile=None):  # fmt: skip
    """The efficiency parameters of a row's (GPU, engine, precision) from ``profile`` (None:
    the bundled one) and their provenance: with the release level
    (:func:`planner.catalog.release_profile.resolve_release_params`: its own release's node,
    the nearest release, or the nearest release of the series on another architecture) when
    ``framework_version`` names a release, else the fit over every release, as
    ``planner validate`` predicts the plain rows of a fold."""
    from planner.catalog.profile import resolve_params
    from planner.catalog.release_profile import resolve_release_params

    fw = cell(row, "framework") or None
    rel = row_release(row)
    if fw and rel is not None:
        p, prov, _ = resolve_release_params(gpu, fw, precision, rel, catalog=catalog,
                                            profile=profile, family=family)  # fmt: skip
        return p, prov
    return resolve_params(gpu, fw, precision, None, catalog, profile=profile, family=family)


_GRAPH_PADDING = re.compile(r"CUDA graphs for batch sizes \[([\d,\s]+)\] per rank, padding on")


#: a row whose engine ran without CUDA graphs: the notes clause ``CUDA graphs off`` (NVIDIA's
#: MLPerf harness: ``harness_fields.use_graphs: False``, and its TensorRT engine path raises
#: "CUDA Graphs are not supported in TRT/C++ backend yet", code/llmlib/config.py @ 965182b0;
#: dstack's trtllm-serve rows, ``scripts/annotate_early_graphs.py``), or the key
#: ``cuda_graph=disabled`` that rows write for a server launched with SGLang's
#: ``--disable-cuda-graph`` (the SGLang v0.4.1 DeepSeek-V3 H200 benchmark's BF16 and two-node
#: commands), or vLLM's eager mode: the engine argument ``enforce_eager`` (``--enforce-eager``
#: on the command line, ``enforce_eager=True``; AMD's MLPerf vLLM harnesses and dstack's
#: Llama-3.1-405B MI300X runs), or a V1 ``compilation_config`` whose ``cudagraph_mode`` is
#: NONE. A compilation ``level`` 0 alone is not read: V1 "made full CUDA Graphs support
#: orthogonal to compilation" (docs.vllm.ai/en/latest/design/cuda_graphs, PR #20059)
_GRAPHS_OFF = re.compile(
    r"\bCUDA graphs off\b|\bcuda_graph=disabled\b"
    r"|(?<![\w-])(?:--)?enforce[_-]eager(?![\w-])(?!\W{0,3}(?:bool\W{0,3})?(?:false|0)\b)"
    r"|\bcudagraph_mode\W{0,4}none\b",
    re.I,
)
#: a clause that states the row's own run captured graphs, which wins over a flag the notes
#: quote from another scenario's script (MLPerf v4.1 Dell MI300X Server rows cite the
#: Offline script's ``--enforce-eager`` for their precision; the Server harness runs with
#: ``enforce_eager`` False)
_GRAPHS_ON = re.compile(r"\bCUDA graphs on\b")


def graphs_off(notes: str) -> bool:
    """Whether a row's notes say its engine ran every step without CUDA graphs (``CUDA
    graphs off``, ``cuda_graph=disabled`` for ``--disable-cuda-graph``, vLLM's
    ``enforce_eager`` / ``--enforce-eager``, or ``cudagraph_mode`` NONE), unless a clause
    ``CUDA graphs on`` says the row's own run captured them: each decode step then pays the
    eager dispatch cost (:attr:`~planner.catalog.efficiency.EfficiencyParams.eager_layer_s`)."""
    text = notes or ""
    return bool(_GRAPHS_OFF.search(text)) and not _GRAPHS_ON.search(text)


#: vLLM's async scheduling as a row's launch states it: ``--async-scheduling`` (opt-in before
#: vLLM 0.14, "Overlaps engine core scheduling with GPU execution", PR #27614; the default from
#: 0.14: ``data/frameworks.yaml`` ``host_overlap_since``), ``--no-async-scheduling``, or the
#: engine argument ``async_scheduling`` = True / False (GPUStack's gpt-oss serving commands)
_ASYNC = re.compile(
    r"(?<![\w-])(--no-async-scheduling|--async-scheduling|async_scheduling\W{0,3}(true|false|1|0)\b)"
    r"(?![\w-])",
    re.I,
)


#: whether the serving rows read that flag (``planner.benchmarks.serving_rows``: the replica
#: overlaps host and GPU as the launch says, not as its release's default does)
READ_ASYNC_SCHEDULING = True


def async_scheduling(notes: str, framework: str = "vllm") -> bool | None:
    """Whether a vLLM row's launch turns async scheduling on (True: ``--async-scheduling``,
    ``async_scheduling=True``) or off (False: ``--no-async-scheduling``, ``async_scheduling=
    False``); None when the notes do not say, for another ``framework``, or while
    :data:`READ_ASYNC_SCHEDULING` is off (the release's default holds:
    :meth:`planner.catalog.records.Framework.overlaps_host`). The last statement wins."""
    found = _ASYNC.findall(notes or "") if framework == "vllm" and READ_ASYNC_SCHEDULING else []
    if not found:
        return None
    flag, value = found[-1]
    if value:
        return value.lower() in ("true", "1")
    return not flag.lower().startswith("--no-")


def graph_padding_sizes(notes: str) -> tuple[int, ...] | None:
    """The decode batches per rank an engine captured as CUDA graphs with padding on, from a
    row's notes clause ``CUDA graphs for batch sizes [1, 2, ..., 512] per rank, padding on``
    (the MLPerf DeepSeek-R1 rows: TensorRT-LLM ``cuda_graph_config`` ``batch_sizes`` with
    ``enable_padding: true``, ``scripts/import_mlperf_moe.py``); None when the notes do not
    say (no padding is modelled: :func:`planner.engine.adp.graph_padded`)."""
    m = _GRAPH_PADDING.search(notes or "")
    if m is None:
        return None
    return tuple(sorted(int(x) for x in m.group(1).split(",") if x.strip()))


def allreduce_latency_s(row: Mapping[str, Any]) -> float | None:
    """The fixed cost of one tensor-parallel all-reduce [s] that a row's launch states: its
    framework, precision, hardware and notes matched against the launches of
    ``data/allreduce.yaml`` (:func:`planner.catalog.allreduce.launch_latency_s`: e.g.
    InferenceX's SGLang Blackwell scripts pass ``--enable-flashinfer-allreduce-fusion``, whose
    fused all-reduce + RMSNorm is published at 8.7 us on 8 B200); None when no applied launch
    matches (the step model keeps ``comm_latency_s``, NCCL's 20 us prior)."""
    from planner.catalog.allreduce import launch_latency_s

    return launch_latency_s(
        cell(row, "framework"), cell(row, "precision"), cell(row, "hardware"), cell(row, "notes")
    )
