#!/usr/bin/env python3
"""Reference step-time harness: plain PyTorch, random bf16 weights of a model's shape.

Measures, on one GPU,
  * ``prefill_s``     one eager forward over ``batch`` prompts of ``isl`` tokens (causal SDPA,
                      KV written into a preallocated cache, logits of the last token only);
  * ``decode_step_s`` one decode step of ``batch`` sequences holding ``context_len`` tokens in a
                      preallocated contiguous KV cache, captured as a CUDA graph and replayed;
and micro-benchmarks (HBM copy bandwidth, bf16 / fp8 GEMM rates).

Output: ``<out-dir>/pytorch_h200.csv`` in the schema of
``shared/reference/benchmarks/calibration.csv`` and ``<out-dir>/pytorch_h200_micro.csv``
(columns documented in bench/README.md). Rows are flushed one by one, so a run stopped by a
time limit still leaves every finished point on disk.

torch is needed only by this script; it is not a dependency of the planner package.

CPU smoke test (no GPU):  python bench/pytorch_ref.py --dry-run --out-dir bench_out
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

try:  # torch >= 2.3
    from torch.nn.attention import SDPBackend, sdpa_kernel
except Exception:  # pragma: no cover - old torch
    SDPBackend = None
    sdpa_kernel = None

SCHEMA = [
    "id",
    "source",
    "source_detail",
    "as_of",
    "hardware",
    "n_gpus",
    "tp",
    "pp",
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
]
MICRO_SCHEMA = [
    "bench",
    "dtype",
    "m",
    "n",
    "k",
    "size_bytes",
    "bytes_moved",
    "flops",
    "median_s",
    "p10_s",
    "p90_s",
    "reps",
    "inner",
    "tflops",
    "gb_s",
    "hardware",
    "gpu_name",
    "torch_version",
    "cuda_version",
    "driver",
    "as_of",
    "command",
    "notes",
]
SOURCE = "planner own measurement (bench/pytorch_ref.py)"
HARDWARE = "nvidia-h200-sxm"
KV_LIMIT_BYTES = 120e9  # weights + KV cache above this are skipped
CFG_DIR = "data/benchmarks/configs"

# ---------------------------------------------------------------- model shapes
# Dimensions read from shared/reference/models_ref.yaml. rms eps / rope theta are the HF values
# (they do not change timing).
MODELS: dict[str, dict] = {
    "llama-3.2-1b": dict(
        layers=16,
        hidden=2048,
        inter=8192,
        heads=32,
        kv_heads=8,
        head_dim=64,
        vocab=128256,
        tied=True,
        qkv_bias=False,
        qk_norm=False,
        rope_theta=500000.0,
        eps=1e-5,
        max_pos=131072,
    ),
    "llama-3.2-3b": dict(
        layers=28,
        hidden=3072,
        inter=8192,
        heads=24,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
        tied=True,
        qkv_bias=False,
        qk_norm=False,
        rope_theta=500000.0,
        eps=1e-5,
        max_pos=131072,
    ),
    "llama-3.1-8b": dict(
        layers=32,
        hidden=4096,
        inter=14336,
        heads=32,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
        tied=False,
        qkv_bias=False,
        qk_norm=False,
        rope_theta=500000.0,
        eps=1e-5,
        max_pos=131072,
    ),
    "qwen2.5-14b": dict(
        layers=48,
        hidden=5120,
        inter=13824,
        heads=40,
        kv_heads=8,
        head_dim=128,
        vocab=152064,
        tied=False,
        qkv_bias=True,
        qk_norm=False,
        rope_theta=1000000.0,
        eps=1e-6,
        max_pos=32768,
    ),
    # llama-3.1-70b with 20 of its 80 layers, every other dimension identical
    "llama-3.1-70b-20l": dict(
        layers=20,
        hidden=8192,
        inter=28672,
        heads=64,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
        tied=False,
        qkv_bias=False,
        qk_norm=False,
        rope_theta=500000.0,
        eps=1e-5,
        max_pos=131072,
        reduced_from="llama-3.1-70b",
        full_layers=80,
    ),
    "qwen3-32b": dict(
        layers=64,
        hidden=5120,
        inter=25600,
        heads=64,
        kv_heads=8,
        head_dim=128,
        vocab=151936,
        tied=False,
        qkv_bias=False,
        qk_norm=True,
        rope_theta=1000000.0,
        eps=1e-6,
        max_pos=40960,
    ),
    # CPU smoke-test shape
    "tiny": dict(
        layers=2,
        hidden=64,
        inter=160,
        heads=4,
        kv_heads=2,
        head_dim=24,
        vocab=512,
        tied=False,
        qkv_bias=True,
        qk_norm=True,
        rope_theta=10000.0,
        eps=1e-6,
        max_pos=4096,
    ),
}
DEFAULT_MODELS = [
    "llama-3.1-8b",
    "llama-3.1-70b-20l",
    "llama-3.2-1b",
    "qwen2.5-14b",
    "llama-3.2-3b",
    "qwen3-32b",
]
# relative share of the remaining time budget a model may use (unused time rolls over)
BUDGET_WEIGHT = {
    "llama-3.1-8b": 1.2,
    "llama-3.1-70b-20l": 1.5,
    "llama-3.2-1b": 0.8,
    "qwen2.5-14b": 1.1,
    "llama-3.2-3b": 0.8,
    "qwen3-32b": 1.5,
    "tiny": 1.0,
}


def model_column(name: str) -> str:
    """Catalog id for full-size shapes, config.json path for reduced ones."""
    if "reduced_from" in MODELS[name]:
        return f"{CFG_DIR}/{name}/config.json"
    return name


def hf_config(name: str) -> dict:
    c = MODELS[name]
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": c["hidden"],
        "intermediate_size": c["inter"],
        "num_hidden_layers": c["layers"],
        "num_attention_heads": c["heads"],
        "num_key_value_heads": c["kv_heads"],
        "head_dim": c["head_dim"],
        "vocab_size": c["vocab"],
        "max_position_embeddings": c["max_pos"],
        "rms_norm_eps": c["eps"],
        "rope_theta": c["rope_theta"],
        "tie_word_embeddings": c["tied"],
        "torch_dtype": "bfloat16",
        "hidden_act": "silu",
        "attention_bias": c["qkv_bias"],
        "mlp_bias": False,
    }
    if c.get("reduced_from", "").startswith("llama-3.1"):
        cfg["rope_scaling"] = {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        }
        cfg["bos_token_id"] = 128000
        cfg["eos_token_id"] = 128001
    return cfg


def write_configs(root: str) -> list[str]:
    out = []
    for name, c in MODELS.items():
        if "reduced_from" not in c:
            continue
        path = os.path.join(root, CFG_DIR, name, "config.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(hf_config(name), f, indent=2)
            f.write("\n")
        out.append(path)
    return out


# ---------------------------------------------------------------- the model
class Model:
    """Random-weight decoder (Llama / Qwen2 / Qwen3 layout) with fused QKV and gate_up."""

    def __init__(self, cfg: dict, device: str, dtype: torch.dtype, seed: int = 0):
        self.c = cfg
        self.device, self.dtype = device, dtype
        g = torch.Generator(device=device)
        g.manual_seed(seed)
        H, I, D = cfg["hidden"], cfg["inter"], cfg["head_dim"]
        Hq, Hkv = cfg["heads"], cfg["kv_heads"]
        qkv_out = (Hq + 2 * Hkv) * D

        def rnd(*shape, std):
            t = torch.empty(*shape, device=device, dtype=dtype)
            t.normal_(0.0, std, generator=g)
            return t

        def ones_ish(n):  # norm weights near 1 (not exactly 1: never time on constants)
            return 1.0 + rnd(n, std=0.02)

        self.embed = rnd(cfg["vocab"], H, std=1.0)
        self.layers = []
        for _ in range(cfg["layers"]):
            L = {
                "n1": ones_ish(H),
                "wqkv": rnd(qkv_out, H, std=H**-0.5),
                "bqkv": rnd(qkv_out, std=0.02) if cfg["qkv_bias"] else None,
                "wo": rnd(H, Hq * D, std=(Hq * D) ** -0.5),
                "n2": ones_ish(H),
                "wgu": rnd(2 * I, H, std=H**-0.5),
                "wdown": rnd(H, I, std=I**-0.5),
            }
            if cfg["qk_norm"]:
                L["qn"] = ones_ish(D)
                L["kn"] = ones_ish(D)
            self.layers.append(L)
        self.norm = ones_ish(H)
        self.lm_head = self.embed if cfg["tied"] else rnd(cfg["vocab"], H, std=H**-0.5)
        # RoPE tables (plain theta RoPE; llama3 / YaRN frequency scaling is not applied: it
        # changes the table's values, not the work per step)
        inv = 1.0 / (
            cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float32, device=device) / D)
        )
        self.max_pos = cfg["max_pos"]
        self._inv = inv
        self.cos = self.sin = None
        self.ensure_rope(min(self.max_pos, 17000))

    def ensure_rope(self, n: int) -> None:
        if self.cos is not None and self.cos.shape[0] >= n:
            return
        pos = torch.arange(n, dtype=torch.float32, device=self.device)
        f = torch.outer(pos, self._inv)
        self.cos = f.cos().to(self.dtype)
        self.sin = f.sin().to(self.dtype)

    def weight_bytes(self) -> int:
        n = self.embed.numel() + self.norm.numel()
        if not self.c["tied"]:
            n += self.lm_head.numel()
        for L in self.layers:
            n += sum(t.numel() for t in L.values() if t is not None)
        return n * self.embed.element_size()

    def kv_bytes_per_token(self) -> int:
        c = self.c
        return 2 * c["layers"] * c["kv_heads"] * c["head_dim"] * self.embed.element_size()

    # x: [..., S, heads, D], cos/sin: [S, D/2]
    @staticmethod
    def _rope(x, cos, sin):
        cos = cos[:, None, :]
        sin = sin[:, None, :]
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def _qkv(self, L, h, B, S, cos, sin):
        c = self.c
        Hq, Hkv, D = c["heads"], c["kv_heads"], c["head_dim"]
        qkv = F.linear(h, L["wqkv"], L["bqkv"]).view(B, S, Hq + 2 * Hkv, D)
        q, k, v = qkv.split([Hq, Hkv, Hkv], dim=2)
        if c["qk_norm"]:
            q = F.rms_norm(q, (D,), L["qn"], c["eps"])
            k = F.rms_norm(k, (D,), L["kn"], c["eps"])
        q = self._rope(q, cos, sin)
        k = self._rope(k, cos, sin)
        # -> [B, heads, S, D]
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    def _mlp(self, L, x):
        c = self.c
        h = F.rms_norm(x, (c["hidden"],), L["n2"], c["eps"])
        gate, up = F.linear(h, L["wgu"]).chunk(2, dim=-1)
        return x + F.linear(F.silu(gate) * up, L["wdown"])

    def prefill(self, ids, caches):
        """ids [B, S]; caches[l] = (k, v) each [B, n_kv, >=S, D]. Returns logits [B, vocab]."""
        c = self.c
        B, S = ids.shape
        cos, sin = self.cos[:S], self.sin[:S]
        x = F.embedding(ids, self.embed)
        for li, L in enumerate(self.layers):
            h = F.rms_norm(x, (c["hidden"],), L["n1"], c["eps"])
            q, k, v = self._qkv(L, h, B, S, cos, sin)
            if caches is not None:
                kc, vc = caches[li]
                kc[:, :, :S].copy_(k)
                vc[:, :, :S].copy_(v)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            o = o.transpose(1, 2).reshape(B, S, c["heads"] * c["head_dim"])
            x = x + F.linear(o, L["wo"])
            x = self._mlp(L, x)
        x = F.rms_norm(x, (c["hidden"],), self.norm, c["eps"])
        return F.linear(x[:, -1], self.lm_head)

    def decode(self, ids, caches, pos: int):
        """ids [B]; caches[l] = (k, v) each [B, n_kv, >=pos+1, D] holding pos tokens.
        Writes the new token's K/V at index pos and attends over pos+1 keys."""
        c = self.c
        B = ids.shape[0]
        cos, sin = self.cos[pos : pos + 1], self.sin[pos : pos + 1]
        x = F.embedding(ids, self.embed)
        for li, L in enumerate(self.layers):
            h = F.rms_norm(x, (c["hidden"],), L["n1"], c["eps"])
            q, k, v = self._qkv(L, h, B, 1, cos, sin)
            kc, vc = caches[li]
            kc[:, :, pos : pos + 1].copy_(k)
            vc[:, :, pos : pos + 1].copy_(v)
            o = F.scaled_dot_product_attention(
                q, kc[:, :, : pos + 1], vc[:, :, : pos + 1], enable_gqa=True
            )
            o = o.reshape(B, c["heads"] * c["head_dim"])
            x = x + F.linear(o, L["wo"])
            x = self._mlp(L, x)
        x = F.rms_norm(x, (c["hidden"],), self.norm, c["eps"])
        return F.linear(x, self.lm_head)


