"""Published rates of the absorbed MLA decode attention kernel (``data/kernel_rates.yaml``).

One record per (GPU architecture, kernel): either the achieved rate as its authors publish
it (``achieved_tflops``: FlashMLA's 660 TFLOPS on an H800) or one timed call (``batch``,
``q_heads``, ``q_len``, ``kv_len``, ``time_us``), whose FLOPs are FlashMLA's count
``2 x batch x q_heads x q_len x kv_len x (d_k + d_v)`` with DeepSeek-V3's d_k = 576 and
d_v = 512. :meth:`MlaDecodeRate.fraction` divides the rate by the reference GPU's bf16 dense
peak; :func:`planner.engine.mla.mla_decode_flops_s` multiplies that fraction by another GPU's
bf16 dense peak. :func:`mla_decode_rate` picks an architecture's ``default`` record (the
kernel its engines run by default for DeepSeek-V3/R1), or ``None`` where nothing is
published (the caller keeps its rule).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Frozen, Sourced
from planner.errors import PlannerError
from planner.files import load_data_file

__all__ = [
    "MLA_D_K",
    "MLA_D_V",
    "BlockFp8GemmRate",
    "MlaDecodeRate",
    "block_fp8_gemm_rate",
    "mla_decode_rate",
    "mla_decode_rates",
]

#: DeepSeek-V3's absorbed MLA head dims: the 512-wide latent + 64 rope (keys), the latent (values)
MLA_D_K, MLA_D_V = 576, 512


class MlaDecodeRate(Sourced):
    """One published rate of an MLA decode kernel on one architecture."""

    arch: str = Field(min_length=2)
    kernel: str = Field(min_length=3)
    default: bool = False
    engines: tuple[str, ...] = ()
    reference_gpu: str = Field(min_length=2)
    reference_bf16_tflops: float = Field(gt=0)
    achieved_tflops: float | None = Field(default=None, gt=0)
    batch: int | None = Field(default=None, ge=1)
    q_heads: int = Field(ge=1)
    q_len: int = Field(default=1, ge=1)
    kv_len: int | None = Field(default=None, ge=1)
    time_us: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_way(self) -> MlaDecodeRate:
        timed = (self.batch, self.kv_len, self.time_us)
        if self.achieved_tflops is None and None in timed:
            raise ValueError("give achieved_tflops or a timed call (batch, kv_len, time_us)")
        if self.achieved_tflops is not None and any(v is not None for v in timed):
            raise ValueError("give achieved_tflops or a timed call, not both")
        return self

    @property
    def flops(self) -> float | None:
        """FLOPs of the timed call [FLOP] (``None`` for a published rate)."""
        if self.achieved_tflops is not None:
            return None
        return 2.0 * self.batch * self.q_heads * self.q_len * self.kv_len * (MLA_D_K + MLA_D_V)

    @property
    def tflops(self) -> float:
        """Achieved rate [TFLOPS]: the published one, or the timed call's FLOPs / time."""
        if self.achieved_tflops is not None:
            return self.achieved_tflops
        return self.flops / (self.time_us * 1e-6) / 1e12

    @property
    def fraction(self) -> float:
        """Achieved rate / the reference GPU's bf16 dense peak [-]."""
        return self.tflops / self.reference_bf16_tflops


class BlockFp8GemmRate(Sourced):
    """One published timing of a block-FP8 dense GEMM that an engine runs without DeepGEMM
    (``data/kernel_rates.yaml``, ``block_fp8_gemm``)."""

    arch: str = Field(min_length=2)
    kernel: str = Field(min_length=3)
    applied: bool = False
    engines: tuple[str, ...] = ()
    reference_gpu: str = Field(min_length=2)
    reference_fp8_tflops: float = Field(gt=0)
    m: int = Field(ge=1)
    n: int = Field(ge=1)
    k: int = Field(ge=1)
    time_us: float = Field(gt=0)

    @property
    def tflops(self) -> float:
        """Achieved rate ``2 m n k / time`` [TFLOPS]."""
        return 2.0 * self.m * self.n * self.k / (self.time_us * 1e-6) / 1e12

    @property
    def fraction(self) -> float:
        """Achieved rate / the reference GPU's fp8 dense peak [-]."""
        return self.tflops / self.reference_fp8_tflops


class _File(Frozen):
    mla_decode: tuple[MlaDecodeRate, ...]
    block_fp8_gemm: tuple[BlockFp8GemmRate, ...] = ()


@lru_cache(maxsize=4)
def _file(data_dir: str | None) -> _File | None:
    return load_data_file(Path(data_dir or DATA_DIR) / "kernel_rates.yaml", _File, 120)


def block_fp8_gemm_rate(
    arch: str, engine: str | None, data_dir: str | None = None
) -> BlockFp8GemmRate | None:
    """The applied block-FP8 GEMM record of architecture ``arch`` for ``engine`` (the kernel
    it runs with DeepGEMM off), or ``None``."""
    f = _file(data_dir)
    for r in f.block_fp8_gemm if f is not None else ():
        if r.applied and r.arch == arch and engine in r.engines:
            return r
    return None


@lru_cache(maxsize=4)
def mla_decode_rates(data_dir: str | None = None) -> tuple[MlaDecodeRate, ...]:
    """Every record of ``data/kernel_rates.yaml`` (empty where the file is absent)."""
    path = Path(data_dir or DATA_DIR) / "kernel_rates.yaml"
    f = _file(data_dir)
    if f is None:
        return ()
    recs = f.mla_decode
    seen = set()
    for r in recs:
        if r.default and r.arch in seen:
            raise PlannerError(f"{path.name}: two default MLA decode kernels for arch '{r.arch}'")
        if r.default:
            seen.add(r.arch)
    return recs


def mla_decode_rate(arch: str, data_dir: str | None = None) -> MlaDecodeRate | None:
    """The default MLA decode kernel's record of architecture ``arch``, or ``None``."""
    for r in mla_decode_rates(data_dir):
        if r.default and r.arch == arch:
            return r
    return None
