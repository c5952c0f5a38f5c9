"""Triton kernels of the reference engine (bench/ref_engine.py).

* ``add_rmsnorm``   residual add + RMSNorm in one pass, bf16 or fp8 (E4M3, static scale) output
* ``qkv_rope``      per-head q/k RMSNorm (Qwen3), rotary embedding, q written contiguous, k/v
                    written into the paged cache (bf16 or fp8 with a per-tensor scale), and
                    optionally k/v contiguous for SDPA prefill
* ``silu_mul``      SiLU(gate) * up, bf16 or fp8 output
* ``paged_attn``    GQA-native attention over a paged KV cache ([blocks, n_kv, block_size, d],
                    vLLM-like block table). Each program takes one KV head and a tile of
                    (query token x query head of that group) rows, so K/V are read once per group
                    and never expanded; causal mask by absolute position, so the same kernel runs
                    decode (one token per sequence), chunked prefill over a cached prefix, and
                    split-KV (flash-decoding) with a separate combine kernel.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

FP8_MAX = 448.0
INTERP = os.environ.get("TRITON_INTERPRET") == "1"
# paged-attention launch parameters (REF_ATTN=block_n,warps,stages overrides, for tuning)
TUNE = dict(
    zip(
        ("block_n", "warps", "stages"),
        (int(v) for v in os.environ.get("REF_ATTN", "128,4,3").split(",")),
        strict=False,
    )
)


@triton.jit
def _add_rmsnorm_kernel(
    X,
    R,
    W,
    OUT,
    N,
    eps,
    out_inv_scale,
    HAS_RES: tl.constexpr,
    OUT_FP8: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + row * N + offs, mask=m, other=0.0).to(tl.float32)
    if HAS_RES:
        x += tl.load(R + row * N + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(R + row * N + offs, x.to(R.dtype.element_ty), mask=m)
    var = tl.sum(x * x, axis=0) / N
    w = tl.load(W + offs, mask=m, other=0.0).to(tl.float32)
    y = x * tl.rsqrt(var + eps) * w
    if OUT_FP8:
        y = tl.clamp(y * out_inv_scale, -448.0, 448.0)
    tl.store(OUT + row * N + offs, y.to(OUT.dtype.element_ty), mask=m)


def add_rmsnorm(x, res, w, eps, out, has_res: bool, out_inv_scale: float = 1.0):
    """res <- x (+ res); out <- rmsnorm(res) * w. x, res, out: [T, N]."""
    T, N = x.shape
    block = triton.next_power_of_2(N)
    _add_rmsnorm_kernel[(T,)](
        x,
        res,
        w,
        out,
        N,
        eps,
        out_inv_scale,
        HAS_RES=has_res,
        OUT_FP8=out.dtype == torch.float8_e4m3fn,
        BLOCK=block,
        num_warps=8 if block >= 4096 else 4,
    )
    return out


@triton.jit
def _silu_mul_kernel(GU, OUT, I, out_inv_scale, OUT_FP8: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = offs < I
    g = tl.load(GU + row * 2 * I + offs, mask=m, other=0.0).to(tl.float32)
    u = tl.load(GU + row * 2 * I + I + offs, mask=m, other=0.0).to(tl.float32)
    y = g / (1.0 + tl.exp(-g)) * u
    if OUT_FP8:
        y = tl.clamp(y * out_inv_scale, -448.0, 448.0)
    tl.store(OUT + row * I + offs, y.to(OUT.dtype.element_ty), mask=m)


def silu_mul(gu, out, out_inv_scale: float = 1.0):
    T, I2 = gu.shape
    I = I2 // 2
    block = 1024
    _silu_mul_kernel[(T, triton.cdiv(I, block))](
        gu,
        out,
        I,
        out_inv_scale,
        OUT_FP8=out.dtype == torch.float8_e4m3fn,
        BLOCK=block,
        num_warps=4,
    )
    return out


@triton.jit
def _qkv_rope_kernel(
    QKV,
    QOUT,
    KOUT,
    VOUT,
    KC,
    VC,
    QNW,
    KNW,
    COS,
    SIN,
    POS,
    SLOT,
    k_inv_scale,
    v_inv_scale,
    eps,
    HQ: tl.constexpr,
    HKV: tl.constexpr,
    D: tl.constexpr,
    HALF: tl.constexpr,
    BS: tl.constexpr,
    QK_NORM: tl.constexpr,
    WRITE_KV: tl.constexpr,
    KV_FP8: tl.constexpr,
):
    t = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    d1 = tl.arange(0, HALF)
    base = QKV + t * (HQ + 2 * HKV) * D + h * D
    x1 = tl.load(base + d1).to(tl.float32)
    x2 = tl.load(base + HALF + d1).to(tl.float32)
    slot = tl.load(SLOT + t).to(tl.int64)
    blk_base = (slot // BS) * (HKV * BS * D) + (slot % BS) * D  # head-major block layout
    if h < HQ + HKV:
        if QK_NORM:
            if h < HQ:
                w1 = tl.load(QNW + d1).to(tl.float32)
                w2 = tl.load(QNW + HALF + d1).to(tl.float32)
            else:
                w1 = tl.load(KNW + d1).to(tl.float32)
                w2 = tl.load(KNW + HALF + d1).to(tl.float32)
            var = (tl.sum(x1 * x1, axis=0) + tl.sum(x2 * x2, axis=0)) / D
            r = tl.rsqrt(var + eps)
            x1 = x1 * r * w1
            x2 = x2 * r * w2
        pos = tl.load(POS + t).to(tl.int64)
        c = tl.load(COS + pos * HALF + d1)
        s = tl.load(SIN + pos * HALF + d1)
        y1 = x1 * c - x2 * s
        y2 = x2 * c + x1 * s
        if h < HQ:
            qo = QOUT + t * HQ * D + h * D
            tl.store(qo + d1, y1.to(QOUT.dtype.element_ty))
            tl.store(qo + HALF + d1, y2.to(QOUT.dtype.element_ty))
        else:
            kh = h - HQ
            kc = KC + blk_base + kh * (BS * D)
            if KV_FP8:
                tl.store(kc + d1, tl.clamp(y1 * k_inv_scale, -448.0, 448.0).to(KC.dtype.element_ty))
                tl.store(
                    kc + HALF + d1,
                    tl.clamp(y2 * k_inv_scale, -448.0, 448.0).to(KC.dtype.element_ty),
                )
            else:
                tl.store(kc + d1, y1.to(KC.dtype.element_ty))
                tl.store(kc + HALF + d1, y2.to(KC.dtype.element_ty))
            if WRITE_KV:
                ko = KOUT + t * HKV * D + kh * D
                tl.store(ko + d1, y1.to(KOUT.dtype.element_ty))
                tl.store(ko + HALF + d1, y2.to(KOUT.dtype.element_ty))
    else:
        vh = h - HQ - HKV
        vc = VC + blk_base + vh * (BS * D)
        if KV_FP8:
            tl.store(vc + d1, tl.clamp(x1 * v_inv_scale, -448.0, 448.0).to(VC.dtype.element_ty))
            tl.store(
                vc + HALF + d1, tl.clamp(x2 * v_inv_scale, -448.0, 448.0).to(VC.dtype.element_ty)
            )
        else:
            tl.store(vc + d1, x1.to(VC.dtype.element_ty))
            tl.store(vc + HALF + d1, x2.to(VC.dtype.element_ty))
        if WRITE_KV:
            vo = VOUT + t * HKV * D + vh * D
            tl.store(vo + d1, x1.to(VOUT.dtype.element_ty))
            tl.store(vo + HALF + d1, x2.to(VOUT.dtype.element_ty))


def qkv_rope(
    qkv,
    q_out,
    k_out,
    v_out,
    kc,
    vc,
    qnw,
    knw,
    cos,
    sin,
    pos,
    slot,
    hq,
    hkv,
    d,
    eps,
    k_inv_scale=1.0,
    v_inv_scale=1.0,
):
    T = qkv.shape[0]
    write_kv = k_out is not None
    _qkv_rope_kernel[(T, hq + 2 * hkv)](
        qkv,
        q_out,
        k_out if write_kv else q_out,
        v_out if write_kv else q_out,
        kc,
        vc,
        qnw if qnw is not None else cos,
        knw if knw is not None else cos,
        cos,
        sin,
        pos,
        slot,
        k_inv_scale,
        v_inv_scale,
        eps,
        HQ=hq,
        HKV=hkv,
        D=d,
        HALF=d // 2,
        BS=kc.shape[2],
        QK_NORM=qnw is not None,
        WRITE_KV=write_kv,
        KV_FP8=kc.dtype == torch.float8_e4m3fn,
        num_warps=1,
    )


@triton.jit
def _paged_attn_kernel(
    Q,
    KC,
    VC,
    O,
    OP,
    LP,
    BT,
    CTX,
    POS,
    TSEQ,
    TT0,
    TN,
    sm_scale_log2,
    k_scale,
    v_scale,
    stride_bt,
    n_tok,
    num_splits,
    HQ: tl.constexpr,
    HKV: tl.constexpr,
    G: tl.constexpr,
    GP: tl.constexpr,
    TPT: tl.constexpr,
    D: tl.constexpr,
    BS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SPLIT: tl.constexpr,
    KV_FP8: tl.constexpr,
    INTERP: tl.constexpr,
):
    tile = tl.program_id(0)
    hk = tl.program_id(1)
    sp = tl.program_id(2)
    seq = tl.load(TSEQ + tile).to(tl.int64)
    t0 = tl.load(TT0 + tile)
    n = tl.load(TN + tile)
    BLOCK_M: tl.constexpr = TPT * GP
    r = tl.arange(0, BLOCK_M)
    tl_tok = r // GP
    g = r % GP
    row_ok = (tl_tok < n) & (g < G)
    tok = (t0 + tl_tok).to(tl.int64)
    head = hk * G + g
    d = tl.arange(0, D)
    q = tl.load(
        Q + tok[:, None] * HQ * D + head[:, None] * D + d[None, :], mask=row_ok[:, None], other=0.0
    )
    if INTERP:  # the CPU interpreter has no bf16 dot
        q = q.to(tl.float32)
    elif KV_FP8:  # e4m3 -> fp16 is one cvt on Hopper; the dots run in fp16
        q = q.to(tl.float16)
    qpos = tl.load(POS + tok, mask=row_ok, other=0)
    ctx = tl.load(CTX + seq)
    kv_end = tl.minimum(ctx, tl.max(tl.where(row_ok, qpos, 0), axis=0) + 1)
    chunk = tl.cdiv(tl.cdiv(kv_end, num_splits), BLOCK_N) * BLOCK_N
    start = sp * chunk
    end = tl.minimum(start + chunk, kv_end)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    qk_scale = sm_scale_log2 * k_scale
    bt_row = BT + seq * stride_bt
    for s in range(start, end, BLOCK_N):
        kn = s + tl.arange(0, BLOCK_N)
        kmask = kn < end
        blk = tl.load(bt_row + kn // BS, mask=kmask, other=0).to(tl.int64)
        off = blk * (BS * HKV * D) + hk * (BS * D) + (kn % BS) * D
        k = tl.load(KC + off[:, None] + d[None, :], mask=kmask[:, None], other=0.0)
        v = tl.load(VC + off[:, None] + d[None, :], mask=kmask[:, None], other=0.0)
        if KV_FP8:
            k = k.to(tl.float16)
            v = v.to(tl.float16)
        if INTERP:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        vis = (kn[None, :] <= qpos[:, None]) & kmask[None, :]
        qk = tl.where(vis, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(qk - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc * (v_scale / l_safe)[:, None]
    if SPLIT:
        lse = tl.where(l_i == 0.0, float("-inf"), m_i + tl.log2(l_safe))
        base = (sp * n_tok + tok) * HQ + head
        tl.store(OP + base[:, None] * D + d[None, :], out, mask=row_ok[:, None])
        tl.store(LP + base, lse, mask=row_ok)
    else:
        tl.store(
            O + tok[:, None] * HQ * D + head[:, None] * D + d[None, :],
            out.to(O.dtype.element_ty),
            mask=row_ok[:, None],
        )


@triton.jit
def _combine_kernel(
    OP, LP, O, n_tok, num_splits, HQ: tl.constexpr, D: tl.constexpr, SP: tl.constexpr
):
    t = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    s = tl.arange(0, SP)
    sm = s < num_splits
    lse = tl.load(LP + (s * n_tok + t) * HQ + h, mask=sm, other=float("-inf"))
    mx = tl.max(lse, axis=0)
    w = tl.where(sm, tl.exp2(lse - mx), 0.0)
    d = tl.arange(0, D)
    o = tl.load(
        OP + ((s * n_tok + t) * HQ + h)[:, None] * D + d[None, :], mask=sm[:, None], other=0.0
    )
    out = tl.sum(o * w[:, None], axis=0) / tl.sum(w, axis=0)
    tl.store(O + (t * HQ + h) * D + d, out.to(O.dtype.element_ty))


class AttnPlan:
    """Tile metadata for one paged_attn launch (device tensors; reusable in a CUDA graph)."""

    def __init__(self, tseq, tt0, tn, tpt, num_splits, n_tok):
        self.tseq, self.tt0, self.tn = tseq, tt0, tn
        self.tpt, self.num_splits, self.n_tok = tpt, num_splits, n_tok


#: Set by bench/serve_ref.py around its eager iterations. Triton compiles a new binary for
#: every new class (== 1, divisible by 16) of an int argument; eager serving iterations vary the
#: token count, the block-table stride and the split count from one iteration to the next, so the
#: first iteration of each new class stalled up to 1.5 s while it compiled (seen in the serving
#: run of 2026-12-01: TTFT p99 1.5 s at 5 req/s). The unspecialised twins below compile once per
#: constexpr set, which a warm-up covers (serve_ref.compile_variants). Step rows and CUDA graphs
#: keep the specialised kernels.
NO_SPECIALIZE = False
_UNSPEC = ["stride_bt", "n_tok", "num_splits"]
_paged_attn_kernel_ns = triton.jit(do_not_specialize=_UNSPEC)(_paged_attn_kernel.fn)
_combine_kernel_ns = triton.jit(do_not_specialize=["n_tok", "num_splits"])(_combine_kernel.fn)


def gqa_pad(g: int) -> int:
    return triton.next_power_of_2(g)


def paged_attn(
    q,
    kc,
    vc,
    out,
    bt,
    ctx,
    pos,
    plan: AttnPlan,
    hq,
    hkv,
    d,
    block_size,
    k_scale=1.0,
    v_scale=1.0,
    ws=None,
):
    """q [T, hq, d]; kc/vc [blocks, hkv, block_size, d] (head-major blocks); out [T, hq, d];
    bt [S, max_blocks] int32; ctx [S] KV length per sequence (new tokens included);
    pos [T] absolute position of each query token. ws: (o_part, lse_part) scratch for splits."""
    G = hq // hkv
    GP = gqa_pad(G)
    n_tiles = plan.tseq.shape[0]
    split = plan.num_splits > 1
    sm_scale_log2 = (d**-0.5) * 1.4426950408889634
    bm = plan.tpt * GP
    block_n = TUNE["block_n"]
    if split:
        op, lp = ws
    else:
        op = lp = out
    attn_k = _paged_attn_kernel_ns if NO_SPECIALIZE else _paged_attn_kernel
    attn_k[(n_tiles, hkv, plan.num_splits)](
        q,
        kc,
        vc,
        out,
        op,
        lp,
        bt,
        ctx,
        pos,
        plan.tseq,
        plan.tt0,
        plan.tn,
        sm_scale_log2,
        k_scale,
        v_scale,
        bt.stride(0),
        plan.n_tok,
        plan.num_splits,
        HQ=hq,
        HKV=hkv,
        G=G,
        GP=GP,
        TPT=plan.tpt,
        D=d,
        BS=block_size,
        BLOCK_N=block_n,
        SPLIT=split,
        KV_FP8=kc.dtype == torch.float8_e4m3fn,
        INTERP=INTERP,
        num_warps=TUNE["warps"] if bm <= 64 else 8,
        num_stages=TUNE["stages"],
    )
    if split:
        # split plans are decode plans: tile i is token i, so the first n_tiles tokens combine
        comb_k = _combine_kernel_ns if NO_SPECIALIZE else _combine_kernel
        comb_k[(n_tiles, hq)](
            op,
            lp,
            out,
            plan.n_tok,
            plan.num_splits,
            HQ=hq,
            D=d,
            SP=triton.next_power_of_2(plan.num_splits),
            num_warps=4,
        )
    return out
