"""Streaming HBM bandwidth of a GPU from its micro-benchmarks, and the transfer of a fitted
weight-read efficiency to a sibling GPU (:func:`transfer_mem_eff`).

A weight read of ``S`` bytes by one matrix-vector kernel takes ``t0 + S / stream`` on the
micro-benchmarks (``data/benchmarks/*_micro.csv``, ``bench/pytorch_ref.py``: bf16
``F.linear`` of one row over nine weight shapes of 34 MB to 1 GB, least squares): on the
H200, ``t0`` = 5.2 us and ``stream`` = 4.47 TB/s (0.931 of the datasheet's 4.8), so a 34 MB
kernel reaches only 2.6 TB/s; on the H100, 3.1 us and 3.03 TB/s (0.905 of 3.35). The ramp
and tail of each kernel (``t0``) does not shrink with more bandwidth.

A fitted ``mem_eff`` (achieved / datasheet bandwidth of the GEMMs, fitted on one GPU) holds
both. A transfer splits the donor's time per byte into its streaming part and the rest
(latency), scales the first with the target's streaming bandwidth and the second with the
ratio of the two ``t0`` (1 when the target has no micro-benchmarks: one architecture, the
same SMs), :func:`transfer_mem_eff`. Scaling the whole efficiency with the datasheet (the
rule before) made the H100 read weights 1.43x slower than the H200; on the micro-benchmarks
an 8B model's four GEMVs per layer take 1.32x longer, and the reference engine's graph decode
iterations 1.10-1.25x (issue 32; the H100 serving logs are held out, ``docs/accuracy.md``
"h100-transfer").

Where both GPUs ran the reference engine's decode steps (``bench/ref_engine.py``), those
steps measure the weight reads of a whole decode step directly, and they move less than the
GEMV rule says: :func:`step_weight_ratio` takes each batch-1 step of the same model and
context (256-4,096 tokens) on both GPUs, less the donor fit's fixed per-step and per-layer
terms and its KV read, as weight time; the H100 reads a step's weights at 0.735x the H200's
rate (12 pairs, 0.712-0.780; datasheets 0.698), where the GEMV rule gave 0.698 (``mem_eff``
0.845 -> 0.847 against 0.891 by the steps). ``transfer_params`` then moves ``mem_eff`` by that
ratio (``STEP_WEIGHT_RULE``; the H100 serving runs are held out, ``docs/accuracy.md``
"h100-transfer").

KV reads (``kv_mem_eff``) are other kernels (the paged-attention kernel), moved by the same
rule with their own streaming rate: the slope of the reference engine's decode step time over
the context at a fixed batch (``bench/ref_engine.py`` step rows, ``decode_step_s``, bf16 KV,
one GPU), whose intercept holds every per-kernel latency, :func:`kv_stream_fits`. On the H200
(``reference_h200.csv``, 23 (model, batch) series of batch 16-512) the KV streams at 4.30-4.65
TB/s but two series (Llama-3.2-1B at 16: 3.39; the 20-layer 70B at 512: 5.74), median 4.45 =
0.927 of the datasheet; on the H100 (``reference_h100_steps_micro.csv``, a ``*_micro.csv``:
never fitted; 10 series) at 3.04-3.17 TB/s but Llama-3.2-1B at 16 (2.75), median 3.13 =
0.935: per (model, batch) 0.69-0.71x the H200's (1B at 16: 0.81x), the datasheet ratio 0.698.

GEMMs (``compute_eff``) keep their fraction of the peak unless both GPUs ran the reference
engine's prefill steps: :func:`step_compute_ratio` takes each one-sequence prefill of the
same model and prompt (2,048-8,192 tokens) on both, less its attention and the fixed terms, as
GEMM time (with the memory-bound element-wise kernels between the GEMMs, which the step model
counts there); the H100 runs it at 0.976x the H200's rate (9 pairs, 0.954-1.001) at equal bf16
peaks, so ``compute_eff`` 0.691 -> 0.674 (``STEP_COMPUTE_RULE``).
"""

