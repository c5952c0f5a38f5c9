"""Aggregated vs disaggregated (xPyD) for the same GPUs: :func:`compare_disagg`.

For each of the recommender's top aggregated options (one per GPU type, at most ``top``),
the same GPU, framework and precision become both pools of an xPyD deployment, sized for the
same need (:func:`planner.serving.disagg_sizing.size_disagg`): the option's own layout in
both pools, and for a MoE model also ``TP w EP w`` and ``DEP w`` of the same width ``w`` in
either pool (the pairs published set-ups use); the pair needing the fewest GPUs is shown. The xPyD
answer *pays* when it needs fewer GPUs than the aggregated fleet (the price per GPU-hour is
the same, so cost follows the GPU count). Otherwise the comparison says why, from the
measured terms:

* **transfer-bound**: the unshared KV transfer of the TTFT percentile's prompt takes
  longer than that prompt's prefill on an idle prefill replica (the prefill the split
  frees from the decode replicas is paid again on the link);
* **short prompts**: one prefill replica keeps up with four or more decode replicas (the
  prefill work is a small share, so there is little interference to remove);
* **small fleet**: the aggregated fleet has fewer replicas than the smallest group that
  carries the need (a group has at least one replica of each kind);
* else no saving (the same GPU count) or the aggregated replica carries more rate per
  GPU within the SLO.

The search itself is unchanged: the comparison runs after it on its few winners (a few
dozen short simulations per option), so ``recommend`` stays fast.
"""

from __future__ import annotations

import re
from typing import Any

from planner.catalog.catalog import Catalog
from planner.catalog.compat import disaggregation_problem
from planner.catalog.layout import EP_REDUNDANT_FRAMEWORKS
from planner.errors import PlannerError
from planner.serving.disagg import Disaggregated, DisaggReplicas, Pool, build_disagg
from planner.serving.disagg_sizing import DisaggSizing, size_disagg, verify_sizing
from planner.serving.probe import run
from planner.workload.slo import SLO
from planner.workload.workload import Workload, make_requests

__all__ = ["DISAGG_MODES", "cannot_beat", "compare_disagg", "why_not"]

DISAGG_MODES = ("auto", "off", "only")


def _pool(r: dict[str, Any], engine: dict[str, Any]) -> Pool:
    """The option's replica as a pool, with the engine limits the search used (its
    ``reproduce`` line states them per attention rank, as a pool takes them)."""
    limits = {}
    for key, flag in (("max_num_seqs", "--max-num-seqs"), ("max_num_batched_tokens",
                      "--max-num-batched-tokens")):  # fmt: skip
        m = re.search(rf"{flag} (\d+)", r.get("reproduce") or "")
        limits[key] = int(m.group(1)) if m else engine.get(key)
    return Pool(
        gpu=r["gpu"],
        framework=r["framework"],
        precision=r["precision"],
        kv_precision=r.get("kv_precision"),
        tp=r["tp"],
        pp=r.get("pp", 1),
        ep=r.get("ep", 1),
        attention_dp=r.get("attention_dp", 1),
        **limits,
    )


#: the speculative-decoding fields of a recommendation that both pools take
_SPEC_KEYS = ("spec_method", "spec_tokens", "acceptance_length")


def _spec_text(spec_kw: dict[str, Any]) -> str:
    """``, mtp k=2, AL 2.58`` (empty without speculative decoding)."""
    if not spec_kw.get("spec_method"):
        return ""
    k = spec_kw.get("spec_tokens")
    al = spec_kw.get("acceptance_length")
    return (
        f", {spec_kw['spec_method']}" + (f" k={k}" if k else "") + (f", AL {al:.3g}" if al else "")
    )


def why_not(sz, agg_replicas: int, prefill_idle_s: float, agg_gpus: int | None = None) -> list[str]:
    """The reasons an xPyD sizing ``sz`` does not beat an aggregated fleet of
    ``agg_replicas`` (see the module docstring); ``prefill_idle_s`` is the TTFT
    percentile prompt's prefill on an idle prefill replica [s]."""
    out = []
    if sz.transfer_s >= prefill_idle_s:
        out.append(
            f"transfer-bound: moving a prompt's KV takes {sz.transfer_s * 1e3:.1f} ms, more than "
            f"its prefill ({prefill_idle_s * 1e3:.1f} ms)"
        )
    if sz.prefill_rps >= 4 * sz.decode_rps:
        out.append(
            f"short prompts: one prefill replica ({sz.prefill_rps:.3g} req/s) keeps up with "
            f"{sz.prefill_rps / sz.decode_rps:.0f} decode replicas ({sz.decode_rps:.3g} req/s "
            "each): little prefill interference to remove"
        )
    if agg_replicas < sz.groups * (sz.x + sz.y):
        out.append(
            f"small fleet: {agg_replicas} aggregated replica(s) carry the need; the smallest "
            f"xPyD answer is {sz.groups} x {sz.x}P{sz.y}D"
        )
    if not out:
        if agg_gpus is not None and sz.num_gpus == agg_gpus:
            out.append(f"no saving: both need {agg_gpus} GPUs")
        else:
            out.append("the aggregated replica carries more rate per GPU within the SLO")
    return out


