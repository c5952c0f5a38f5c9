"""Hot scalar forms of the step model (scikit-learn's ``isotonic`` / ``_isotonic`` split).

The readable, vectorized definitions are :meth:`planner.engine.step.StepModel.step` and
:func:`planner.engine.phases._window_sums`; the functions here compute the same numbers for
one step with plain floats, because the simulator's event loop, the analytic steady state
and the calibration fit call them millions of times and numpy's per-call overhead would
dominate. ``tests/test_engine_step.py::test_scalar_path_equals_vector_path`` checks that
both forms agree (sliding windows, eager dispatch, pp > 1). Change both or neither.

:func:`step_time_scalar` is the one scalar step-time formula: ``StepModel.step_time`` calls
it from Python and the compiled event loop (:mod:`planner.serving._kernel`) calls its numba
twin, so both give bit-identical times. Keep it numba-compilable (plain float arithmetic,
no attribute access); the loop's cache is invalidated when this file changes (see
:func:`planner.serving._kernel.kernel`).
"""

from __future__ import annotations

import math

from planner.engine.routing import GH_W, GH_X

GH_N = len(GH_X)  # Gauss-Hermite points of the log-normal expert popularity

#: exponent of the smooth maximum between GPU time and eager CPU dispatch time: kernels
#: overlap with dispatch, but not perfectly near the crossover (a coefficient of
#: :func:`step_time_scalar`, so that compiled code calls pow() exactly as the interpreter)
EAGER_K = 4.0


def window_pairs(pos: int, n: int, w: float) -> float:
    """Query-key pairs of a chunk of n tokens after pos cached ones in a layer of window w."""
    i_cap = w - pos
    if i_cap < 0:
        i_cap = 0
    elif i_cap > n:
        i_cap = n
    return i_cap * pos + i_cap * (i_cap + 1) / 2 + (n - i_cap) * w


def distinct_experts(n_exp, q_exp, skew_a, skew_b, T):
    """Expected distinct routed experts [-] that ``T`` tokens read in one layer
    (:mod:`planner.engine.routing`), of ``n_exp`` experts: ``skew_a > 0`` Gamma popularity,
    ``n_exp (1 - (1 + skew_a T) ** skew_b)``; ``skew_a < 0`` log-normal popularity
    (``routing.lognormal_distinct_experts``: s2 = -skew_a, lambda = skew_b, Gauss-Hermite
    over :data:`GH_N` points); else uniform routing, ``n_exp (1 - q_exp ** T)``. Zero for a
    dense model (``n_exp`` 0). The step and its draft passes call it (compiled into the
    loop by :func:`planner.serving._kernel.kernel` too)."""
    if n_exp > 0.0:
        if skew_a > 0.0:
            return n_exp * (1.0 - math.exp(skew_b * math.log1p(skew_a * T)))
        if skew_a < 0.0:
            sig = math.sqrt(-2.0 * skew_a)
            miss = 0.0
            for i in range(GH_N):
                miss += GH_W[i] * math.exp(-skew_b * T * math.exp(sig * GH_X[i] + 0.5 * skew_a))
            return n_exp * (1.0 - miss)
        return n_exp * (1.0 - q_exp**T)
    return 0.0