from __future__ import annotations

import csv
import re
import statistics
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from planner.catalog.catalog import DATA_DIR
from planner.errors import PlannerError

MICRO_DIR = DATA_DIR / "benchmarks"
#: a micro-benchmark file needs this many GEMV shapes for a fit of t0 and the stream rate
MIN_SHAPES = 3
#: the rows that measure a weight read: bf16 GEMM of one row (a decode step's GEMV)
GEMV_ROWS = 1
#: KV streaming rate: decode-step rows of batches from this size on (fewer sequences leave the
#: split-KV kernel with too few programs: 3.4-3.8 TB/s at batch 1 on the H200) ...
KV_MIN_BATCH = 16
#: ... over this many contexts or more at one (model, batch)
KV_MIN_CTXS = 3
#: the reference engine's step rows name their KV bytes in ``notes``
_KV_READ = re.compile(r"KV read ([\d.]+)\)?")


@dataclass(frozen=True)
class StreamFit:
    """``t = t0_s + bytes / stream_bytes_s`` over one GPU's GEMV micro-benchmarks (least
    squares over the shapes)."""

    gpu: str
    t0_s: float  # per-kernel time that does not scale with bandwidth [s]
    stream_bytes_s: float  # achieved bandwidth of a long read [B/s]
    n_shapes: int
    source: str  # the file and the command that wrote it


def fit_stream(sizes_bytes, times_s) -> tuple[float, float]:
    """(t0 [s], stream [B/s]) of ``t = t0 + S / stream`` by least squares.

    Parameters
    ----------
    sizes_bytes : bytes read by each kernel [B]
    times_s : their median times [s]
    """
    n = len(sizes_bytes)
    if n < 2 or len(times_s) != n:
        raise PlannerError(f"a stream fit needs two or more (bytes, time) pairs, got {n}")
    mx = sum(sizes_bytes) / n
    my = sum(times_s) / n
    sxx = sum((x - mx) ** 2 for x in sizes_bytes)
    if sxx <= 0:
        raise PlannerError("a stream fit needs kernels of different sizes")
    slope = sum((x - mx) * (y - my) for x, y in zip(sizes_bytes, times_s, strict=True)) / sxx
    if not slope > 0:
        raise PlannerError("the GEMV times do not grow with their size: no stream rate")
    return my - slope * mx, 1.0 / slope


def _read(path: Path) -> list[StreamFit]:
    rows: dict[str, tuple[list[float], list[float], str]] = {}
    try:
        with path.open(encoding="utf-8", newline="") as f:
            for r in csv.DictReader(f):
                if r.get("bench") != "gemm" or r.get("dtype") != "bf16":
                    continue
                try:
                    m, n, k, t = (float(r[c]) for c in ("m", "n", "k", "median_s"))
                except (KeyError, TypeError, ValueError):
                    continue
                if m != GEMV_ROWS or not (t > 0 and n > 0 and k > 0):
                    continue
                gpu = (r.get("hardware") or "").strip()
                s, ts, src = rows.setdefault(gpu, ([], [], f"{path.name}: {r.get('command', '')}"))
                s.append(2.0 * n * k)
                ts.append(t)
    except OSError as e:
        raise PlannerError(f"{path}: cannot read the micro-benchmarks ({e})") from None
    out = []
    for gpu, (s, ts, src) in sorted(rows.items()):
        if gpu and len(s) >= MIN_SHAPES:
            t0, bw = fit_stream(s, ts)
            out.append(StreamFit(gpu, max(t0, 0.0), bw, len(s), src))
    return out


@lru_cache(maxsize=4)
def stream_fits(directory: Path = MICRO_DIR) -> dict[str, StreamFit]:
    """GPU id -> its :class:`StreamFit`, from every ``*_micro.csv`` under ``directory``
    (the first file, by name, that measures a GPU)."""
    fits: dict[str, StreamFit] = {}
    for p in sorted(Path(directory).glob("*_micro.csv")):
        for f in _read(p):
            fits.setdefault(f.gpu, f)
    return fits


