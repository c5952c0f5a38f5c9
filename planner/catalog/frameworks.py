"""Serving engines: :class:`Framework` (scheduler settings, memory fraction, layouts and formats
it offers, host overlap), the scheduler defaults it picks per GPU (:class:`SchedulerTier`), the
defaults of its older releases (:class:`OlderReleaseDefault`) and :func:`version_tuple` (a
release number read from free text).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Literal

from pydantic import Field, model_validator

from planner.catalog.frozen import GIB, Frozen, Sourced
from planner.errors import MissingDataError
from planner.files import IdentityMemo

_VERSION_NUM = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def version_tuple(text: str | None) -> tuple[int, int, int] | None:
    """The first ``X.Y[.Z]`` version number in ``text`` (e.g. ``"v0.10.2 | vllm serve"``
    -> ``(0, 10, 2)``); None when there is none."""
    m = _VERSION_NUM.search(text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


class SchedulerTier(Frozen):
    """Scheduler defaults an engine picks by itself on larger GPUs (vLLM's V1 engine:
    ``max_num_seqs`` 1024 and ``max_num_batched_tokens`` 8192 on GPUs with >= 70 GiB that
    are not A100s, instead of 256 / 2048)."""

    min_memory_gib: float = Field(
        0.0, ge=0, description="the GPU's total memory at least this [GiB]"
    )
    max_memory_gib: float | None = Field(
        None, gt=0, description="and below this [GiB] (None: no upper bound)"
    )
    exclude_gpu_names: tuple[str, ...] = Field(
        (), description="lower-case texts; a GPU whose id or name contains one keeps the base"
    )
    since_version: str | None = Field(
        None,
        description="first engine release with this rule; a row of an older stated "
        "release keeps the base defaults",
    )
    since_date: _dt.date | None = Field(
        None,
        description="that release's date: a row that states no release but is dated "
        "before it keeps the base defaults",
    )
    not_in_versions: tuple[str, ...] = Field(
        (),
        description="lower-case texts of a release string that turn the rule off "
        "(vLLM's VLLM_USE_V1=0 runs the V0 engine)",
    )
    max_num_seqs: int = Field(gt=0)
    max_num_batched_tokens: int | None = Field(None, gt=0)
    source: str = Field(min_length=3)

    def describe(self) -> str:
        """One line, e.g. ``>= 70 GiB, not a100, from 0.8.0: 1024 seqs / 8192 tokens``."""
        bounds = [f">= {self.min_memory_gib:g} GiB"] if self.min_memory_gib else []
        if self.max_memory_gib is not None:
            bounds.append(f"< {self.max_memory_gib:g} GiB")
        mem = " and ".join(bounds) or "any memory"
        parts = [mem]
        parts += [f"not {x}" for x in self.exclude_gpu_names]
        if self.since_version:
            parts.append(f"from {self.since_version}")
        tok = self.max_num_batched_tokens
        return f"{', '.join(parts)}: {self.max_num_seqs} seqs / {tok if tok else '-'} tokens"

    def applies(self, gpu: Any, version: str | None = None, as_of: Any = None) -> bool:
        """Whether the engine picks this tier on ``gpu`` (an :class:`Accelerator`) in the
        release named by ``version`` (free text; None or no number = a current release, or
        for a run dated ``as_of`` before :attr:`since_date`, an older one)."""
        if gpu is None:
            return False
        if any(x in (version or "").lower() for x in self.not_in_versions):
            return False
        v, since = version_tuple(version), version_tuple(self.since_version)
        if v is not None and since is not None and v < since:
            return False
        if v is None and self.since_date is not None and as_of:
            try:
                day = as_of if isinstance(as_of, _dt.date) else _dt.date.fromisoformat(str(as_of))
            except ValueError:
                day = None
            if day is not None and day < self.since_date:
                return False
        names = f"{gpu.id} {gpu.name}".lower()
        if any(x in names for x in self.exclude_gpu_names):
            return False
        try:
            mem = float(gpu.memory_bytes)
        except MissingDataError:
            return False
        if self.max_memory_gib is not None and mem >= self.max_memory_gib * GIB:
            return False
        return mem >= self.min_memory_gib * GIB


class OlderReleaseDefault(Frozen):
    """A default memory fraction an engine's older releases used (vLLM's
    ``gpu_memory_utilization`` was 0.9 before it became 0.92)."""

    through_version: str = Field(description="the last release read with this default")
    memory_utilization: float = Field(gt=0, le=1)
    source: str = Field(min_length=3)


class Framework(Sourced):
    """A serving engine and the scheduler settings that matter for capacity."""

    id: str
    name: str
    aliases: tuple[str, ...] = ()
    continuous_batching: bool
    chunked_prefill: bool
    prefix_caching: bool
    cuda_graphs: bool
    vendors: tuple[str, ...]
    precisions: tuple[str, ...]
    kv_block_size: int = Field(gt=0)
    default_max_num_seqs: int = Field(gt=0)
    default_max_num_batched_tokens: int | None = Field(None, gt=0)
    default_memory_utilization: float = Field(gt=0, le=1)
    memory_utilization_of: Literal["total", "free", "static"] = Field(
        "total",
        description="'total': the fraction caps all memory (vLLM gpu_memory_utilization); "
        "'free': the fraction of memory left after weights goes to KV (TRT-LLM "
        "kv_cache_free_gpu_mem_fraction); 'static': the fraction of the memory free after "
        "the runtime's own set-up holds weights and KV, activations come from the rest "
        "(SGLang mem_fraction_static)",
    )
    runtime_overhead_gb: float | None = Field(
        None, ge=0, le=1000, description="set aside beyond weights, activations, KV at tp=1 [GB]"
    )
    runtime_overhead_gb_multi_gpu: float = Field(
        0.0, ge=0, le=1000, description="added per GPU when tp > 1 (NCCL / all-reduce buffers) [GB]"
    )
    runtime_overhead_source: str | None = Field(None, min_length=3)
    memory_semantics: str | None = Field(None, description="how it sizes its KV pool, sourced")
    # parallel layouts the engine offers (catalog/layout.py) and the formats its docs recommend
    expert_parallel: bool = False  # EP: --enable-expert-parallel / --ep-size / moe_ep_size
    attention_dp: bool = False  # attention data-parallel for MoE models (DP attention)
    parallel_source: str | None = None
    #: one replica over several nodes / domains: True documented, False not offered, None unread
    multi_node: bool | None = None
    multi_node_source: str | None = None
    recommended_formats: dict[str, tuple[str, ...]] = {}  # per GPU arch, best first
    recommended_formats_source: str | None = None
    recommended_formats_models: tuple[str, ...] | None = None  # HF model_types; None: all
    #: prefill/decode disaggregation (separate prefill and decode instances with a KV
    #: transfer between them): True documented, False not offered, None unread
    disaggregation: bool | None = None
    disaggregation_source: str | None = None
    #: weight formats of ``precisions`` the engine has no kernels for on a GPU vendor
    #: (vendor -> formats), from the engine's own hardware-support table
    vendor_precision_gaps: dict[str, tuple[str, ...]] = {}
    vendor_precision_gaps_source: str | None = None

    def format_rank(self, arch: str, precision_id: str, model_type: str | None = None) -> int:
        """Position of a format in the engine's recommendation for ``arch`` and the model's
        HF ``model_type`` (0 = first); past the list's end where the source does not say."""
        covered = self.recommended_formats_models
        on = model_type is None or covered is None or model_type in covered
        rec = self.recommended_formats.get(arch, ()) if on else ()
        return rec.index(precision_id) if precision_id in rec else len(rec) + 1

    kv_follows_checkpoint: bool = Field(
        False,
        description="with its default KV dtype setting ('auto') the engine stores KV in the "
        "precision the checkpoint declares (Precision.checkpoint_kv); False: the model dtype",
    )
    kv_default_source: str | None = Field(None, description="where that default was read")
    #: the quantized KV precisions the engine stores (None: not read; fp8 KV is then offered)
    kv_quantized: tuple[str, ...] | None = Field(None, description="with kv_default_source")
    #: GPU-dependent scheduler defaults (the last that applies wins over default_max_num_*)
    scheduler_tiers: tuple[SchedulerTier, ...] = ()
    #: where it is read that the default scheduler never mixes prompt chunks and decoders in
    #: one step, a prompt step first whenever one can be formed (SGLang); None: mixed steps
    prefill_first_source: str | None = Field(None, min_length=3)
    host_overlap_since: str | None = Field(
        None,
        description="first release whose scheduler overlaps its host work with the GPU by "
        "default (SGLang's overlap scheduler, vLLM's async scheduling, TensorRT-LLM's overlap "
        "scheduler): the CPU prepares iteration n+1 while the GPU runs n, so an iteration "
        "takes max(GPU, host) instead of GPU + host; None: not by default",
    )
    #: release date of host_overlap_since (a run with no stated release dated before it ran
    #: without the overlap)
    host_overlap_since_date: _dt.date | None = None
    host_overlap_source: str | None = Field(None, min_length=3)
    generations: dict[str, str] = {}  # name -> first release; catalog/releases.generation
    generations_source: str | None = Field(None, min_length=3)
    #: features with which the engine turns its overlap off (SGLang: EAGLE / MTP speculative
    #: decoding and pipeline parallelism; vLLM: pipeline parallelism)
    host_overlap_not_with: tuple[Literal["speculative", "pipeline"], ...] = ()
    #: whether chunked prefill runs when a deployment does not say (``chunked_prefill`` says
    #: whether the engine supports it; TensorRT-LLM supports it but leaves it off); None: on
    #: wherever supported (not read)
    chunked_prefill_default: bool | None = None
    chunked_prefill_default_source: str | None = Field(None, min_length=3)

    def chunked_prefill_on(self) -> bool:
        """Whether the engine chunks prompts when a deployment leaves it unset: supported
        (:attr:`chunked_prefill`) and on by default (:attr:`chunked_prefill_default`, None
        counts as on)."""
        return self.chunked_prefill and self.chunked_prefill_default is not False

    def overlaps_host(
        self,
        version: Any = None,
        as_of: Any = None,
        *,
        speculative: Any = False,
        pipeline: bool = False,
    ) -> bool:
        """Whether a run of release ``version`` (free text or a parsed release with a
        ``release`` attribute; None = current, or for a run dated ``as_of`` before
        :attr:`host_overlap_since_date`, an older one) hides its host time behind the GPU;
        ``speculative`` (speculative decoding on) and ``pipeline`` (pp > 1)
        turn it off where :attr:`host_overlap_not_with` says so."""
        if self.host_overlap_since is None:
            return False
        if speculative and "speculative" in self.host_overlap_not_with:
            return False
        if pipeline and "pipeline" in self.host_overlap_not_with:
            return False
        if version is not None and not isinstance(version, str):
            version = str(getattr(version, "release", "") or "") or None
        v, since = version_tuple(version), version_tuple(self.host_overlap_since)
        if v is not None and since is not None:
            return v >= since
        if self.host_overlap_since_date is not None and as_of:
            try:
                day = as_of if isinstance(as_of, _dt.date) else _dt.date.fromisoformat(str(as_of))
            except ValueError:
                day = None
            if day is not None and day < self.host_overlap_since_date:
                return False
        return True

    older_memory_utilization: tuple[OlderReleaseDefault, ...] = Field(
        (),
        description="default_memory_utilization of older releases (a benchmark row of a "
        "stated release at or before through_version ran with it)",
    )

    @model_validator(mode="after")
    def _overhead_sourced(self) -> Framework:
        if self.runtime_overhead_gb is not None and self.runtime_overhead_source is None:
            raise ValueError("runtime_overhead_gb needs runtime_overhead_source")
        if self.chunked_prefill_default is not None and self.chunked_prefill_default_source is None:
            raise ValueError("chunked_prefill_default needs chunked_prefill_default_source")
        if self.chunked_prefill_default and not self.chunked_prefill:
            raise ValueError("chunked_prefill_default true where chunked_prefill is false")
        return self

    def runtime_overhead_bytes(self, tp: int = 1) -> float:
        """Memory outside weights, activations and KV that the engine's KV sizing sets aside
        on one GPU of a ``tp``-wide group [bytes]; 0 where no source gives it."""
        extra = self.runtime_overhead_gb_multi_gpu if tp > 1 else 0.0
        return 0.0 if self.runtime_overhead_gb is None else (self.runtime_overhead_gb + extra) * 1e9

    def memory_utilization_default(self, version: str | None = None) -> float:
        """The memory fraction the release ``version`` (free text; None or no number = a
        current release) uses when the run does not set one."""
        v = version_tuple(version)
        if v is not None:
            for old in sorted(
                self.older_memory_utilization, key=lambda o: version_tuple(o.through_version) or ()
            ):
                through = version_tuple(old.through_version)
                if through is not None and v <= through:
                    return old.memory_utilization
        return self.default_memory_utilization

    def scheduler_defaults(
        self, gpu: Any = None, version: str | None = None, as_of: Any = None
    ) -> tuple[int, int | None]:
        """(max_num_seqs, max_num_batched_tokens) the engine picks when a run sets neither,
        on ``gpu`` (an :class:`Accelerator`; None = the base defaults) in the release
        ``version`` (free text such as a row's ``framework_version``; None = current) of a
        run dated ``as_of`` (a row's ``as_of``, used when no release number is stated)."""
        current = version is None and as_of is None  # the common question: remembered
        hit = _SCHEDULER_DEFAULTS.get((self, gpu)) if current else None
        if hit is not None:
            return hit
        seqs, btok = self.default_max_num_seqs, self.default_max_num_batched_tokens
        for t in self.scheduler_tiers:
            if t.applies(gpu, version, as_of):
                seqs, btok = t.max_num_seqs, t.max_num_batched_tokens
        if current:
            _SCHEDULER_DEFAULTS.put((self, gpu), (), (seqs, btok))
        return seqs, btok


#: :meth:`Framework.scheduler_defaults` of the current release per (framework, GPU) object
#: (compared by identity; the search asks three times per option)
_SCHEDULER_DEFAULTS = IdentityMemo()