class KVPool:
    """One flat preallocated buffer, carved into per-layer [B, n_kv, T, D] K and V views."""

    def __init__(self, model: Model, n_bytes: int):
        c = model.c
        esz = model.embed.element_size()
        self.model = model
        self.buf = torch.empty(max(1, n_bytes // esz), device=model.device, dtype=model.dtype)
        self.buf.normal_()  # never attend over zeros / uninitialised memory
        self.cap = self.buf.numel() * esz

    def views(self, B: int, T: int):
        c = self.model.c
        per = B * c["kv_heads"] * T * c["head_dim"]
        if 2 * c["layers"] * per > self.buf.numel():
            raise MemoryError("KV pool too small")
        out, off = [], 0
        for _ in range(c["layers"]):
            k = self.buf[off : off + per].view(B, c["kv_heads"], T, c["head_dim"])
            off += per
            v = self.buf[off : off + per].view(B, c["kv_heads"], T, c["head_dim"])
            off += per
            out.append((k, v))
        return out


# ---------------------------------------------------------------- timing
class Timer:
    def __init__(self, device: str):
        self.cuda = device.startswith("cuda")
        self.agree = None  # reps -> reps agreed by every rank (tensor parallel runs)

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def measure(self, fn, warmup: int, min_reps: int, max_reps: int, target_s: float):
        """Warm up, estimate one call, then time reps (CUDA events around each call).
        Returns (median, p10, p90, reps) in seconds."""
        for _ in range(warmup):
            fn()
        self.sync()
        est = self._time_n(fn, 1)[0]
        reps = int(max(min_reps, min(max_reps, target_s / max(est, 1e-7))))
        if self.agree is not None:  # tensor parallel: every rank times as many calls
            reps = self.agree(reps)
        ts = sorted(self._time_n(fn, reps))
        return statistics.median(ts), quantile(ts, 0.1), quantile(ts, 0.9), reps

    def _time_n(self, fn, n):
        if self.cuda:
            ev = [
                (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                for _ in range(n)
            ]
            for a, b in ev:
                a.record()
                fn()
                b.record()
            torch.cuda.synchronize()
            return [a.elapsed_time(b) / 1e3 for a, b in ev]
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        return out


def quantile(sorted_vals, q):
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = q * (len(sorted_vals) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


# ---------------------------------------------------------------- environment
def env_info(device: str) -> dict:
    info = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "none",
        "gpu": "cpu",
        "driver": "none",
        "cudnn": "none",
    }
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name(0)
        try:
            info["cudnn"] = str(torch.backends.cudnn.version())
        except Exception:
            pass
        try:
            info["driver"] = (
                subprocess.run(
                    ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                    capture_output=True,
                    text=True,
                    timeout=20,
                )
                .stdout.strip()
                .splitlines()[0]
            )
        except Exception as e:  # pragma: no cover
            info["driver"] = f"unknown ({type(e).__name__})"
    return info


def gpu_state() -> str:
    try:
        return subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,memory.used",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
    except Exception as e:
        return f"nvidia-smi unavailable ({type(e).__name__})"


class Log:
    def __init__(self, t0):
        self.t0 = t0

    def __call__(self, *a):
        print(f"[{time.time() - self.t0:7.1f}s]", *a, flush=True)


# ---------------------------------------------------------------- SDPA backend choice
BACKEND_ORDER = ["FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION", "MATH"]


class Attn:
    """Pins SDPA to one backend (first of flash, cuDNN, efficient, math that accepts the
    call), so the row can name the kernel that ran."""

    def __init__(self, device, order=None):
        self.cuda = device.startswith("cuda") and sdpa_kernel is not None
        self.cache = {}
        self.order = order or BACKEND_ORDER

    def pick(self, key, trial) -> str:
        if not self.cuda:
            return "cpu-default"
        if key in self.cache:
            return self.cache[key]
        errs = []
        for name in self.order:
            try:
                with sdpa_kernel([getattr(SDPBackend, name)]):
                    trial()
                torch.cuda.synchronize()
                self.cache[key] = name
                return name
            except Exception as e:  # noqa: BLE001
                errs.append(f"{name}: {str(e).splitlines()[0][:120]}")
        raise RuntimeError("no SDPA backend accepted the call: " + " | ".join(errs))

    def ctx(self, name):
        if not self.cuda:
            import contextlib

            return contextlib.nullcontext()
        return sdpa_kernel([getattr(SDPBackend, name)])


# ---------------------------------------------------------------- CSV writers
class CsvOut:
    def __init__(self, path, header, append=False):
        exists = append and os.path.exists(path)
        self.f = open(path, "a" if exists else "w", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=header, lineterminator="\n")
        if not exists:
            self.w.writeheader()
        self.f.flush()
        self.n = 0

    def row(self, d):
        self.w.writerow(d)
        self.f.flush()
        self.n += 1


def fmt(x, sig=6):
    return f"{x:.{sig}g}"


# ---------------------------------------------------------------- micro-benchmarks
def run_micro(args, dev, timer, info, out: CsvOut, log, deadline, command, as_of):
    base = {
        "hardware": HARDWARE if dev.startswith("cuda") else "cpu",
        "gpu_name": info["gpu"],
        "torch_version": info["torch"],
        "cuda_version": info["cuda"],
        "driver": info["driver"],
        "as_of": as_of,
        "command": command,
    }
    dtype = torch.bfloat16
    # 1) HBM copy bandwidth
    sizes = [1 << 20, 4 << 20] if args.tiny else [256 << 20, 512 << 20, 1 << 30, 2 << 30, 4 << 30]
    for sz in sizes:
        if time.time() > deadline:
            log("micro: time budget reached, skipping rest of copy sizes")
            break
        src = torch.empty(sz // 2, device=dev, dtype=dtype).normal_()
        dst = torch.empty_like(src)
        med, p10, p90, reps = timer.measure(lambda: dst.copy_(src), 3, 10, 50, 0.2)
        gbs = 2 * sz / med / 1e9
        out.row(
            {
                **base,
                "bench": "copy",
                "dtype": "bf16",
                "size_bytes": sz,
                "bytes_moved": 2 * sz,
                "median_s": fmt(med),
                "p10_s": fmt(p10),
                "p90_s": fmt(p90),
                "reps": reps,
                "inner": 1,
                "gb_s": fmt(gbs, 5),
                "notes": "dst.copy_(src), bytes_moved = read + write",
            }
        )
        log(f"copy {sz / 2**20:7.0f} MiB: {med * 1e3:8.3f} ms  {gbs:8.1f} GB/s")
        del src, dst
    # 2) GEMM rates (y = x @ W^T as in F.linear; W rotated over copies totalling >= 256 MB so
    #    the 60 MB L2 never holds the weights across calls)
    if args.tiny:
        ms = [1, 16, 64]
        shapes = [(256, 128), (128, 256)]
    else:
        ms = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
        shapes = [
            (4096, 4096),
            (6144, 4096),
            (14336, 4096),
            (28672, 4096),
            (4096, 14336),
            (10240, 8192),
            (28672, 8192),
            (8192, 28672),
            (128256, 4096),
        ]
    fp8_ok = (
        dev.startswith("cuda") and hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn")
    )
    fp8_err_logged = set()
    for kind in ["bf16", "fp8"]:
        for N, K in shapes:
            if time.time() > deadline:
                log(f"micro: time budget reached, skipping {kind} {N}x{K}")
                continue
            esz = 2 if kind == "bf16" else 1
            nbuf = max(1, math.ceil((256 << 20) / (N * K * esz))) if not args.tiny else 2
            if kind == "bf16":
                Ws = [torch.empty(N, K, device=dev, dtype=dtype).normal_() for _ in range(nbuf)]
            elif fp8_ok:
                Ws = [
                    torch.empty(N, K, device=dev, dtype=dtype).normal_().to(torch.float8_e4m3fn)
                    for _ in range(nbuf)
                ]
                one = torch.ones((), device=dev, dtype=torch.float32)
            else:
                out.row(
                    {
                        **base,
                        "bench": "gemm",
                        "dtype": "fp8_e4m3",
                        "n": N,
                        "k": K,
                        "notes": "unsupported: torch._scaled_mm / float8 not available on "
                        f"device {dev}",
                    }
                )
                break
            for M in ms:
                if time.time() > deadline:
                    break
                try:
                    na = nbuf if M * K * esz * nbuf <= (1 << 30) else 1
                    if kind == "bf16":
                        As = [
                            torch.empty(M, K, device=dev, dtype=dtype).normal_() for _ in range(na)
                        ]

                        def one_gemm(i, As=As, Ws=Ws):
                            return F.linear(As[i % len(As)], Ws[i % len(Ws)])
                    else:
                        As = [
                            torch.empty(M, K, device=dev, dtype=dtype)
                            .normal_()
                            .to(torch.float8_e4m3fn)
                            for _ in range(na)
                        ]

                        def one_gemm(i, As=As, Ws=Ws):
                            return torch._scaled_mm(
                                As[i % len(As)],
                                Ws[i % len(Ws)].t(),
                                scale_a=one,
                                scale_b=one,
                                out_dtype=torch.bfloat16,
                            )

                    # estimate single-call time (eager, after warm-up)
                    for i in range(3):
                        one_gemm(i)
                    timer.sync()
                    t1 = statistics.median(timer._time_n(lambda: one_gemm(0), 3))
                    k_rep = max(1, min(max(1, 128 // nbuf), math.ceil(2e-3 / max(t1, 1e-7) / nbuf)))
                    inner = nbuf * k_rep

                    def body(inner=inner, one_gemm=one_gemm):
                        for i in range(inner):
                            one_gemm(i)

                    fn = body
                    graph = None
                    if dev.startswith("cuda"):
                        s = torch.cuda.Stream()
                        s.wait_stream(torch.cuda.current_stream())
                        with torch.cuda.stream(s):
                            body()
                        torch.cuda.current_stream().wait_stream(s)
                        graph = torch.cuda.CUDAGraph()
                        with torch.cuda.graph(graph):
                            body()
                        fn = graph.replay
                    med, p10, p90, reps = timer.measure(fn, 2, 5, 20, 0.05)
                    t = med / inner
                    flops = 2.0 * M * N * K
                    byts = (M * K + N * K) * esz + M * N * 2
                    out.row(
                        {
                            **base,
                            "bench": "gemm",
                            "dtype": "bf16" if kind == "bf16" else "fp8_e4m3",
                            "m": M,
                            "n": N,
                            "k": K,
                            "bytes_moved": byts,
                            "flops": fmt(flops, 8),
                            "median_s": fmt(t),
                            "p10_s": fmt(p10 / inner),
                            "p90_s": fmt(p90 / inner),
                            "reps": reps,
                            "inner": inner,
                            "tflops": fmt(flops / t / 1e12, 5),
                            "gb_s": fmt(byts / t / 1e9, 5),
                            "notes": (
                                "F.linear(x[M,K], W[N,K]) bf16 out"
                                if kind == "bf16"
                                else "torch._scaled_mm e4m3 x e4m3, tensorwise scales "
                                "(1.0), bf16 out"
                            )
                            + (
                                f"; CUDA graph of {inner} GEMMs over {nbuf} weight copies"
                                if graph is not None
                                else "; eager (cpu)"
                            ),
                        }
                    )
                    del graph, As
                except Exception as e:  # noqa: BLE001
                    msg = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
                    out.row(
                        {
                            **base,
                            "bench": "gemm",
                            "dtype": "bf16" if kind == "bf16" else "fp8_e4m3",
                            "m": M,
                            "n": N,
                            "k": K,
                            "notes": f"failed: {type(e).__name__}: {msg}",
                        }
                    )
                    if (kind, msg) not in fp8_err_logged:
                        log(f"gemm {kind} M={M} {N}x{K} failed: {msg}")
                        fp8_err_logged.add((kind, msg))
                    if dev.startswith("cuda"):
                        torch.cuda.synchronize()
            log(f"gemm {kind} {N}x{K} done")
            del Ws
            if dev.startswith("cuda"):
                torch.cuda.empty_cache()
    # summary
    return


# ---------------------------------------------------------------- sweep plan
def plan(name: str, tiny: bool):
    """Ordered list of points: ('prefill', batch, isl) / ('decode', batch, ctx).
    Tier 1 first (most useful for fitting), then the rest of the grid."""
    if tiny:
        return [("prefill", 1, 16), ("prefill", 2, 32), ("decode", 1, 16), ("decode", 4, 64)]
    pre_all = [(1, s) for s in [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]] + [
        (4, 512),
        (8, 1024),
        (16, 1024),
        (32, 512),
    ]
    dec_b = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    dec_c = [256, 512, 1024, 2048, 4096, 8192]
    tier1 = [
        ("prefill", 1, 512),
        ("prefill", 1, 4096),
        ("prefill", 1, 64),
        ("prefill", 1, 16384),
        ("prefill", 8, 1024),
    ]
    tier1 += [("decode", b, c) for b in [1, 16, 64, 256] for c in [1024, 4096]]
    tier1 += [("prefill", 1, 2048), ("prefill", 1, 128), ("prefill", 1, 8192)]
    tier1 += [("decode", b, c) for b in [1, 8, 32, 128, 512] for c in [256, 2048, 8192]]
    rest = [("prefill", b, s) for b, s in pre_all] + [
        ("decode", b, c) for b in dec_b for c in dec_c
    ]
    out, seen = [], set()
    for p in tier1 + rest:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


# ---------------------------------------------------------------- per-model sweep
def run_model(
    name, args, dev, dtype, timer, attn, info, out: CsvOut, log, deadline, common, counter
):
    cfg = MODELS[name]
    t_start = time.time()
    model = Model(cfg, dev, dtype, seed=args.seed)
    W = model.weight_bytes()
    kvt = model.kv_bytes_per_token()
    points = plan(name, args.tiny)
    limit = args.kv_limit_gb * 1e9

    def kv_need(p):
        kind, b, n = p
        return b * (n + 1 if kind == "decode" else n) * kvt

    keep = [p for p in points if W + kv_need(p) <= limit]
    skipped = [p for p in points if p not in keep]
    pool_bytes = max(kv_need(p) for p in keep) if keep else 0
    model.ensure_rope(max(n + 2 for _, _, n in keep) if keep else 16)
    pool = KVPool(model, pool_bytes)
    timer.sync()
    log(
        f"== {name}: weights {W / 1e9:.2f} GB, KV {kvt / 1e3:.1f} kB/token, KV pool "
        f"{pool.cap / 1e9:.2f} GB, {len(keep)} points ({len(skipped)} skipped: weights+KV > "
        f"{args.kv_limit_gb:g} GB), init {time.time() - t_start:.1f}s"
    )

    # SDPA backend per phase, then a correctness check: a decode step after a prefill of S
    # tokens must give the last-token logits of a prefill over S+1 tokens
    B, S = 2, 63
    ids = torch.randint(0, cfg["vocab"], (B, S + 1), device=dev)
    be_p = attn.pick((name, "prefill"), lambda: model.prefill(ids[:, :S], pool.views(B, S + 1)))
    be_d = attn.pick((name, "decode"), lambda: model.decode(ids[:, S], pool.views(B, S + 1), S))
    with attn.ctx(be_p):
        ref = model.prefill(ids, None).float()
        caches = pool.views(B, S + 1)
        model.prefill(ids[:, :S], caches)
    with attn.ctx(be_d):
        got = model.decode(ids[:, S], caches, S).float()
    rel = ((got - ref).norm() / ref.norm()).item()
    ok = math.isfinite(rel) and rel < (0.05 if dtype != torch.float32 else 1e-4)
    log(
        f"   check decode-vs-prefill logits rel err {rel:.2e} ({'ok' if ok else 'MISMATCH'}); "
        f"SDPA backend prefill={be_p} decode={be_d}"
    )
    if not ok and args.strict:
        raise RuntimeError(f"{name}: decode/prefill mismatch rel={rel}")
    check_note = f"; decode-vs-prefill logits check rel err {rel:.1e}"
    del ids, ref, got, caches

    model_col = model_column(name)
    shape_note = ""
    if "reduced_from" in cfg:
        shape_note = (
            f"; shape = {cfg['reduced_from']} with {cfg['layers']} of "
            f"{cfg['full_layers']} layers (config.json in model column)"
        )
    if cfg["tied"]:
        shape_note += "; lm head tied to embedding as in the HF config (same GEMM as untied)"
    if cfg["qkv_bias"]:
        shape_note += "; QKV bias"
    if cfg["qk_norm"]:
        shape_note += "; per-head q/k RMSNorm (Qwen3)"

    for p in keep:
        if time.time() > deadline:
            log(f"   {name}: model time share used up; {len(keep) - keep.index(p)} points left")
            break
        kind, b, n = p
        try:
            if kind == "prefill":
                ids = torch.randint(0, cfg["vocab"], (b, n), device=dev)
                caches = pool.views(b, n)
                be = be_p

                def fn(ids=ids, caches=caches):
                    model.prefill(ids, caches)

                with attn.ctx(be):
                    med, p10, p90, reps = timer.measure(
                        fn, 2 if b * n <= 8192 else 1, 3, 20, 0.4 if b * n <= 8192 else 1.0
                    )
                graph_note = "eager forward (no CUDA graph)"
                row_isl, ctx_len, metric = n, n, "prefill_s"
                note_kv = (
                    f"KV written into preallocated [batch,n_kv,{n},d] cache per layer; "
                    "logits of last token per prompt"
                )
            else:
                ids = torch.randint(0, cfg["vocab"], (b,), device=dev)
                caches = pool.views(b, n + 1)
                be = be_d
                with attn.ctx(be):
                    if dev.startswith("cuda"):
                        s = torch.cuda.Stream()
                        s.wait_stream(torch.cuda.current_stream())
                        with torch.cuda.stream(s):
                            for _ in range(2):
                                model.decode(ids, caches, n)
                        torch.cuda.current_stream().wait_stream(s)
                        graph = torch.cuda.CUDAGraph()
                        with torch.cuda.graph(graph):
                            model.decode(ids, caches, n)
                        fn = graph.replay
                    else:
                        graph = None

                        def fn(ids=ids, caches=caches):
                            model.decode(ids, caches, n)

                    med, p10, p90, reps = timer.measure(fn, 3, 10, 60, 0.25)
                del graph
                graph_note = "CUDA-graph replay" if dev.startswith("cuda") else "eager (cpu)"
                row_isl, ctx_len, metric = "", n, "decode_step_s"
                note_kv = (
                    f"preallocated contiguous KV [batch,n_kv,{n + 1},d] per layer holding "
                    f"{n} tokens; new K/V written at index {n}; logits for all rows"
                )
            counter[0] += 1
            notes = (
                f"median of {reps} timed reps ({'CUDA events' if dev.startswith('cuda') else 'perf_counter'}) "
                f"after warm-up; p10 {fmt(p10, 4)} s; p90 {fmt(p90, 4)} s; {graph_note}; "
                f"SDPA backend {be}; {note_kv}; random weights{shape_note}{check_note}"
            )
            out.row(
                {
                    **common,
                    "id": f"{args.id_prefix}-{counter[0]:04d}",
                    "model": model_col,
                    "isl": row_isl,
                    "osl": "",
                    "batch": b,
                    "concurrency": "",
                    "request_rate": "",
                    "context_len": ctx_len,
                    "metric": metric,
                    "value": fmt(med),
                    "unit": "s",
                    "notes": notes,
                }
            )
            if kind == "prefill":
                log(
                    f"   prefill b={b:3d} isl={n:6d}: {med * 1e3:9.3f} ms  "
                    f"({b * n / med:9.0f} tok/s, reps {reps})"
                )
            else:
                log(
                    f"   decode  b={b:3d} ctx={n:6d}: {med * 1e3:9.3f} ms  "
                    f"({b / med:9.0f} tok/s, reps {reps})"
                )
        except torch.cuda.OutOfMemoryError as e:  # type: ignore[attr-defined]
            log(f"   {kind} b={b} n={n}: OOM ({str(e).splitlines()[0][:100]})")
            graph = None
            torch.cuda.empty_cache()
        except Exception as e:  # noqa: BLE001
            if args.strict:
                raise
            log(f"   {kind} b={b} n={n}: FAILED {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    for p in skipped:
        log(f"   skipped (weights+KV > {args.kv_limit_gb:g} GB): {p}")
    del pool, model
    if dev.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    log(f"== {name} done in {time.time() - t_start:.1f}s")


# ---------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out-dir", default="bench_out", help="where the CSVs go")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tiny", action="store_true", help="tiny shape and tiny micro sizes")
    ap.add_argument("--dry-run", action="store_true", help="= --device cpu --tiny")
    ap.add_argument(
        "--models", default=",".join(DEFAULT_MODELS), help=f"comma list from {sorted(MODELS)}"
    )
    ap.add_argument("--skip-micro", action="store_true")
    ap.add_argument("--micro-budget-s", type=float, default=60.0)
    ap.add_argument(
        "--budget-s",
        type=float,
        default=420.0,
        help="total wall-time budget; later points are skipped past it",
    )
    ap.add_argument("--kv-limit-gb", type=float, default=KV_LIMIT_BYTES / 1e9)
    ap.add_argument(
        "--sdpa-order",
        default=",".join(BACKEND_ORDER),
        help="SDPA backends to try, first that accepts the call is used",
    )
    ap.add_argument("--id-prefix", default="pth200")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--strict", action="store_true", help="abort on the first failure")
    ap.add_argument(
        "--write-configs",
        action="store_true",
        help="(re)write data/benchmarks/configs/*/config.json for reduced shapes",
    )
    args = ap.parse_args(argv)
    if args.dry_run:
        args.device, args.tiny = "cpu", True
    if args.tiny and args.models == ",".join(DEFAULT_MODELS):
        args.models = "tiny"
    t0 = time.time()
    log = Log(t0)
    command = shlex.join(
        ["python3"]
        + ([sys.argv[0]] if argv is None else ["bench/pytorch_ref.py"])
        + (sys.argv[1:] if argv is None else list(argv))
    )
    if args.write_configs:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for p in write_configs(repo):
            log("wrote", os.path.relpath(p, repo))
    dev = args.device
    if dev == "cuda":
        dev = "cuda:0"
    dtype = torch.bfloat16 if dev.startswith("cuda") else torch.float32
    os.makedirs(args.out_dir, exist_ok=True)
    info = env_info(dev)
    as_of = _dt.date.today().isoformat()
    log(
        f"torch {info['torch']} cuda {info['cuda']} cudnn {info['cudnn']} driver "
        f"{info['driver']} gpu {info['gpu']}; dtype {dtype}; command: {command}"
    )
    if dev.startswith("cuda"):
        log("gpu state (sm clk, mem clk, power, temp, mem used):", gpu_state())
        torch.backends.cuda.matmul.allow_tf32 = False
    timer = Timer(dev)
    torch.manual_seed(args.seed)
    deadline = t0 + args.budget_s

    prec = "bf16" if dtype == torch.bfloat16 else "fp32"
    common = {
        "source": SOURCE,
        "source_detail": (
            f"command: {command}; torch {info['torch']}; CUDA {info['cuda']}; "
            f"cuDNN {info['cudnn']}; driver {info['driver']}; "
            f"GPU {info['gpu']} (torch.cuda.get_device_name)"
        ),
        "as_of": as_of,
        "hardware": HARDWARE if dev.startswith("cuda") else "cpu",
        "n_gpus": 1,
        "tp": 1,
        "pp": 1,
        "precision": prec,
        "kv_precision": prec,
        "framework": "pytorch",
        "framework_version": f"{info['torch']} | eager prefill, CUDA-graph decode, SDPA",
        "mode": "static_batch",
    }
    steps = CsvOut(os.path.join(args.out_dir, "pytorch_h200.csv"), SCHEMA)
    micro = CsvOut(os.path.join(args.out_dir, "pytorch_h200_micro.csv"), MICRO_SCHEMA)

    if not args.skip_micro:
        log("== micro-benchmarks")
        with torch.inference_mode():
            run_micro(
                args,
                dev,
                timer,
                info,
                micro,
                log,
                min(deadline, time.time() + args.micro_budget_s),
                command,
                as_of,
            )
        if dev.startswith("cuda"):
            log("gpu state after micro:", gpu_state())

    attn = Attn(dev, [b.strip() for b in args.sdpa_order.split(",") if b.strip()])
    counter = [0]
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    for i, name in enumerate(names):
        left = names[i:]
        now = time.time()
        if now > deadline:
            log(f"time budget reached: models not run: {left}")
            break
        share = BUDGET_WEIGHT.get(name, 1.0) / sum(BUDGET_WEIGHT.get(m, 1.0) for m in left)
        m_deadline = now + (deadline - now) * share
        try:
            with torch.inference_mode():
                run_model(
                    name,
                    args,
                    dev,
                    dtype,
                    timer,
                    attn,
                    info,
                    steps,
                    log,
                    m_deadline,
                    common,
                    counter,
                )
        except Exception as e:  # noqa: BLE001
            if args.strict:
                raise
            import traceback

            traceback.print_exc()
            log(f"== {name} FAILED: {type(e).__name__}: {e}")
            if dev.startswith("cuda"):
                torch.cuda.empty_cache()
    if dev.startswith("cuda"):
        log("gpu state at end:", gpu_state())
    log(
        f"done: {steps.n} step rows, {micro.n} micro rows in {args.out_dir}; "
        f"elapsed {time.time() - t0:.1f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