def stream_fit(gpu, directory: Path = MICRO_DIR) -> StreamFit | None:
    """``gpu``'s (a catalog record) :class:`StreamFit`, None when no micro-benchmark measures
    it or its datasheet gives no bandwidth."""
    f = stream_fits(directory).get(gpu.id)
    return f if f is not None and gpu.mem_bw_gbs else None


def stream_eff(gpu, directory: Path = MICRO_DIR) -> float | None:
    """Streaming bandwidth / datasheet bandwidth of ``gpu`` (a catalog record), None when no
    micro-benchmark measures it."""
    f = stream_fit(gpu, directory)
    return None if f is None else min(1.0, f.stream_bytes_s / (gpu.mem_bw_gbs * 1e9))


@dataclass(frozen=True)
class KvStreamFit:
    """The marginal KV read rate of the reference engine's decode step on one GPU: per (model,
    batch), the least-squares slope of the step time over the KV bytes it reads (contexts of
    256 to 32k tokens); the median over the series."""

    gpu: str
    stream_bytes_s: float  # marginal KV read rate [B/s]
    n_series: int  # (model, batch) series with >= KV_MIN_CTXS contexts
    source: str  # the files


def _decode_rows(path: Path, min_batch: int):
    """(GPU, (model, precision, batch), KV bytes, time [s], row) of the reference engine's
    one-GPU bf16-KV decode-step rows of ``path`` with ``batch >= min_batch``."""
    try:
        with path.open(encoding="utf-8", newline="") as f:
            for r in csv.DictReader(f):
                if (
                    r.get("metric") != "decode_step_s"
                    or "bench/ref_engine.py" not in (r.get("source") or "")
                    or r.get("kv_precision") != "bf16"
                    or str(r.get("tp")) != "1"
                ):
                    continue
                m = _KV_READ.search(r.get("notes") or "")
                try:
                    b, t = int(r["batch"]), float(r["value"])
                except (KeyError, TypeError, ValueError):
                    continue
                if m and b >= min_batch and t > 0:
                    yield (
                        (r.get("hardware") or "").strip(),
                        (r.get("model"), r.get("precision"), b),
                        float(m.group(1)) * 1e9,
                        t,
                        r,
                    )
    except OSError as e:
        raise PlannerError(f"{path}: cannot read the decode-step rows ({e})") from None


def _kv_rows(path: Path):
    for gpu, key, kv, t, _ in _decode_rows(path, KV_MIN_BATCH):
        yield gpu, key, kv, t


@lru_cache(maxsize=4)
def kv_stream_fits(directory: Path = MICRO_DIR) -> dict[str, KvStreamFit]:
    """GPU id -> its :class:`KvStreamFit`, from the reference engine's one-GPU decode-step rows
    in ``directory``'s ``reference_*.csv`` files (module docstring)."""
    series: dict[str, dict[tuple, tuple[list[float], list[float]]]] = {}
    files: dict[str, set[str]] = {}
    for p in sorted(Path(directory).glob("reference_*.csv")):
        for gpu, key, kv_bytes, t in _kv_rows(p):
            x, y = series.setdefault(gpu, {}).setdefault(key, ([], []))
            x.append(kv_bytes)
            y.append(t)
            files.setdefault(gpu, set()).add(p.name)
    out = {}
    for gpu, by in sorted(series.items()):
        rates = []
        for x, y in by.values():
            if len(set(x)) >= KV_MIN_CTXS:
                try:
                    rates.append(fit_stream(x, y)[1])
                except PlannerError:  # a series whose time does not grow with its KV
                    continue
        if gpu and rates:
            out[gpu] = KvStreamFit(
                gpu, statistics.median(rates), len(rates), ", ".join(sorted(files[gpu]))
            )
    return out


