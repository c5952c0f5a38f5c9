"""What-if's computations (the page is :mod:`app_pages.what_if`'s script): the knobs of one
deployment and everything the page shows for them, from ``planner`` only, cached per
scenario and knobs. A module, not part of the page script: its cached functions are made
once per server process, not again on every run of the page (Streamlit keys a cached
function on its source, read with ``inspect`` each time its decorator runs: ~6 ms each)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

from app_pages import pools
from app_pages import widgets as w
from planner import PlannerError

#: the curve's y-axis choices and the curve rows' keys
CURVE_KEYS = {"TPOT P99": "tpot_p99_s", "TTFT P99": "ttft_p99_s"}


@dataclass(frozen=True)
class Knobs:
    gpu: str
    framework: str
    precision: str
    kv_precision: str
    tp: int
    context: int
    max_num_seqs: int
    spec_method: str | None = None  # speculative decoding (None: off)
    spec_tokens: int | None = None
    acceptance_length: float | None = None
    pd: str = pools.AGGREGATED  # prefill:decode: aggregated, auto or x:y

    def spec(self) -> dict[str, Any]:
        """build_replica's speculative decoding arguments (empty when off)."""
        if self.spec_method is None:
            return {}
        return {
            "spec_method": self.spec_method,
            "spec_tokens": self.spec_tokens,
            "acceptance_length": self.acceptance_length,
        }

    def label(self) -> str:
        spec = (
            f" / {self.spec_method} k={self.spec_tokens} AL {self.acceptance_length or '-'}"
            if self.spec_method
            else ""
        )
        pd = f" / P:D {self.pd}" if self.pd != pools.AGGREGATED else ""
        return (
            f"{self.gpu} / {self.framework} / {self.precision} (KV {self.kv_precision}) / "
            f"TP {self.tp} / {self.context:,} ctx / {self.max_num_seqs} seqs{spec}{pd}"
        )


def curve_beside() -> bool:
    """Whether :func:`evaluate` draws the curve in a helper thread beside the answer: on two
    CPUs or more with a core free now (no other runnable thread:
    :func:`planner.recommend.processes.others_running`). The two share no state and the
    compiled event loop releases the GIL, so on a free core the page waits for the longer of
    the two, not their sum. On busy cores the threads only take turns, and each return from
    the compiled loop waits for the other thread's Python (the GIL): at load 2 on the 2-core
    machine a GPU change took 134 ms against 88 ms one after the other. The numbers are the
    same either way."""
    import os

    from planner.recommend.processes import others_running

    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - Linux has it
        cpus = os.cpu_count() or 1
    return cpus >= 2 and others_running() <= cpus - 2