def step_time_scalar(
    c, T, num_seqs, num_logits, kv_full, pairs_full, kv_sw, pairs_sw, pairs_prefix
):
    """Step time [s] from the coefficient tuple ``c`` of ``StepModel._coeffs`` (all
    arguments floats): the scalar form of :meth:`StepModel.step` ``(...).time_s``.
    ``pairs_prefix`` is the part of ``pairs_full`` between prompt chunks and their cached
    context.

    Every operation happens in the order of the formula in :meth:`StepModel.step`; products
    that do not depend on the step's counts are precomputed in ``c``.
    """
    (
        n_exp,
        q_exp,
        dense_w,
        exp_b,
        lm_b,
        bw_gemm,
        act_b,
        ceff,
        chalf,
        mm_f,
        lm_f,
        peak,
        kvb,
        lf,
        lsw,
        lall,
        bw_kv,
        attn_f,
        peak_attn,
        peak_prefix,
        tp_gt1,
        ring,
        comm_b,
        link,
        comm_lat2,
        eager,
        eager_k,
        eager_e_k,
        over0,
        seq_o,
        pp,
        mm_e,
        k_ep,
        skew,
        z_ep,
        spec_k,
        d_w,
        d_exp,
        d_act,
        d_mm,
        d_kvb,
        d_comm,
        d_lat,
        d_over,
        spec_g,
        attn_fd,
        dp,
        adp_u,
        skew_a,
        skew_b,
        peak_mla,
        kv_extra,
    ) = c[:52]
    send = 0.0  # pipelined PP (planner.engine.pipeline): the stages work on c[130] micro-batches
    if c[130] > 1.0:
        mb = num_seqs if num_seqs > 1.0 else 1.0
        if mb > c[130]:
            mb = c[130]
        T = T / mb
        num_seqs = num_seqs / mb
        num_logits = num_logits / mb
        kv_full = kv_full / mb
        pairs_full = pairs_full / mb
        kv_sw = kv_sw / mb
        pairs_sw = pairs_sw / mb
        pairs_prefix = pairs_prefix / mb
        if T > 0.0:
            send = (pp - 1.0) * (c[131] * (T + spec_k * num_logits) + c[132])
    n_graph = c[52]  # decode steps padded to a captured CUDA-graph batch (adp.graph_padded)
    if n_graph > 0.0 and T > 0.0 and num_seqs == T and num_logits == T:
        b = math.ceil(num_seqs / dp)  # the busiest rank's sequences (even spread)
        for j in range(int(n_graph)):
            g = c[53 + j]
            if g >= b:  # the smallest captured size holding it: dummies of one token fill it
                d = g * dp - num_seqs
                if d > 0.0:
                    T += d
                    num_seqs += d
                    num_logits += d
                    kv_full += d
                    pairs_full += d
                    kv_sw += d
                    pairs_sw += d
                break
    T0 = T
    n_dec = num_logits
    # the busiest attention data-parallel rank's prompt work (planner.engine.adp.busiest_rank_extra)
    dT = 0.0
    dX = 0.0
    if dp > 1.0 and adp_u > 0.0:
        P = T - num_seqs
        if P > 0.0:
            X = pairs_full - kv_full
            if X < 0.0:
                X = 0.0
            hot = 2.0 * X / P
            if hot < P / dp:
                hot = P / dp
            if hot > P:
                hot = P
            g = adp_u * (dp * hot / P - 1.0)
            dT = g * P
            dX = g * X
    if spec_k > 0.0:  # speculative decoding: K + 1 verify positions per decoding sequence
        T = T + spec_k * n_dec
        num_logits = n_dec + spec_k * n_dec
        pairs_full = pairs_full + spec_k * kv_full
        pairs_sw = pairs_sw + spec_k * kv_sw
    ex = distinct_experts(n_exp, q_exp, skew_a, skew_b, T)
    w = dense_w + ex * exp_b + lm_b
    Ta = T + dT
    t_gm = (w + act_b * Ta) / bw_gemm
    if T > 0:
        if chalf != 0.0:
            eff = ceff * Ta / (Ta + chalf)
        else:
            eff = ceff
        mm = mm_f * Ta + lm_f * num_logits
        t_gc = mm / (peak * eff)
        if mm_e != 0.0:  # expert parallel: the busiest GPU's routed tokens (skew + multinomial)
            mean = T * k_ep
            sk = skew
            P = T0 - num_seqs  # prompt tokens: their own skew (c[103]), weighted by count
            if P > 0.0:
                sk = skew + (c[103] - skew) * (P / T)
            hd = (mean * (1.0 + sk) + z_ep * mean**0.5) * dp
            if hd > 0.0:  # its expert GEMMs fill the tensor cores by their own rows
                if chalf != 0.0:
                    eff_e = ceff * hd / (hd + chalf)
                else:
                    eff_e = ceff
                t_gc += mm_e * (hd / dp) / (peak * eff_e)
    else:
        t_gc = 0.0
    t_am = kvb * (lf * kv_full + lsw * kv_sw + lall * Ta) / bw_kv
    if attn_fd != 0.0:  # MLA: decode queries run absorbed (StepModel.decode_pairs)
        a_pairs = kv_full * (1.0 + spec_k)
        cap = pairs_full - pairs_prefix
        if cap < 0.0:
            cap = 0.0
        if a_pairs < 0.0:
            a_pairs = 0.0
        if a_pairs > cap:
            a_pairs = cap
        if kv_extra != 0.0:  # the verify kernel re-reads each decoder's context (spec_kv)
            t_am = (
                kvb * (lf * kv_full + lsw * kv_sw + lall * Ta)
                + kvb * lf * kv_extra * (a_pairs / (1.0 + spec_k))
            ) / bw_kv
        # the absorbed decode FLOPs at their own kernel's rate (planner.engine.mla)
        t_ac = (
            attn_f * (lf * (pairs_full + dX - pairs_prefix - a_pairs) + lsw * pairs_sw) / peak_attn
            + attn_fd * lf * a_pairs / peak_mla
        )
    else:
        t_ac = attn_f * (lf * (pairs_full + dX - pairs_prefix) + lsw * pairs_sw) / peak_attn
    if pairs_prefix > 0.0:
        t_ac += attn_f * lf * pairs_prefix / peak_prefix
    n_w = c[104]  # a narrow shard's GEMM-time factor, linear in log tokens (gemm_width)
    fw = 1.0
    if n_w > 0.0:
        nw = int(n_w)
        x = math.log(Ta if Ta > 1e-9 else 1e-9)
        if x <= c[105]:
            fw = c[117]
        elif x >= c[104 + nw]:
            fw = c[116 + nw]
        else:
            fw = 1.0
            for j in range(1, nw):
                if x <= c[105 + j]:
                    f0 = c[116 + j]
                    fw = f0 + (c[117 + j] - f0) * ((x - c[104 + j]) / (c[105 + j] - c[104 + j]))
                    break
        if c[129] != 0.0:  # on the compute term only
            t_gc = t_gc * fw
            fw = 1.0
    t_g = (t_gm if t_gm > t_gc else t_gc) * fw
    n_mk = c[70]  # the routed experts no faster than their published kernel (moe_floor)
    if n_mk > 0.0 and T > 0.0:
        m = int(n_mk)
        if c[71] >= T:
            lt = c[87]
        elif c[70 + m] <= T:
            lt = c[86 + m]
        else:
            lt = 0.0
            for j in range(1, m):
                if c[71 + j] >= T:
                    t0 = c[70 + j]
                    s0 = c[86 + j]
                    lt = s0 + (c[87 + j] - s0) * (T - t0) / (c[71 + j] - t0)
                    break
        t_f = (dense_w + lm_b + act_b * Ta) / bw_gemm + c[69] * lt
        if t_f > t_g:
            t_g = t_f
    t = t_g + (t_am if t_am > t_ac else t_ac)
    if tp_gt1 != 0.0:
        t += ring * comm_b * T / link
        t += comm_lat2
    if eager != 0.0 and (num_seqs < T0 or (spec_g > 0.0 and num_seqs > spec_g)):
        # a prompt chunk, or a verify step beyond the CUDA-graph batch limit: eager
        t = (t**eager_k + eager_e_k) ** (1.0 / eager_k)
    t += over0 + seq_o * num_seqs
    t = t * pp
    if spec_k > 0.0:  # the draft passes: one over the verify width T, K - 1 over the decoders
        for j in range(2):
            n = T if j == 0 else n_dec
            reps = 1.0 if j == 0 else spec_k - 1.0
            if reps <= 0.0 or n <= 0.0:
                continue
            ex = distinct_experts(n_exp, q_exp, skew_a, skew_b, n)
            tg = (d_w + ex * d_exp + d_act * n) / bw_gemm
            if chalf != 0.0:
                eff = ceff * n / (n + chalf)
            else:
                eff = ceff
            tc = d_mm * n / (peak * eff)
            td = (tg if tg > tc else tc) + d_kvb * (kv_full + n) / bw_kv
            if tp_gt1 != 0.0:
                td += ring * d_comm * n / link
                td += d_lat
            td += d_over
            t += reps * td
    return t + send


def straggler_time_scalar(c, n_decode, max_ctx, sum_ctx):
    """Extra attention time [s] of a decode batch of mixed lengths (scalar form of
    :meth:`planner.engine.step.StepModel.straggler_time`): the longest sequence's excess over
    the mean, read by one attention program per KV head (split when the batch has few work
    items). ``c`` = ``StepModel._straggler_coeffs`` (seconds per excess token for one split,
    split work items per sequence); zero when the kernel balances the work."""
    per_tok, items = c
    if per_tok == 0.0 or n_decode <= 0.0:
        return 0.0
    excess = max_ctx - sum_ctx / n_decode
    if excess <= 0.0:
        return 0.0
    splits = items / n_decode
    if splits < 1.0:
        splits = 1.0
    return per_tok * excess / splits