def kv_stream_eff(gpu, directory: Path = MICRO_DIR) -> float | None:
    """Marginal KV read rate / datasheet bandwidth of ``gpu`` (a catalog record), None when no
    decode-step rows measure it or its datasheet gives no bandwidth."""
    f = kv_stream_fits(directory).get(gpu.id)
    if f is None or not gpu.mem_bw_gbs:
        return None
    return min(1.0, f.stream_bytes_s / (gpu.mem_bw_gbs * 1e9))


#: weight-read fraction of the decode step: batch-1 rows (the weights dominate; the split-KV
#: kernel's few programs make its KV read slow, so short contexts only) ...
WEIGHT_STEP_BATCH = 1
#: ... of at most this context [tokens] (the KV read is under 4 % of the step's bytes)
WEIGHT_STEP_MAX_CTX = 4096
_WEIGHTS = re.compile(r"weights ([\d.]+)")
#: the H100 transfer's weight reads from the matched decode steps of the two GPUs
#: (:func:`step_weight_ratio`); False: from the GEMV micro-benchmarks alone (the rule before)
STEP_WEIGHT_RULE = True


def _weight_rows(path: Path):
    """(GPU, (framework, precision, model, context), weight bytes, KV bytes, time [s]) of the
    reference engine's one-GPU batch-1 decode-step rows in ``path``."""
    for gpu, (model, prec, b), kv, t, r in _decode_rows(path, WEIGHT_STEP_BATCH):
        m = _WEIGHTS.search(r.get("notes") or "")
        try:
            ctx = int(r["context_len"])
        except (KeyError, TypeError, ValueError):
            continue
        if m and b == WEIGHT_STEP_BATCH and ctx <= WEIGHT_STEP_MAX_CTX:
            key = (r.get("framework"), prec, model, ctx)
            yield gpu, key, float(m.group(1)) * 1e9, kv, t


@lru_cache(maxsize=4)
def _weight_steps(directory: Path = MICRO_DIR) -> dict[str, dict[tuple, tuple]]:
    """GPU id -> (framework, precision, model, context) -> (weight bytes, KV bytes, time [s],
    file name)."""
    out: dict[str, dict[tuple, tuple]] = {}
    for p in sorted(Path(directory).glob("reference_*.csv")):
        for gpu, key, w, kv, t in _weight_rows(p):
            out.setdefault(gpu, {}).setdefault(key, (w, kv, t, p.name))
    return out


@dataclass(frozen=True)
class StepWeightRatio:
    """Achieved weight-read rate of the reference engine's decode step, target over donor:
    the median over the (model, context) pairs both GPUs ran (:func:`step_weight_ratio`)."""

    ratio: float  # target's achieved weight-read rate / the donor's [1]
    low: float  # the smallest and largest pair [1]
    high: float
    n_pairs: int
    source: str  # the files


def step_weight_ratio(
    params, donor, target, directory: Path = MICRO_DIR, framework="pytorch", precision="bf16"
):
    """How much faster the ``target`` GPU reads a decode step's weights than the ``donor``
    (catalog records), from the reference engine's batch-1 decode steps of the same model and
    context on both (``bench/ref_engine.py`` rows of ``framework`` and ``precision``, short
    contexts), or None when they share no such step.

    Each step's weight time is its measured time less the fixed per-step and per-layer terms
    of ``params`` (the donor's fit: ``step_overhead_s + layer_overhead_s x layers +
    seq_overhead_s``, kept in seconds on the target as the transfer keeps them) and its KV
    read at the GPU's marginal KV rate (:func:`kv_stream_fits`); the rate is the step's
    weight bytes over that time. The ratio of the two rates per pair, median over pairs.
    """
    from planner.catalog.catalog import load_catalog

    steps = _weight_steps(directory)
    sd, st = steps.get(donor.id), steps.get(target.id)
    kv = kv_stream_fits(directory)
    if not sd or not st or donor.id not in kv or target.id not in kv:
        return None
    cat = load_catalog()
    ratios, files = [], set()
    for key in sorted(k for k in set(sd) & set(st) if k[:2] == (framework, precision)):
        try:
            layers = cat.model(key[2]).num_hidden_layers
        except (PlannerError, OSError, ValueError):
            continue
        fixed = params.step_overhead_s + params.layer_overhead_s * layers + params.seq_overhead_s
        rate = []
        for gpu, (w, kvb, t, name) in ((donor.id, sd[key]), (target.id, st[key])):
            tw = t - fixed - kvb / kv[gpu].stream_bytes_s
            rate.append(w / tw if tw > 0 else 0.0)
            files.add(name)
        if min(rate) > 0:
            ratios.append(rate[1] / rate[0])
    if not ratios:
        return None
    return StepWeightRatio(
        statistics.median(ratios), min(ratios), max(ratios), len(ratios), ", ".join(sorted(files))
    )


