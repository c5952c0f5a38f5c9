"""Hot scalar forms of the step model (scikit-learn's ``isotonic`` / ``_isotonic`` split).

The readable, vectorized definitions are :meth:`planner.engine.step.StepModel.step` and
:func:`planner.engine.phases._window_sums`; the functions here compute the same numbers for
one step with plain floats, because the simulator's event loop, the analytic steady state
and the calibration fit call them millions of times and numpy's per-call overhead would
dominate. ``tests/test_engine_step.py::test_scalar_path_equals_vector_path`` checks that
both forms agree (sliding windows, eager dispatch, pp > 1). Change both or neither.
"""

from __future__ import annotations

#: exponent of the smooth maximum between GPU time and eager CPU dispatch time: kernels
#: overlap with dispatch, but not perfectly near the crossover
EAGER_K = 4.0


def window_pairs(pos: int, n: int, w: float) -> float:
    """Query-key pairs of a chunk of n tokens after pos cached ones in a layer of window w."""
    i_cap = w - pos
    if i_cap < 0:
        i_cap = 0
    elif i_cap > n:
        i_cap = n
    return i_cap * pos + i_cap * (i_cap + 1) / 2 + (n - i_cap) * w


def step_time(
    self,
    new_tokens: float,
    num_seqs: float,
    num_logits: float,
    kv_full: float,
    pairs_full: float,
    kv_sw: float = 0.0,
    pairs_sw: float = 0.0,
) -> float:
    """Step time [s] of ``StepModel`` ``self`` with plain floats (no numpy): the scalar form
    of :meth:`StepModel.step` ``(...).time_s``, same arguments."""
    p = self.params
    T = float(new_tokens)
    if self.num_experts:
        ex = self.num_experts * (1.0 - (1.0 - self.top_k / self.num_experts) ** T)
    else:
        ex = 0.0
    w = self.dense_weight_bytes + ex * self.expert_bytes + self.lm_head_bytes
    bw = self.bw_bytes_s * p.mem_eff
    t_gm = (w + self.act_bytes_per_token * T) / bw
    if T > 0:
        eff = (
            p.compute_eff * T / (T + p.compute_half_tokens)
            if p.compute_half_tokens
            else p.compute_eff
        )
        t_gc = (self.matmul_flops_per_token * T + self.lm_head_flops_per_logit * num_logits) / (
            self.peak_flops * eff
        )
    else:
        t_gc = 0.0
    kvb = self.kv_bytes_per_token_layer
    t_am = (
        kvb
        * (
            self.layers_full * kv_full
            + self.layers_sw * kv_sw
            + (self.layers_full + self.layers_sw) * T
        )
        / (self.bw_bytes_s * p.kv_mem_eff)
    )
    t_ac = (
        self.attn_flops_per_pair_layer
        * (self.layers_full * pairs_full + self.layers_sw * pairs_sw)
        / (self.peak_flops * p.attn_eff)
    )
    t = (t_gm if t_gm > t_gc else t_gc) + (t_am if t_am > t_ac else t_ac)
    if self.tp > 1:
        t += (
            (2 * (self.tp - 1) / self.tp)
            * self.comm_bytes_per_token
            * T
            / (self.link_bytes_s * p.comm_eff)
        )
        t += 2 * self.layers * p.comm_latency_s
    if p.eager_layer_s and num_seqs < T:
        e = p.eager_layer_s * self.layers
        t = (t**EAGER_K + e**EAGER_K) ** (1.0 / EAGER_K)
    t += p.step_overhead_s + p.layer_overhead_s * self.layers + p.seq_overhead_s * num_seqs
    return t * self.pp
