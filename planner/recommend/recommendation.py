"""What a search returns (:class:`Recommendation`) and how it reports (step 4 of
:mod:`planner.recommend.search`): the picked options finished, ranked and explained, the
search's counts and summary, the assumptions, and the ``planner capacity`` command that
reproduces each option.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PlannerError
from .decide import decide, diverse, variant_label
from .finish import (
    fewer_rows,
    finish,
    nothing_meets,
    pareto_front,
    spec_suffix,
    why_winner,
)
from .objective import Screened, sort_key
from .options import Rejection, layout_text, spec_flags
from .threads import each


@dataclass
class Recommendation:
    """The ranked options, the rejected ones with reasons, and how the search went.

    ``rejected`` holds one dict per rejected option (``stage``, ``reason`` and the option's
    ids); they are made on first access (a whole-catalog search rejects ~10,000)."""

    objective: str
    recommendations: list[dict[str, Any]]
    rejections: list[Rejection]
    pareto: list[dict[str, Any]]
    why: str
    summary: dict[str, Any]
    assumptions: list[str]
    _rejected: list[dict[str, Any]] | None = None

    @property
    def rejected(self) -> list[dict[str, Any]]:
        if self._rejected is None:
            self._rejected = [r.as_dict() for r in self.rejections]
        return self._rejected

    @rejected.setter
    def rejected(self, rows: list[dict[str, Any]]) -> None:
        self._rejected = rows

    def as_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "summary": self.summary,
            "why": self.why,
            "recommendations": self.recommendations,
            "pareto": self.pareto,
            "rejected": self.rejected,
            "assumptions": self.assumptions,
        }


class _Reporting:
    """The report steps of a search (:class:`planner.recommend.search._Search`, whose state
    they read: the options simulated, rejected and screened, the load and the constraints)."""

    def reproduce(self, s: Screened) -> str:
        """The ``planner capacity`` command giving this option's GPU count: every setting
        explicit (KV precision, engine limits, headroom, fit percentile, requests, seed), so
        it does not depend on any command's defaults. ``SCENARIO.yaml``: the scenario file
        (the CLI fills in its path)."""
        o, e, c = s.opt, s.replica.engine, self.c
        lay = o.layout
        seed = self.cache.seed if isinstance(self.cache.seed, int) else 0
        return (
            f"planner capacity SCENARIO.yaml --gpu {o.gpu.id} --framework {o.framework.id} "
            f"--precision {o.precision.id} --kv-precision {o.kv_precision} --tp {lay.tp} "
            f"--pp {lay.pp} --ep {lay.ep} --attention-dp {lay.attention_dp} "
            + spec_flags(o.spec)
            + "--max-num-seqs {} --max-num-batched-tokens {} ".format(
                *e.flag_limits(lay.attention_dp)
            )
            + f"--headroom {c.headroom!r} --fit-percentile "
            f"{c.fit_percentile!r} --requests {self.n_requests} --seed {seed} --no-curve"
        )

    def finished(self) -> tuple[list[tuple[Screened, list[Screened]]], list[Screened]]:
        """The picked options with their variants, and their leads finished (no rank yet)."""
        c, ld, done = self.c, self.load, self.done
        done.sort(key=lambda s: sort_key(s, ld.need_rps))
        if self.per_gpu:  # the best top_n of every GPU, GPUs in order of their best
            by_gpu: dict[str, list[Screened]] = {}
            for s in done:
                by_gpu.setdefault(s.opt.gpu.id, []).append(s)
            picked = [x for g in by_gpu.values() for x in diverse(g, self.top_n)]
            order = {g: i for i, g in enumerate(by_gpu)}
            picked.sort(key=lambda x: order[x[0].opt.gpu.id])
        else:
            picked = diverse(done, self.top_n)
        top = [s for s, _ in picked]
        if not top:
            return picked, top

        def done_one(s: Screened, variants: list[Screened]) -> None:
            finish(s, self.cache, ld, c.headroom, self.ownership, self.refine, self.reproduce(s))
            s.result["precision_label"] = variant_label(s, variants)
            s.result["variants"] = [v.opt.ids() for v in variants]

        # each recommendation's own simulations and numbers: two at a time (they hold no
        # GIL while simulating), unless the request sample comes from a shared generator
        each(
            [functools.partial(done_one, s, vs) for s, vs in picked],
            threads=1 if isinstance(self.cache.seed, np.random.Generator) else self.threads(),
        )
        return picked, top

    def counts(self, n_enumerated: int) -> dict[str, int]:
        """The search's counts of options and simulations (its summary's)."""
        probes = [s.probe for s in self.screened if s.probe is not None]
        return {
            "options_enumerated": n_enumerated, "options_screened": len(self.screened),
            "options_simulated": len(probes), "options_pruned": self.pruned,
            "simulations": sum(p.simulations for p in probes),
        }  # fmt: skip

    def summary(self, t0: float, counts: dict[str, int], feasible: int) -> dict[str, Any]:
        """The summary of a search that began at ``t0`` (:func:`time.perf_counter`)."""
        slo = "; ".join(
            (f"{x.name}: " if x.name else "") + x.slo.describe() for x in self.cache.classes
        )
        return {
            "model": self.m.id, "objective": self.obj.name, "objective_text": self.obj.text,
            "peak_rps": self.load.peak_rps, "headroom": self.c.headroom, "slo": slo, **counts,
            "elapsed_s": time.perf_counter() - t0, "feasible": feasible,
        }  # fmt: skip

    def report(self, t0: float, n_enumerated: int) -> Recommendation:
        c, ld, done = self.c, self.load, self.done
        picked, top = self.finished()
        if not top:
            raise PlannerError(nothing_meets(self.rejected))
        recs = [s.result for s in top]
        for i, r in enumerate(recs, 1):
            r["rank"] = i
        decision = decide(recs, self.obj.name, self)
        q = c.fit_percentile / 100.0
        need_tokens = max(
            int(
                math.ceil(
                    x.workload.input_quantile_tokens(q) + x.workload.output_quantile_tokens(q)
                )
            )
            for x in self.cache.classes
        )
        summary = self.summary(t0, self.counts(n_enumerated), len(done))
        assumptions = [
            f"planning peak {ld.peak_rps:g} req/s x (1 + headroom {c.headroom:g}) = "
            f"{ld.need_rps:g} req/s",
            f"the p{c.fit_percentile:g} request (prompt + answer {need_tokens:,} tokens) must fit "
            "in one replica's KV cache and context",
            f"prices: {c.price_basis.replace('_', '-')} basis, median-priced row unless a provider "
            "or an override is given; a month is 730 h",
            "TP within one node of 8 GPUs; PP across nodes only when no single-node layout holds "
            "the model",
            "fp16 is evaluated only where it differs from bf16 (same bits and tensor rate "
            "elsewhere)",
            "KV precisions tried: each precision's default and fp8 where offered",
        ]
        notes = (x.workload.max_output_assumption() for x in self.cache.classes)
        assumptions += [a for a in notes if a]  # the clients' max_tokens, when assumed
        peaks = {x.workload.traffic.peak_above_curve_note() for x in self.cache.classes}
        assumptions += sorted(a for a in peaks if a)  # a peak above the file's daily curve
        front = pareto_front(recs)
        if self.per_gpu:
            firsts: dict[str, dict[str, Any]] = {}
            for r in recs:
                firsts.setdefault(r["gpu"], r)
            why = "best option of each GPU that meets the SLOs: " + "; ".join(
                f"{g} {r['framework']} {r['precision']} {layout_text(r)}{spec_suffix(r)}: "
                f"{r['num_gpus']} GPUs"
                + (f", ${r['usd_per_hour']:,.2f}/h" if r.get("usd_per_hour") is not None else "")
                for g, r in firsts.items()
            )
        else:
            why = why_winner(top, self.obj, self.rejected)
            why += fewer_rows(done, len(top), self.top_n, self.rejected)
        if decision:
            why += f". Decision: {decision}"
        return Recommendation(self.obj.name, recs, self.rejected, front, why, summary, assumptions)