#: the GEMM rate of the reference engine's prefill steps, target over donor
#: (:func:`step_compute_ratio`): prompts of at least this many tokens (below, the eager step's
#: host dispatch shows: the 128- and 512-token steps of one GPU over the other's 0.44-2.1x) ...
PREFILL_STEP_MIN_TOKENS = 2048
#: ... and at most this many (at 16,384 attention is half of the step)
PREFILL_STEP_MAX_TOKENS = 8192
#: the transfer's GEMM efficiency (``compute_eff``) from the matched prefill steps of the two
#: GPUs (:func:`step_compute_ratio`); False: kept as a fraction of the peak (the rule before)
STEP_COMPUTE_RULE = True


@lru_cache(maxsize=4)
def _prefill_steps(directory: Path = MICRO_DIR) -> dict[str, dict[tuple, tuple]]:
    """GPU id -> (framework, precision, model, prompt tokens) -> (time [s], file name) of the
    reference engine's one-GPU, one-sequence prefill-step rows (``prefill_s``, fresh prompt)."""
    out: dict[str, dict[tuple, tuple]] = {}
    for p in sorted(Path(directory).glob("reference_*.csv")):
        try:
            with p.open(encoding="utf-8", newline="") as f:
                for r in csv.DictReader(f):
                    if (
                        r.get("metric") != "prefill_s"
                        or "bench/ref_engine.py" not in (r.get("source") or "")
                        or str(r.get("tp")) != "1"
                        or str(r.get("batch")) != "1"
                    ):
                        continue
                    try:
                        isl, t = int(float(r["isl"])), float(r["value"])
                    except (KeyError, TypeError, ValueError):
                        continue
                    if PREFILL_STEP_MIN_TOKENS <= isl <= PREFILL_STEP_MAX_TOKENS and t > 0:
                        key = (r.get("framework"), r.get("precision"), r.get("model"), isl)
                        gpu = (r.get("hardware") or "").strip()
                        out.setdefault(gpu, {}).setdefault(key, (t, p.name))
        except OSError as e:
            raise PlannerError(f"{p}: cannot read the prefill-step rows ({e})") from None
    return out


def _peak_flops(gpu, precision: str) -> float | None:
    """Dense peak of ``gpu`` (a catalog record) in ``precision`` [FLOP/s], None if unknown."""
    v = getattr(gpu, f"{precision}_dense_tflops", None)
    return float(v) * 1e12 if v else None