@st.cache_data(show_spinner=False, max_entries=256)
def evaluate(key: tuple, scenario_json: str, k: Knobs) -> dict:
    """Everything the page shows for one deployment (planner calls only), or {"error"}.

    The replica is the scenario's (its ``serving:`` section applied, then the knobs), as
    ``planner capacity FILE --gpu .. --framework .. --precision .. --tp .. --kv-precision ..
    --max-num-seqs ..`` builds it (:func:`capacity_command`); the curve is that command's
    closed-loop curve (``throughput_latency_curve`` with
    :data:`planner.serving.answer.CURVE_REQUESTS`, seed 0); the replicas, max rate per replica,
    latencies and knobs are :func:`planner.serving.answer.answer_for_deployment`'s, the one
    answer ``planner capacity``, ``simulate`` and ``recommend`` print for this deployment.
    """
    from planner.catalog import model_family
    from planner.catalog.release_profile import resolve_release_params
    from planner.cost import quote_price
    from planner.serving import load_kernels, throughput_latency_curve
    from planner.serving.answer import CURVE_REQUESTS, answer_for_deployment, curve_noise

    cat = w.catalog_for(key)
    sc = w.build_scenario(key, scenario_json)
    wl, slo = sc.workload, sc.slo
    out: dict = {}
    try:
        # the release the CLI takes: the file's (with its framework), else the newest with a fit
        rel = sc.deployment.release if k.framework == sc.deployment.framework else None
        params, prov, choice = resolve_release_params(
            k.gpu,
            k.framework,
            k.precision,
            rel,
            catalog=cat,
            family=model_family(cat.model(sc.model)),
            model=cat.model(sc.model),
        )  # fmt: skip (model: a release older than the model is not predicted, as the CLI)
        rep = sc.build_replica(
            k.gpu,
            k.framework,
            k.precision,
            k.tp,
            1,
            k.kv_precision,
            params=params,
            params_source=prov,
            catalog=cat,
            max_num_seqs=k.max_num_seqs,
            context_len=k.context,
            spec=k.spec(),
        )
    except PlannerError as e:
        return {"error": str(e)}
    out["provenance"] = prov
    out["release_note"] = choice.note if choice is not None and choice.note else ""
    from planner.catalog.profile import error_band

    try:
        out["band"] = error_band(prov)
    except PlannerError as e:
        out["band_error"] = str(e)
    out["max_num_seqs"] = rep.engine.max_num_seqs
    out["assumptions"] = list(rep.assumptions)
    need_tokens = wl.input_quantile_tokens(0.99) + wl.output_quantile_tokens(0.99)
    if need_tokens > rep.engine.context_limit_tokens:
        out["fit_warning"] = (
            f"the p99 request (prompt + answer {need_tokens:,.0f} tokens) is longer than this "
            f"deployment's context limit of {rep.engine.context_limit_tokens:,} tokens: longer "
            "requests are cut in the simulation; raise the context length"
        )

    def curve_rows() -> list[dict]:  # planner capacity's: its requests per point, --seed 0
        return throughput_latency_curve(
            rep, wl, slo=slo, rng=np.random.default_rng(0), **CURVE_REQUESTS
        )

    def answer() -> Any:  # planner capacity's (and recommend's, simulate's), or its error
        try:
            return answer_for_deployment(
                rep, wl, slo, headroom=sc.constraints.headroom, seed=0, fit_percentile=None,
                find_limit=False,  # limited_by: not shown here (one run less)
            )  # fmt: skip
        except PlannerError as e:
            return e

    load_kernels()  # here, once: never first in two threads at a time
    if not curve_beside():
        try:
            rows = curve_rows()
        except PlannerError as e:
            return {**out, "error": str(e)}
        ans = answer()
    else:  # the curve in a helper thread while this one finds the answer (curve_beside)
        with ThreadPoolExecutor(1, thread_name_prefix="what-if-curve") as pool:
            curve = pool.submit(curve_rows)
            ans = answer()
            try:
                rows = curve.result()
            except PlannerError as e:
                return {**out, "error": str(e)}
    out["curve"] = rows
    out["curve_noise"] = [n for n in (curve_noise(rows, m) for m in CURVE_KEYS.values()) if n]
    try:
        q = quote_price(
            cat,
            k.gpu,
            sc.constraints.price_basis,
            provider=(sc.constraints.providers or (None,))[0],
        )
        out["usd_per_gpu_hour"] = q.usd_per_gpu_hour
        out["price_note"] = f"{q.provider}, {q.as_of}"
    except PlannerError as e:
        out["usd_per_gpu_hour"] = None
        out["price_note"] = str(e)
    if isinstance(ans, PlannerError):
        out["no_capacity"] = str(ans)
        return out
    out.update(
        answer=ans.fields(),
        replicas=ans.replicas,
        rate_per_replica=ans.planned_rate_rps,
        max_rate_per_replica=ans.max_rate_rps,
        num_gpus=ans.num_gpus,
        summary={k2: v for k2, v in ans.at_planned.items() if isinstance(v, (int, float, bool))},
        tok_s_per_gpu=ans.fields()["output_tok_s_per_gpu"],
    )
    usd = out["usd_per_gpu_hour"]
    if usd:
        out["usd_per_mtok_full"] = usd / (out["tok_s_per_gpu"] * 3600.0) * 1e6
        out["usd_per_month"] = usd * out["num_gpus"] * 730.0
        mean_out = wl.mean_output_tokens() * wl.traffic.base_mean_rps()
        out["usd_per_mtok_planned"] = usd * out["num_gpus"] / (mean_out * 3600.0) * 1e6
    return out


@st.cache_data(show_spinner=False, max_entries=64)
def evaluate_disagg(key: tuple, scenario_json: str, k: Knobs) -> dict:
    """The knobs' deployment in a prefill pool and a decode pool at the P:D ratio ``k.pd``
    (:func:`planner.serving.answer.disagg_answer`: each pool's capacity, the groups the
    scenario's need takes, one group simulated), as a row of :func:`pools.pools_html`;
    or {"error"}."""
    from planner.serving.answer import disagg_answer
    from planner.serving.disagg import Disaggregated, Pool, build_disagg

    cat = w.catalog_for(key)
    sc = w.build_scenario(key, scenario_json)
    pool = {"gpu": k.gpu, "framework": k.framework, "precision": k.precision, "tp": k.tp}
    p = Pool(**pool, kv_precision=k.kv_precision, max_num_seqs=k.max_num_seqs)
    need = sc.workload.traffic.peak() * (1.0 + sc.constraints.headroom)
    try:
        d = build_disagg(
            sc.model, Disaggregated(prefill=p, decode=p), catalog=cat, where="P:D",
            **{**sc.serving.kwargs(), "context_len": k.context, **k.spec()},
        )  # fmt: skip
        a = disagg_answer(d, sc.workload, sc.slo, need, pools.ratio_of(k.pd))
    except PlannerError as e:
        return {"error": str(e)}
    return {**pools.disagg_row(a, pool), "balanced": a.balanced, "check": a.check}