def _pool_pairs(pool: Pool, moe: bool, wider: tuple[int, ...] = ()) -> list[tuple[Pool, Pool]]:
    """(prefill, decode) pools to try for one aggregated option: its own layout in both, and
    for a MoE model of width ``w`` > 1 also ``TP w EP w`` and ``DEP w`` in either pool (the
    layouts published xPyD set-ups pair: TP prefill with DEP decode, DEP with DEP), and a
    wider decode pool ``DEP n`` for each ``n`` of ``wider`` (:func:`_wider_decode`) behind
    the option's own or the ``DEP w`` prefill (InferenceX's B200 front: DEP4 prefill, DEP8
    decode; GB200 NVL72: DEP8 prefill, DEP16-48 decode)."""
    out = [(pool, pool)]
    w = pool.tp * pool.attention_dp
    if not moe or w <= 1:
        return out
    tp = pool.model_copy(update={"tp": w, "attention_dp": 1, "ep": w})
    dep = pool.model_copy(update={"tp": 1, "attention_dp": w, "ep": w})
    layouts = list(dict.fromkeys([pool, tp, dep]))
    out += [(a, b) for a in layouts for b in layouts if (a, b) != (pool, pool)]
    for n in wider:
        wide = pool.model_copy(update={"tp": 1, "attention_dp": n, "ep": n})
        out += [(a, wide) for a in dict.fromkeys([pool, dep])]
    return out


def _wider_decode(pool: Pool, model: str, catalog: Catalog) -> tuple[int, ...]:
    """Decode widths ``n`` above the option's width that the aggregated search also tries
    as ``DEP n`` (:func:`planner.recommend.options.dep_sizes` inside the GPU's scale-up
    domain, for an engine with attention data-parallel), each dividing the routed experts
    unless the engine places them on redundant slots."""
    from planner.recommend.options import MAX_TP_PER_NODE, dep_sizes

    m = catalog.model(model)
    fw = catalog.framework(pool.framework) if pool.framework else None
    if not m.is_moe or fw is None or not fw.attention_dp or not fw.expert_parallel:
        return ()
    w = pool.tp * pool.attention_dp
    dom = catalog.gpu(pool.gpu).nvlink_domain_gpus or MAX_TP_PER_NODE
    n_exp = int(m.num_experts or 0)
    redundant = fw.id in EP_REDUNDANT_FRAMEWORKS
    return tuple(
        n for n in dep_sizes(m, fw.id, dom) if w < n <= n_exp and (redundant or n_exp % n == 0)
    )


def cannot_beat(d: DisaggReplicas, best: DisaggSizing) -> bool:
    """Whether the pools ``d`` (built, :class:`~planner.serving.disagg.DisaggReplicas`)
    surely size to more GPUs than the sizing ``best``: a sizing has ``groups x (x x prefill
    GPUs + y x decode GPUs)`` GPUs with ``groups``, ``x``, ``y`` >= 1
    (:func:`~planner.serving.disagg_sizing.size_disagg`), so at least one replica of each
    pool; more GPUs than ``best`` loses on the first term of the pair's key. Example: an
    aggregated TP2 B300 option whose 1P(TP2)+1D(DEP2) needs 4 GPUs; a DEP4 decode pool
    behind a TP2 prefill needs at least 2 + 4 = 6."""
    return d.prefill.num_gpus + d.decode.num_gpus > best.num_gpus