def step_compute_ratio(
    params, donor, target, directory: Path = MICRO_DIR, framework="pytorch", precision="bf16"
):
    """How much faster the ``target`` GPU runs a prefill step's GEMMs than the ``donor``
    (catalog records), from the reference engine's one-sequence prefill steps of the same model
    and prompt on both (``bench/ref_engine.py`` rows of ``framework`` and ``precision``,
    ``PREFILL_STEP_MIN_TOKENS``-``PREFILL_STEP_MAX_TOKENS`` tokens), or None when they share
    no such step or a peak is unknown.

    Each step's GEMM time is its measured time less its causal attention (``2 x layers x heads
    x head_dim x tokens^2`` FLOPs, the harness's count, at the donor's ``attn_eff`` of the
    donor's peak, kept in seconds on both: one architecture, the same SMs) and the fixed
    per-step and per-layer terms of ``params``. Per pair, the GEMM rate ratio is the donor's
    GEMM time over the target's (the same FLOPs); the median over pairs. The GEMM time also holds the step's memory-bound element-wise
    kernels (norms, RoPE, SiLU, KV writes), which the step model counts in ``compute_eff``.
    """
    from planner.catalog.catalog import load_catalog

    steps = _prefill_steps(directory)
    sd, st = steps.get(donor.id), steps.get(target.id)
    peak_d = _peak_flops(donor, precision)
    if not sd or not st or not peak_d or not _peak_flops(target, precision):
        return None
    cat = load_catalog()
    ratios, files = [], set()
    for key in sorted(k for k in set(sd) & set(st) if k[:2] == (framework, precision)):
        try:
            m = cat.model(key[2])
        except (PlannerError, OSError, ValueError):
            continue
        layers, tok = m.num_hidden_layers, key[3]
        attn = (
            2.0 * layers * m.num_attention_heads * m.head_dim * tok**2 / (peak_d * params.attn_eff)
        )
        fixed = params.step_overhead_s + params.layer_overhead_s * layers + params.seq_overhead_s
        gd, gt = sd[key][0] - attn - fixed, st[key][0] - attn - fixed
        files |= {sd[key][1], st[key][1]}
        if gd > 0 and gt > 0:
            ratios.append(gd / gt)
    if not ratios:
        return None
    return StepWeightRatio(
        statistics.median(ratios), min(ratios), max(ratios), len(ratios), ", ".join(sorted(files))
    )


def transfer_mem_eff(
    eff: float,
    donor_bw: float,
    target_bw: float,
    stream_donor: float,
    stream_target: float,
    latency_ratio: float = 1.0,
) -> float:
    """A memory efficiency fitted on the donor GPU, moved to the target GPU.

    The donor's time per byte, ``1 / (eff x donor_bw)``, is a streaming part
    ``1 / (stream_donor x donor_bw)`` that scales with the bandwidth and the rest, per-kernel
    latency (module docstring), which scales with the per-kernel time ``t0`` instead::

        latency        = max(0, 1 / eff - 1 / stream_donor)       [per byte, x 1 / donor_bw]
        1 / eff_target = 1 / stream_target + latency_ratio x (target_bw / donor_bw) x latency

    (when ``eff`` is at or above the donor's streaming rate, all of it streams: ``1 / eff x
    stream_donor / stream_target``). Equal bandwidths, streaming rates and latencies return
    ``eff``; the target's time per byte, ``1 / (stream_target x target_bw) + latency_ratio x
    latency / donor_bw``, falls as its bandwidth grows.

    Parameters
    ----------
    eff : the donor's fitted efficiency (achieved / datasheet bandwidth) [1]
    donor_bw, target_bw : the two datasheet bandwidths [B/s or GB/s, the same unit]
    stream_donor, stream_target : streaming / datasheet bandwidth of each GPU [1]
    latency_ratio : the target's per-kernel time ``t0`` over the donor's [1]; 1 when either
        is unmeasured (one architecture: the same SMs issue the reads)
    """
    if not (0 < eff <= 1 and donor_bw > 0 and target_bw > 0 and latency_ratio >= 0):
        raise PlannerError(
            f"transfer_mem_eff needs 0 < eff <= 1, positive bandwidths and a latency ratio "
            f">= 0, got {eff!r}, {donor_bw!r}, {target_bw!r}, {latency_ratio!r}"
        )
    if not (0 < stream_donor <= 1 and 0 < stream_target <= 1):
        raise PlannerError(
            f"streaming efficiencies must be in (0, 1], got {stream_donor!r}, {stream_target!r}"
        )
    latency = max(0.0, 1.0 / eff - 1.0 / stream_donor)  # [1 / donor_bw per byte]
    streaming = (1.0 / eff - latency) * stream_donor / stream_target  # [1 / target_bw per byte]
    return float(min(1.0, 1.0 / (streaming + latency_ratio * target_bw / donor_bw * latency)))


