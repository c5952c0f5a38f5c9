"""The screen of one option, analytically and without simulation (step 2 of
:mod:`planner.recommend.search`): its price under the constraints, whether the weights fit,
the release it is predicted for, its replica and zero-load floors, its saturation rate, and
the bounds on the objective and on the replica count that the branch and bound orders by.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

from ..catalog import model_family
from ..catalog.release_profile import release_floor, resolve_release_params
from ..cost import quote_price
from ..engine.memory import DEFER_SUGGESTIONS, weight_memory
from ..errors import MissingDataError, PlannerError
from ..serving import check_workload_fits
from .beyond import edge_bound
from .objective import Screened, over_budget
from .options import Option, Rejection
from .replicas import _replica, _tpot_floor, _why_tpot


class _Screening:
    """The screening steps of a search (:class:`planner.recommend.search._Search`, whose
    state they read: catalog, constraints, objective, load, caches)."""

    def price_of(self, gpu_id: str) -> Any:
        """The price quote of a GPU under the constraints, or the PlannerError why none."""
        if gpu_id not in self.price_cache:
            c = self.c
            try:
                if gpu_id in self.overrides:
                    basis = c.price_basis if c.price_basis != "own" else "on_demand"
                    pq = quote_price(
                        self.cat, gpu_id, basis, usd_per_gpu_hour=self.overrides[gpu_id]
                    )
                elif c.price_basis == "own":
                    pq = quote_price(self.cat, gpu_id, "own", ownership=self.ownership)
                else:
                    pq, err = None, None
                    for prov in c.providers or (None,):
                        try:
                            pq = quote_price(self.cat, gpu_id, c.price_basis, provider=prov)
                            break
                        except PlannerError as e:
                            err = e
                    if pq is None:
                        raise err  # type: ignore[misc]
                self.price_cache[gpu_id] = pq
            except PlannerError as e:
                self.price_cache[gpu_id] = e
        return self.price_cache[gpu_id]

    def weights_problem(self, opt: Option) -> str | None:
        """Cheap check before building a replica: do the weights alone fit one GPU?"""
        key = (opt.gpu.id, opt.precision.id, opt.layout)
        if key not in self.weight_fit:
            g, m = opt.gpu, self.m
            if g.memory_gb is None:
                self.weight_fit[key] = (
                    f"{g.id}: memory size not in the catalog (no source gives it)"
                )
            else:
                lay = opt.layout
                w = weight_memory(m, opt.precision, lay.tp, lay.pp, lay.ep, lay.moe_split, g.arch)
                w = w.per_gpu_bytes
                self.weight_fit[key] = (
                    f"does not fit: {m.id} in {opt.precision.id} needs {w / 1e9:.1f} GB of weights "
                    f"per GPU at "
                    + (
                        f"tp={lay.tp}" + (f" pp={lay.pp}" if lay.pp > 1 else "")
                        if opt.is_plain
                        else lay.label
                    )
                    + f"; {g.id} has {g.memory_bytes / 1e9:.1f} GB"
                    if w >= g.memory_bytes
                    else None
                )
        return self.weight_fit[key]

    def lb0(self, opt: Option) -> float:
        """A bound that needs no replica: at least one replica of tp x pp GPUs."""
        if self.obj.name == "cost":
            pq = self.price_of(opt.gpu.id)
            return (
                math.inf
                if isinstance(pq, PlannerError)
                else opt.gpus_per_replica * pq.usd_per_gpu_hour
            )
        if self.obj.name == "gpus":
            return float(opt.gpus_per_replica)
        return -math.inf

    def params_of(self, opt: Option) -> tuple[Option, Any, str]:
        """``opt`` with the release it is predicted for, its fitted parameters and their
        provenance (remembered by GPU x framework x precision and floor release)."""
        key = (opt.gpu.id, opt.framework.id, opt.precision.id)
        fk = (opt.framework.id, opt.layout)  # the first release launching it serving the model
        if fk not in self.floor_cache:
            self.floor_cache[fk] = release_floor(opt.framework.id, opt.layout, self.m, self.cat)
        floor = self.floor_cache[fk]
        # the floor's reason enters the provenance text, so it is part of the key (a layout
        # with the same floor release but another reason must not read the first one's text)
        ck = (*key, tuple(floor) if floor else None)
        if ck not in self.param_cache:
            params, prov, ch = resolve_release_params(
                *key, catalog=self.cat, profile=self.profile, family=model_family(self.m),
                layout=opt.layout, model=self.m,
            )  # fmt: skip
            # predicted for: the floor release asked for, else the node's (none: over every release)
            rel = (ch.requested or ch.used) if ch is not None else None
            if floor and ch is not None and ch.requested == floor[0] != ch.used:
                prov = f"{prov}; predicted for {opt.framework.id}@{floor[0]}: {floor[1]}"
            elif floor and not rel:
                prov = f"{prov}; needs {opt.framework.id} >= {floor[0]}: {floor[1]}"
            self.param_cache[ck] = (params, prov, rel)
        params, prov, release = self.param_cache[ck]
        if release:
            opt = dataclasses.replace(opt, release=release)
        return opt, params, prov

    def memory_why(self, opt: Option) -> Callable[[], str]:
        """The reason building ``opt``'s replica fails, with its suggestions: a function that
        builds the replica again, suggestions on (called where the reason is read)."""
        opt, params, prov = self.params_of(opt)
        return functools.partial(_build_error, self.m, opt, params, prov, self.cat, self.eng_kw)

    def screen(self, opt: Option) -> Screened | Rejection:
        """Build the replica and bound the option analytically (no simulation).

        A replica that does not fit is rejected without the suggestions of its reason
        (~1 ms each; :data:`planner.engine.memory.DEFER_SUGGESTIONS`): the rejection's reason
        is made where it is read, by :meth:`memory_why` building the replica again with them.
        The build is a pure function of the option and the suggestions change only the
        error's text, so the reason read is the one an eager build gives."""
        c, ld = self.c, self.load
        opt, params, prov = self.params_of(opt)
        token = DEFER_SUGGESTIONS.set(True)
        try:
            rep = _replica(self.m, opt, params, prov, self.cat, self.eng_kw)
        except MissingDataError as e:
            return Rejection.of(opt, "missing_data", str(e))
        except PlannerError:
            return Rejection.of(opt, "memory", self.memory_why(opt))
        finally:
            DEFER_SUGGESTIONS.reset(token)
        for i, rc in enumerate(self.cache.classes):
            try:
                q = functools.partial(self.cache.quantile_tokens, i)
                check_workload_fits(rep, rc.workload, c.fit_percentile, q)
            except PlannerError as e:
                return Rejection.of(opt, "memory", (f"{rc.name}: " if rc.name else "") + str(e))
            if rc.slo.tpot is not None:
                floor = _tpot_floor(rep, self.mean_input[i])
                if floor > rc.slo.tpot.max_s:
                    why = _why_tpot(rep, floor, rc.slo.tpot.max_s)
                    return Rejection.of(opt, "slo_zero_load", why)
        pq = self.price_of(opt.gpu.id)
        fp = self.cache.saturation(rep)
        cap = 0.95 * fp.saturation_rps
        if not cap > 0:
            return Rejection.of(opt, "throughput", "the replica saturates at 0 req/s")
        k_lb = max(1, math.ceil(ld.need_rps / cap - 1e-9))
        gpr = opt.gpus_per_replica
        if c.max_total_gpus is not None and k_lb * gpr > c.max_total_gpus:
            return Rejection.of(
                opt,
                "constraint",
                f"needs at least {k_lb * gpr} GPUs ({k_lb} replicas of {gpr}; one saturates at "
                f"{fp.saturation_rps:.3g} req/s) > max_total_gpus={c.max_total_gpus}",
            )
        price = None if isinstance(pq, PlannerError) else pq
        s = Screened(opt, rep, prov, price, fp.saturation_rps, cap, k_lb, 0.0)
        # an engine with no fit on this architecture is ranked at its band's edge: bound it there
        s.bound = edge_bound(s, self.obj.name, self.obj.bound(s, ld, self.cache), ld.need_rps)
        return over_budget(s, k_lb, None, self.limits) or s

    def k_max(self, s: Screened) -> tuple[int, str, str]:
        """Most replicas the constraints allow, which constraint sets it and its stage."""
        gpr, p = s.opt.gpus_per_replica, s.usd_per_gpu_hour
        k, why, stage = max(4 * s.k_lb, s.k_lb + 64), "", "slo"
        if self.c.max_total_gpus is not None:
            k, why = self.c.max_total_gpus // gpr, f"max_total_gpus={self.c.max_total_gpus}"
            stage = "constraint"
        for lim, name in self.limits:
            if p is not None and int(lim / (gpr * p) + 1e-9) < k:
                k, why, stage = int(lim / (gpr * p) + 1e-9), name, "budget"
        return k, why, stage


def _build_error(m, opt: Option, params, prov: str, cat, eng_kw: dict[str, Any]) -> str:
    """The error building the replica of ``opt`` raises, suggestions made (the reason of a
    memory rejection, :meth:`_Screening.screen`)."""
    try:
        _replica(m, opt, params, prov, cat, eng_kw)
    except PlannerError as e:
        return str(e)
    raise AssertionError(f"{opt.label()}: its replica failed to build once, not twice")