def compare_disagg(
    model: str,
    workload: Workload,
    slo: SLO,
    recommendations: list[dict[str, Any]],
    need_rps: float,
    *,
    catalog: Catalog,
    engine: dict[str, Any] | None = None,
    top: int = 2,
    n_requests: int = 600,
    seed: int = 0,
    profile: Any = None,
    exhaustive: bool = False,
) -> list[dict[str, Any]]:
    """One row per compared option: the aggregated GPUs, the xPyD sizing with the same
    GPUs, ``disaggregated`` / ``prefill`` / ``decode`` (sub-deployments with counts),
    ``pays`` and ``why``. An option whose pools cannot be built or sized says so in
    ``why``. ``profile``: the calibration profile the search used (default: the bundled
    one), so both answers use the same efficiency parameters.

    Work saved, with the same rows (``exhaustive=True`` does it all, the reference the
    tests compare against): a pair that :func:`cannot_beat` the best so far is not sized;
    the pools' runs are remembered across the pairs of one option (``memo`` of
    :func:`~planner.serving.disagg_sizing.pool_rate`); and only a pair that becomes the
    best so far has its group simulated (``check``, read from the chosen pair only). An
    error is read only when no pair is sized, and then every pair was tried in full, as
    before."""
    engine = dict(engine or {})
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    # an option on an engine without prefill/decode disaggregation has no xPyD twin: compare
    # the best option whose engine offers it; say why only when no option's engine does
    offered = tuple(f.name for f in catalog.frameworks if f.disaggregation)
    refused = {
        r.get("framework"): disaggregation_problem(catalog.framework(r["framework"]), offered)
        for r in recommendations
        if r.get("framework")
    }
    capable = [r for r in recommendations if not refused.get(r.get("framework"))]
    for r in capable or recommendations:
        if len(rows) >= top:
            break
        if r.get("gpu") in seen or not r.get("replicas"):
            continue
        seen.add(r["gpu"])
        if not capable:  # no option's engine offers it: say why, once per GPU
            rows.append({
                "gpu": r["gpu"],
                "aggregated": f"{r['replicas']}x {r.get('layout') or ''}".strip(),
                "aggregated_gpus": r.get("num_gpus"),
                "disaggregated": True,
                "pays": False,
                "why": [f"disaggregated.framework: {refused[r['framework']]}"],
            })  # fmt: skip
            continue
        pool = _pool(r, engine)
        # the option's speculative decoding runs in both pools, as in the aggregated replica
        # (compared without it, an xPyD answer loses the MTP gain the option has)
        spec_kw = {k: r[k] for k in _SPEC_KEYS if r.get(k) is not None}
        spec = Disaggregated(prefill=pool, decode=pool)
        row: dict[str, Any] = {
            "gpu": r["gpu"],
            "aggregated": f"{r['replicas']}x {r.get('layout') or pool.layout.label}",
            "aggregated_gpus": r["num_gpus"],
            "disaggregated": True,
        }
        best = None
        err = ""
        wider = _wider_decode(pool, model, catalog)
        memo: dict = {}  # pool_rate's runs: the pairs repeat each pool (same requests)
        for pre, dec in _pool_pairs(pool, catalog.model(model).is_moe, wider):
            try:
                dd = build_disagg(
                    model,
                    Disaggregated(prefill=pre, decode=dec),
                    catalog=catalog,
                    where="disaggregated",
                    profile=profile,
                    first_token_s=None,  # the bundled first-token path (trtllm-serve)
                    **{**engine, **spec_kw},
                )
                if not exhaustive and best is not None and cannot_beat(dd, best[2]):
                    continue
                s = size_disagg(
                    dd, workload, slo, need_rps, n_requests=n_requests, seed=seed,
                    verify=exhaustive, memo=None if exhaustive else memo,
                )  # fmt: skip
                key = (s.num_gpus, -s.group_rps / max(s.num_gpus, 1), pre != pool or dec != pool)
                if best is not None and not key < best[0]:
                    continue  # not chosen: its group's check would never be read
                if not exhaustive:
                    s = verify_sizing(
                        dd, workload, slo, need_rps, s, n_requests=n_requests, seed=seed
                    )
            except (PlannerError, ValueError) as e:  # a pool that cannot be built: say why
                err = err or str(e)
                continue
            best = (key, dd, s)
        if best is None:
            rows.append({**row, "pays": False, "why": [err]})
            continue
        _, d, sz = best
        spec = d.spec
        p = sz.x, sz.y
        spec = spec.model_copy(update={"x": p[0], "y": p[1]})
        row.update(
            option=spec.label() + _spec_text(spec_kw),
            **{k: spec_kw.get(k) for k in _SPEC_KEYS},
            groups=sz.groups,
            num_gpus=sz.num_gpus,
            prefill={**spec.prefill.model_dump(exclude_none=True), "count": sz.x * sz.groups},
            decode={**spec.decode.model_dump(exclude_none=True), "count": sz.y * sz.groups},
            prefill_rps_per_replica=sz.prefill_rps,
            decode_rps_per_replica=sz.decode_rps,
            transfer_s=sz.transfer_s,
            check_slo_ok=sz.check.get("slo_ok"),
        )
        if r.get("usd_per_hour") is not None and r.get("num_gpus"):
            row["usd_per_hour"] = r["usd_per_hour"] * sz.num_gpus / r["num_gpus"]
        pays = sz.num_gpus < r["num_gpus"] and bool(sz.check.get("slo_ok", True))
        row["pays"] = pays
        if pays:
            row["why"] = [
                f"{sz.num_gpus} GPUs instead of {r['num_gpus']}: the decode pool runs at "
                f"{sz.decode_rps:.3g} req/s per replica without prefill interruptions"
            ]
        else:
            t_pct = slo.ttft.percentile if slo.ttft else 99.0
            import numpy as np

            prompt = int(
                np.percentile(
                    workload.sample_requests(200, np.random.default_rng(seed), 1.0).input_tokens,
                    t_pct,
                )
            )
            idle = float(run(d.prefill, make_requests([0.0], [prompt], [1])).first_token_s[0])
            row["why"] = why_not(sz, int(r["replicas"]), idle, int(r["num_gpus"]))
        rows.append(row)
    return rows