def transfer_params(params, donor, target, directory: Path = MICRO_DIR, node=None):
    """``params`` fitted on the ``donor`` GPU (a catalog record), for the ``target``: the
    weight-read efficiency (``mem_eff``) times the two GPUs' measured decode-step weight-read
    rate ratio (:func:`step_weight_ratio`, over the datasheet ratio) where both ran the
    reference engine's decode steps, else through :func:`transfer_mem_eff`, with each GPU's
    streaming rate from its GEMV micro-benchmarks, and the KV-read efficiency (``kv_mem_eff``)
    by the same rule with each GPU's marginal KV read rate (:func:`kv_stream_fits`). A target
    without measurements takes the donor's fraction (one architecture, the same SMs issue the
    reads); the per-kernel latency is kept in seconds (see the comment below). The decode
    steps' ratio is used only for the framework and precision they measure (``node``, the
    donor's profile node: its ``framework`` and ``precision``; None: never). Each
    efficiency is unchanged when the donor has no measurement of its kernels (then it
    transfers as a fraction of the datasheet), and both when the target's bandwidth is unknown
    or the two GPUs are one."""
    if not target.mem_bw_gbs or not donor.mem_bw_gbs or donor.id == target.id:
        return params
    bw = (donor.mem_bw_gbs, target.mem_bw_gbs)
    moved = {}
    # the per-kernel latency stays in seconds (latency_ratio 1): the two t0 were timed on
    # different hosts (5.2 us on the H200 machine, 3.1 us on the H100 one; 4.3 us on other
    # shapes of the same H100), so their ratio carries the host's launch timing, not the
    # GPU's; scaling by it moved TensorRT-LLM fp16 H100 -> H200 from 0.762 to 0.634 with no
    # held-out row to check it, for 9.0% against 9.2% on the H100 item (h100xfer note)
    sw = None
    if STEP_WEIGHT_RULE and node is not None:  # the steps measure one engine and precision
        sw = step_weight_ratio(params, donor, target, directory, node.framework, node.precision)
    if sw is not None:
        # the same engine's decode steps measured on both GPUs: the weight reads move by
        # their measured rate ratio (the GEMV rule below gave the H100 1.43x the H200's
        # weight time; its batch-1 decode steps say 1.36x: docs/accuracy.md "h100-transfer")
        moved["mem_eff"] = round(
            min(1.0, params.mem_eff * sw.ratio * donor.mem_bw_gbs / target.mem_bw_gbs), 5
        )
    sc = None
    if STEP_COMPUTE_RULE and node is not None:  # the prefill steps: GEMMs of one engine
        sc = step_compute_ratio(params, donor, target, directory, node.framework, node.precision)
    if sc is not None:
        # the same engine's prefill steps measured on both GPUs: the GEMMs (and the
        # memory-bound element-wise kernels around them) move by their measured rate ratio;
        # the H100 runs them at 0.976x the H200's rate at the same peak (docs/accuracy.md
        # "h100-transfer")
        peaks = _peak_flops(donor, node.precision) / _peak_flops(target, node.precision)
        moved["compute_eff"] = round(min(1.0, params.compute_eff * sc.ratio * peaks), 5)
    for field, frac in (("mem_eff", stream_eff), ("kv_mem_eff", kv_stream_eff)):
        if field in moved:
            continue
        sd = frac(donor, directory)
        if sd is None:
            continue
        st = frac(target, directory)
        st = sd if st is None else st
        moved[field] = round(transfer_mem_eff(getattr(params, field), *bw, sd, st, 1.0), 5)
    return params.with_(**moved) if moved else params
