"""Second stage of the calibration: the expert-parallel terms, fitted on the rows of
expert-parallel / attention data-parallel layouts (issue 29).

:func:`planner.calibration.fit.fit_profile` fits every node on the plain TP x PP rows first
(the fit of before: those rows and their parameters do not change), then calls
:func:`fit_ep_fields` with the other rows. Only :data:`EP_FIELDS` move here
(``EfficiencyParams.adp_prompt_imbalance``, which enters the step time of an attention
data-parallel layout only), so no plain prediction changes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from planner.catalog.catalog import load_catalog
from planner.catalog.profile import Profile, resolve_params
from planner.errors import PlannerError

#: the attention data-parallel prompt imbalance (``EfficiencyParams.adp_prompt_imbalance``,
#: 0: prompt chunks balanced over the ranks, 1: each stays on its own rank and every rank
#: waits for it), fitted by :func:`fit_ep_fields` on the expert-parallel / attention-DP rows
#: only; a row whose deployment balances prompt work (``Layout.attention_dp_balance``, read
#: from its notes) has share 0 and does not move it. Its lower bound stands for 0 in log
#: space. The routing skew ``moe_imbalance`` is still fitted beside it: free in [0, 4] it goes
#: to its bound on every framework (the busiest GPU 5x the mean routed tokens), a stand-in for
#: costs the step lacks. It is not the attention-DP balance: with every row's balance known
#: (changes/adpbal.md), leaving the skew out still takes the DEP throughput rows held out from
#: 14.0% to 24.9% (TPOT 55.6% -> 35.4%), and the balanced DeepSeek-R1 rows of the pre-B300
#: perf-overview page are then over-predicted as much (+47..+56%) as its unbalanced Qwen3 rows
#: (+33..+69%); the share fixed at its physical 1 on the unbalanced rows is worse (24.9% ->
#: 29.3%: InferenceX's SGLang DEP rows 10.9% -> 30.7%).
#: ``moe_imbalance_prompt`` is that skew for a step's prompt tokens (``moe_imbalance`` then
#: for its decode tokens; weighted by their counts): the engines route prompt steps of
#: thousands of tokens a GPU, whose experts' popularity averages out (LMSYS's large-scale EP
#: blog: "Larger batches reduce random fluctuations in expert usage"). Off
#: (``EP_PROMPT_SPLIT = False``) the prompt skew is the decode one, the fit of before. A skew
#: that fades with the routed tokens per GPU instead (``skew / (1 + d x m)``, ``d`` fitted in
#: [1e-7, 1]) went to its floor (no fade): the TensorRT-LLM offline rows' decode steps of
#: thousands of tokens a GPU want the full skew (docs/changes: msplit).
#: the prompt skew's ceiling: 4, free like the decode skew (the default). A what-if, not
#: taken: 1.564, the published skew of DeepSeek-R1 on 32 GB200 without EPLB (the hottest
#: EP32 rank's routed tokens over the mean, minus 1, averaged over layers and iterations;
#: TensorRT-LLM tech blog 4, Table 1), an upper bound for EP <= 32. Held out it brings the
#: InferenceX 8k/1k front from 7/12 to 11/12 within 25% and the 1k/1k from 9/9 to 8/9, but
#: takes the EP + DEP throughput rows 16.1% -> 17.4% and TPOT 28.8% -> 29.6% (the
#: TensorRT-LLM perf-overview's aggregated 8k/1k and 32k/1k offline rows want the full skew;
#: changes: msplit).
PROMPT_SKEW_MAX = 4.0
EP_BOUNDS: dict[str, tuple[float, float, float]] = {
    "moe_imbalance": (1e-3, 4.0, 5.0),
    "adp_prompt_imbalance": (1e-3, 1.0, 5.0),
    "moe_imbalance_prompt": (1e-3, PROMPT_SKEW_MAX, 5.0),
}
#: fit the prompt tokens' skew apart (False: ``moe_imbalance_prompt`` = ``moe_imbalance``)
EP_PROMPT_SPLIT = True
#: where the search for an EP field starts: in log space the slope vanishes at the floor
#: (d value / d log x = x), so a search started there stays there
_EP_START = {"moe_imbalance": 0.3, "adp_prompt_imbalance": 0.3, "moe_imbalance_prompt": 0.3}
EP_FIELDS = tuple(EP_BOUNDS)
_PROMPT = "moe_imbalance_prompt"


def fit_ep_fields(
    prof: Profile, rows: Sequence[Any], kinds: Iterable[str], max_nfev: int
) -> Profile:
    """Second stage: :data:`EP_FIELDS` fitted on the expert-parallel / attention-DP rows
    whose prediction they move (an attention-DP row without EP tells nothing about them).

    Each row keeps the parameters the first stage gives it (:func:`resolve_params` on the
    plain rows' profile); only the EP fields move, one value per framework (its rows across
    GPUs; too few to split further) under a global value fitted on every such row, with the
    same log-space prior as the first stage. Every node then carries its framework's value
    (the global one where the framework has no such rows). The EP fields only enter the step
    time of an expert-parallel layout, so every plain prediction is the first stage's."""
    from scipy.optimize import least_squares

    kinds = set(kinds)
    fields = EP_FIELDS if EP_PROMPT_SPLIT else tuple(f for f in EP_FIELDS if f != _PROMPT)

    def tied(upd: dict[str, float]) -> dict[str, float]:  # the prompt skew is the decode one
        return upd if EP_PROMPT_SPLIT else {**upd, _PROMPT: upd["moe_imbalance"]}

    lo = np.array([math.log(EP_BOUNDS[f][0]) for f in fields])
    hi = np.array([math.log(EP_BOUNDS[f][1]) for f in fields])
    sig = np.array([EP_BOUNDS[f][2] for f in fields])
    cat = load_catalog()
    prepared = []
    for r in rows:
        try:
            p0, _ = resolve_params(
                r.gpu, r.framework, r.precision or None, catalog=cat, profile=prof,
                family=r.family or None,
            )  # fmt: skip
        except PlannerError:
            continue
        fn = r.fit_predictor(kinds)
        try:  # a row whose prediction the EP fields do not move (no prompt work, no attention DP)
            lo_v = fn(p0.with_(**tied({f: EP_BOUNDS[f][0] for f in fields})))
            hi_v = fn(p0.with_(**tied({f: EP_BOUNDS[f][1] for f in fields})))
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
        if lo_v == hi_v:  # tells nothing about them
            continue
        prepared.append((r, p0, fn, math.log(r.value)))

    def fit(subset, x0):
        def resid(x):
            upd = {f: float(math.exp(v)) for f, v in zip(fields, x, strict=True)}
            out = np.empty(len(subset))
            for i, (_, p0, fn, meas) in enumerate(subset):
                try:
                    v = fn(p0.with_(**tied(upd)))
                    out[i] = math.log(v) - meas if v > 0 and math.isfinite(v) else 10.0
                except (ValueError, ZeroDivisionError, OverflowError):
                    out[i] = 10.0
            return np.concatenate([out, (x - x0) / sig])

        # from the prior centre, or from _EP_START where that sits on the floor
        begin = [
            math.log(_EP_START[f]) if f in _EP_START and x <= lo[i] + 1e-6 else x
            for i, (f, x) in enumerate(zip(fields, x0, strict=True))
        ]
        start = np.clip(np.array(begin), lo + 1e-9, hi - 1e-9)
        res = least_squares(
            resid, start, bounds=(lo, hi), method="trf", loss="soft_l1", f_scale=0.2,
            max_nfev=max_nfev, diff_step=1e-3,
        )  # fmt: skip
        return res.x

    if not prepared:
        return prof
    x_root = np.clip(np.array([math.log(EP_BOUNDS[f][0]) for f in fields]), lo, hi)
    x_glob = fit(prepared, x_root)
    by_fw: dict[str, np.ndarray] = {}
    for fw in sorted({r.framework for r, *_ in prepared}):
        by_fw[fw] = fit([t for t in prepared if t[0].framework == fw], x_glob)

    def values(x):
        return tied({f: float(f"{math.exp(v):.5g}") for f, v in zip(fields, x, strict=True)})

    nodes = tuple(
        n.model_copy(
            update={"params": n.params.with_(**values(by_fw.get(n.framework or "", x_glob)))}
        )
        for n in prof.nodes
    )
    method = prof.method + (
        f"; then {', '.join(fields)} fitted on the {len(prepared)} expert-parallel rows "
        "with every other parameter held at the first stage's (one value per framework under "
        "a global one)"
    )
    return prof.model_copy(
        update={
            "nodes": nodes,
            "method": method,
            "n_rows_fitted": prof.n_rows_fitted + len(prepared),
        }
    )
