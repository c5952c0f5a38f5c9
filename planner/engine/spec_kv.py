"""KV-cache passes of a speculative verify step: how often its attention reads the KV.

A verify step runs K + 1 query tokens for each decoding sequence (the last accepted token and
K drafts) against the same cached context. Whether the attention kernel streams that context
once or once per query token is the engine's kernel's choice, read in its source
(``data/spec_kernels.yaml``, :mod:`planner.catalog.spec_kernels`):

* ``per_token`` (TensorRT-LLM's trtllm-gen MLA generation kernels on SM100, which SGLang runs
  as ``trtllm_mla`` too): one CTA per query token, each streaming the KV, so up to K + 1
  passes; the published timing of the kernel (q = 8 costs 5.56x q = 1 at 1M context:
  FlashInfer issue #4390) puts each further token at ``token_pass_fraction`` = 0.652 of a
  pass (L2 shares part of the stream), so ``passes = 1 + 0.652 K``;
* ``packed`` (FlashMLA, FlashInfer MLA, aiter's asm MLA decode): the ``(K + 1) x h`` query
  rows of a sequence (h query heads per GPU) fill tiles of ``tile_rows`` rows and each tile
  reads the KV once, so ``passes = ceil((K + 1) h / tile_rows) / ceil(h / tile_rows)``,
  relative to a plain decode step of the same heads (whose reads the fitted ``kv_mem_eff``
  already has). TP8 DeepSeek-R1 (16 heads) at K <= 3: 64 rows, 1 pass; 128 heads (attention
  data-parallel): ``K + 1``.

Only MLA models (their absorbed decode kernel reads one latent for every query head): GQA /
MHA generation kernels group a KV head's queries and tokens, and their KV is read once. An
engine or GPU without a record, or above a record's ``max_heads_per_gpu``, reads it once,
as the step model did before. The extra reads are charged in
:meth:`planner.engine.step.StepModel.step` (and its scalar twin) on the decoding sequences'
contexts, ``(passes - 1) x KV bytes of the absorbed decode reads``.
"""

from __future__ import annotations

import math

from planner.catalog.records import Accelerator, ModelArch
from planner.catalog.spec_kernels import VerifyKernel, verify_kernel

__all__ = ["kernel_passes", "verify_kv_passes"]


def kernel_passes(rec: VerifyKernel | None, spec_tokens: int, heads_per_gpu: float) -> float:
    """KV passes of a verify step of K = ``spec_tokens`` drafts under kernel record ``rec``,
    relative to a plain decode step [-] (1 without a record or drafts).

    Examples: ``per_token``, K = 3: ``1 + f x 3`` (f = ``token_pass_fraction``: 4 at f = 1,
    2.956 at FlashInfer's measured 0.652). ``packed`` in 64-row tiles, K = 3: 16 heads ->
    ceil(64 / 64) / ceil(16 / 64) = 1; 128 heads -> ceil(512 / 64) / ceil(128 / 64) = 8 / 2 = 4;
    32 heads -> ceil(128 / 64) / ceil(32 / 64) = 2.
    """
    k1 = int(spec_tokens) + 1
    if rec is None or k1 <= 1:
        return 1.0
    if rec.max_heads_per_gpu and heads_per_gpu > rec.max_heads_per_gpu:
        return 1.0
    if rec.rule == "per_token":
        return 1.0 + rec.token_pass_fraction * (k1 - 1)
    rows = max(1, math.ceil(heads_per_gpu))
    return math.ceil(k1 * rows / rec.tile_rows) / math.ceil(rows / rec.tile_rows)


def verify_kv_passes(
    model: ModelArch, gpu: Accelerator, engine: str | None, spec_tokens: int, tp: int
) -> float:
    """KV passes of a verify step of ``model`` on ``gpu`` under ``engine`` with K =
    ``spec_tokens`` and the attention split ``tp`` [-] (see the module docstring); 1 for a
    model without MLA or an (engine, GPU) no source covers."""
    if not model.is_mla:
        return 1.0
    rec = verify_kernel(engine, gpu.id, gpu.arch)
    return kernel_passes(rec, spec_tokens, model.num_attention_heads / tp)
