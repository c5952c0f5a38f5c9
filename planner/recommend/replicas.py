"""Replicas of the options a search screens, built once and remembered
(:func:`_replica`), and the zero-load TPOT floor that rejects an option before simulating
it (:func:`_tpot_floor`, :func:`_why_tpot`)."""

from __future__ import annotations

from typing import Any

from ..catalog import Catalog
from ..catalog.speculative import replica_kwargs
from ..engine.memory import DEFER_SUGGESTIONS
from ..errors import PlannerError
from ..serving import Replica, build_replica
from .options import Option

#: replicas (or the error building one raised) by everything :func:`build_replica` reads,
#: catalog records compared by identity: a Replica is immutable and does not depend on the
#: workload, so the app's next question on the same model (another peak, SLO or GPU set)
#: screens without building them again; emptied past :data:`_REPLICAS_MAX` entries. An
#: error built with the suggestions deferred is remembered apart (its text lacks them)
_REPLICAS: dict[tuple, tuple[tuple, Replica | PlannerError]] = {}
_REPLICAS_MAX = 20_000


def _replica(m, opt: Option, params, prov: str, cat: Catalog, eng_kw: dict[str, Any]) -> Replica:
    """:func:`build_replica` for ``opt`` (remembered in :data:`_REPLICAS`)."""
    objs = (m, opt.gpu, opt.precision, opt.framework, params, cat)
    key = (
        *map(id, objs), opt.layout, opt.kv_precision, prov,
        tuple(sorted(eng_kw.items())), opt.spec, DEFER_SUGGESTIONS.get(),
    )  # fmt: skip
    try:
        hit = _REPLICAS.get(key)
    except TypeError:  # an unhashable engine setting: build it, not remembered
        hit, key = None, None
    if hit is None or any(a is not b for a, b in zip(hit[0], objs, strict=True)):
        try:
            out: Replica | PlannerError = build_replica(
                m, opt.gpu, opt.precision, opt.framework, layout=opt.layout,
                kv_precision=opt.kv_precision, params=params, params_source=prov,
                catalog=cat, **eng_kw, **replica_kwargs(opt.spec),
            )  # fmt: skip
        except PlannerError as e:
            out = e.with_traceback(None)
        hit = (objs, out)
        if key is not None:
            if len(_REPLICAS) >= _REPLICAS_MAX:
                _REPLICAS.clear()
            _REPLICAS[key] = hit
    if isinstance(hit[1], PlannerError):
        raise hit[1].copy()  # the same error, without the frames of earlier raises
    return hit[1]


def _tpot_floor(rep: Replica, ctx_tokens: float) -> float:
    """Time of one decode step of a lone sequence at ``ctx_tokens`` of context [s]."""
    sm, W = rep.sm, rep.sm.window if rep.sm.layers_sw > 0 else 0
    c = ctx_tokens + 1
    kvs = min(c, W) if W else 0.0
    t = rep.engine.iteration_s(sm.step_time(1, 1, 1, c, c, kvs, kvs), 1)  # host overlap rule
    return t / rep.spec.acceptance_length if rep.spec is not None else t


def _why_tpot(rep: Replica, floor_s: float, target_s: float) -> str:
    mem = rep.memory
    w = mem.weight_bytes_per_gpu if mem else float("nan")
    bw = rep.sm.gpu.mem_bw_gbs
    return (
        f"SLO unreachable even at zero load: TPOT floor {floor_s * 1e3:.1f} ms > "
        f"{target_s * 1e3:.4g} ms target ({w / 1e9:.1f} GB of weights per GPU / {bw:g} GB/s "
        f"= {w / (bw * 1e9) * 1e3:.1f} ms of reading alone); use more TP, a lower precision or "
        "a faster GPU"
    )
