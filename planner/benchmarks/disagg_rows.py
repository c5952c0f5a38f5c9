"""Published disaggregated (xPyD) rows: their layout parsed from the notes, and a prediction
by the composed simulation (:func:`planner.serving.disagg.simulate_disagg`).

InferenceX's multi-node rows (``data/benchmarks/public_inferencex.csv``) are tagged
``layout_unsupported: disaggregated prefill/decode (4 prefill + 8 decode GPUs, 1P/1D
workers)`` and state each pool as ``prefill TP=4 EP=4 DP-attention=true x 4 GPUs; decode
TP=8 EP=8 DP-attention=false x 8 GPUs``. :func:`disagg_layout` reads them (additively: the
rows stay as they are and the generic predictor still declines them):

* a worker (replica) of a pool has ``GPUs / workers`` GPUs; with ``DP-attention=true`` its
  attention is data-parallel over the engine's TP ranks (``DEP``: ``tp 1``,
  ``attention_dp = TP``), otherwise ``tp = TP``; ``EP`` is the expert-parallel size. A
  worker stated as ``TP=1 EP=g`` over ``g`` GPUs runs its attention one GPU per sequence
  (``attention_dp = g``, whatever the DP-attention flag says). Other shapes (a TP group
  smaller than the worker, an EP that does not divide the 256 experts: redundant experts
  of EPLB) are not predicted and say why;
* speculative decoding (``spec 'mtp'``): K and the pools that run it come from the
  ``speculative recipe (...)`` note that ``scripts/annotate_spec_recipes.py`` reads in the
  recipe of the run (``method mtp, K 3 on decode (...); prefill K 3|none``). The decode pool
  runs MTP with that K and the acceptance prior for the row's prompts
  (:func:`planner.catalog.speculative.spec_decode` with ``workload=row_workload(row)``:
  ``random`` for InferenceX's random-token datasets); the prefill pool carries the draft
  pass over the prompt where the recipe enables MTP there too. A row without the note is
  predicted without MTP and says so (``MTP not modelled``).

A ``concurrency`` row is a closed loop of ``C`` clients. The composition is open loop, so
the row is predicted at the arrival rate ``lambda`` where Little's law closes the loop:
``lambda x mean E2E(lambda) = C`` (bisection in ``lambda``; the left side grows with it),
and the throughput is ``lambda x (mean input + mean output)`` tokens per second over all
GPUs of both pools (InferenceX divides by prefill + decode GPUs).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

import planner.catalog.profile as profile_mod
from planner.benchmarks import finite_run
from planner.benchmarks.random_lengths import inferencex_random_bounds, random_dataset_tags
from planner.benchmarks.schema import cell, number, row_params
from planner.catalog.catalog import Catalog
from planner.catalog.profile import Profile, model_family
from planner.errors import PlannerError
from planner.serving.disagg import (
    Disaggregated,
    DisaggReplicas,
    Pool,
    build_disagg,
)
from planner.serving.disagg_sizing import closed_loop
from planner.workload.workload import make_requests

__all__ = [
    "build_spec_row",
    "disagg_layout",
    "is_disagg_row",
    "moe_dispatch",
    "deepgemm",
    "pool_limits",
    "predict_disagg_row",
    "spec_recipe",
]

_TAG = "disaggregated prefill/decode"
_COUNTS = re.compile(r"(\d+) prefill \+ (\d+) decode GPUs, (\d+)P/(\d+)D workers")
_POOL = re.compile(
    r"(prefill|decode) TP=(\d+) EP=(\d+) DP-attention=(true|false) x (\d+) GPUs", re.I
)
#: the note of scripts/annotate_spec_recipes.py
_SPEC_RECIPE = re.compile(
    r"speculative recipe \(.*?\): method (\w+), K (\d+) on decode \([^;]*\); prefill K (none|\d+)"
)


def spec_recipe(notes: str) -> dict[str, Any] | None:
    """``{method, k_decode, k_prefill}`` (``k_prefill`` None: the prefill pool runs no
    draft) from a row's ``speculative recipe (...)`` note, None without one."""
    m = _SPEC_RECIPE.search(notes)
    if m is None:
        return None
    kp = None if m.group(3) == "none" else int(m.group(3))
    return {"method": m.group(1), "k_decode": int(m.group(2)), "k_prefill": kp}


#: the note of scripts/annotate_pool_limits.py: each pool's limits per attention rank
_POOL_LIMITS = re.compile(
    r"pool limits \(.*?\): prefill (?P<prefill>[^;(]*)\(recipe prefill section\); "
    r"decode (?P<decode>[^;(]*)\(recipe decode section\)"
)
#: the limits of a pool the prediction applies: the prefill pool's batch and token budget,
#: the decode pool's batch (its ``max_num_tokens`` is the verify width x batch, which the
#: decode steps of the simulation do not meter)
_APPLIED = {"prefill": ("max_num_seqs", "max_num_batched_tokens"), "decode": ("max_num_seqs",)}


def pool_limits(notes: str) -> dict[str, dict[str, int]] | None:
    """``{prefill: {...}, decode: {...}}``: the limits per attention rank that a row's
    ``pool limits (...)`` note states (``max_num_seqs``, ``max_num_batched_tokens``; a pool
    with ``engine defaults`` is empty), None without the note."""
    m = _POOL_LIMITS.search(notes)
    if m is None:
        return None
    return {
        pool: {
            k: int(v)
            for k, v in re.findall(r"(max_num_seqs|max_num_batched_tokens) (\d+)", m[pool])
        }
        for pool in ("prefill", "decode")
    }


#: the note of scripts/annotate_moe_dispatch.py: each SGLang pool's --moe-a2a-backend
_MOE_DISPATCH = re.compile(r"MoE dispatch \(.*?\): prefill ([\w-]+), decode ([\w-]+)")


def moe_dispatch(notes: str) -> dict[str, bool] | None:
    """``{prefill, decode}``: whether each pool's attention-DP ranks send the routed tokens
    all-to-all (a ``--moe-a2a-backend`` other than ``none``) from a row's ``MoE dispatch
    (...)`` note, None without one (the layout's default, the all-to-all)."""
    m = _MOE_DISPATCH.search(notes)
    if m is None:
        return None
    return {"prefill": m.group(1) != "none", "decode": m.group(2) != "none"}


#: the note of scripts/annotate_deepgemm.py: each SGLang pool's SGLANG_ENABLE_JIT_DEEPGEMM
_DEEPGEMM = re.compile(r"DeepGEMM \(.*?\): prefill (on|off), decode (on|off)")


def deepgemm(notes: str) -> dict[str, bool] | None:
    """``{prefill, decode}``: whether each pool runs its block-FP8 dense linears on DeepGEMM
    from a row's ``DeepGEMM (...)`` note (``off``: the recipe's environment sets
    ``SGLANG_ENABLE_JIT_DEEPGEMM`` false), None without one (the engine's default, on)."""
    m = _DEEPGEMM.search(notes)
    if m is None:
        return None
    return {"prefill": m.group(1) == "on", "decode": m.group(2) == "on"}


def is_disagg_row(row: Mapping[str, Any]) -> bool:
    return _TAG in cell(row, "notes")


def disagg_layout(notes: str) -> dict[str, Any] | str:
    """``{x, y, prefill: {tp, ep, attention_dp}, decode: {...}, mtp, spec}`` from a row's
    notes (``spec``: :func:`spec_recipe`), or the reason it cannot be read."""
    m = _COUNTS.search(notes)
    if not m:
        return "disaggregated row without '<n> prefill + <m> decode GPUs, <x>P/<y>D workers'"
    p_gpus, d_gpus, x, y = (int(v) for v in m.groups())
    pools: dict[str, dict[str, int]] = {}
    for name, tp, ep, dpa, gpus in _POOL.findall(notes):
        tp, ep, gpus = int(tp), int(ep), int(gpus)
        workers = x if name.lower() == "prefill" else y
        g = gpus // workers if gpus % workers == 0 else 0
        dp = dpa.lower() == "true"
        if g and g == tp:
            pools[name.lower()] = {"tp": 1 if dp else tp, "attention_dp": tp if dp else 1, "ep": ep}
        elif g and tp == 1 and ep == g:
            # "TP=1 EP=8 x 8 GPUs" (SGLang on MI355X): attention on one GPU per sequence,
            # i.e. data-parallel over the worker's GPUs, experts over all of them (DEP)
            pools[name.lower()] = {"tp": 1, "attention_dp": g, "ep": ep}
        else:
            return (
                f"{name} pool: {gpus} GPUs over {workers} workers is not one TP={tp} (or "
                f"TP=1 EP={ep}) group per worker"
            )
    if set(pools) != {"prefill", "decode"}:
        return "disaggregated row without both 'prefill TP=..' and 'decode TP=..' pools"
    if x * pools["prefill"]["tp"] * pools["prefill"]["attention_dp"] != p_gpus:
        return "prefill GPUs do not match the workers' layout"  # pragma: no cover
    mtp = "spec 'mtp'" in notes
    lim = pool_limits(notes) or {}
    for name in ("prefill", "decode"):
        for k in _APPLIED[name]:
            if k in lim.get(name, {}):
                pools[name][k] = lim[name][k]
    for name, a2a in (moe_dispatch(notes) or {}).items():
        if not a2a:
            pools[name]["moe_all_to_all"] = False
    for name, on in (deepgemm(notes) or {}).items():
        if not on:
            pools[name]["deepgemm"] = False
    return {"x": x, "y": y, **pools, "mtp": mtp, "spec": spec_recipe(notes) if mtp else None}


_NOMINAL = re.compile(
    r"random dataset: nominal input (\d+) / output (\d+) tokens, range ratio ([\d.]+)"
)


#: a client that sends fixed-length prompts without ``--ignore-eos`` (outputs end at the
#: model's EOS): the row states the measured means (``scripts/dstack_pd_rows.py``)
_MEANS = re.compile(r"mean input ([\d.]+) tokens; mean generated ([\d.]+) of \d+ requested tokens")


def _lengths(row: Mapping[str, Any]) -> tuple[tuple[int, int], tuple[int, int]] | str:
    """Inclusive (input, output) bounds the client draws uniformly from: InferenceX's random
    dataset, or one fixed length each where the notes state measured means (``mean input I
    tokens; mean generated O of N requested tokens``: outputs that ended at EOS are simulated
    at their mean length, a chosen approximation, not their spread)."""
    notes = cell(row, "notes")
    if m := _MEANS.search(notes):
        i, o = (max(round(float(v)), 1) for v in m.groups())
        return (i, i), (o, o)
    tags = random_dataset_tags(notes)
    if not isinstance(tags, dict) or "ratio" not in tags:
        m = _NOMINAL.search(notes)
        if not m:
            return "random-dataset lengths and range ratio not stated"
        tags = {"input": float(m.group(1)), "output": float(m.group(2)), "ratio": float(m.group(3))}
    return tuple(  # type: ignore[return-value]
        inferencex_random_bounds(int(tags[k]), tags["ratio"]) for k in ("input", "output")
    )


def build_row(
    row: Mapping[str, Any], catalog: Catalog, profile: Profile | None = None, **spec: Any
) -> tuple[DisaggReplicas, dict] | str:
    """The row's xPyD deployment (both pools with the calibrated efficiency of its GPU,
    framework and precision, from ``profile``, e.g. one fitted without the row's source;
    None: the bundled profile; ``spec``: speculative decoding keywords of
    :func:`planner.serving.build_replica`), or the reason it cannot be built."""
    lay = disagg_layout(cell(row, "notes"))
    if isinstance(lay, str):
        return lay
    hw, fw, prec = cell(row, "hardware"), cell(row, "framework"), cell(row, "precision")
    try:
        m = catalog.model_ref(cell(row, "model"), None)
        gpu = catalog.gpu(hw)
        params, _ = row_params(row, catalog, gpu.id, catalog.precision(prec).id,
                               model_family(m), profile)  # fmt: skip
        seqs, btok = catalog.framework(fw).scheduler_defaults(
            gpu, cell(row, "framework_version"), cell(row, "as_of")
        )
        pools = {
            k: Pool(gpu=gpu.id, framework=fw, precision=prec, pp=1, **lay[k])
            for k in ("prefill", "decode")
        }
        d = build_disagg(m, Disaggregated(**pools, x=lay["x"], y=lay["y"]), catalog=catalog,
                         where="row", params=params, max_num_seqs=seqs,
                         max_num_batched_tokens=btok, **spec)  # fmt: skip
    except (PlannerError, ValueError) as e:
        return str(e).splitlines()[0]
    return d, lay


#: metrics of a disaggregated ``concurrency`` row predicted from its closed-loop run
METRICS = ("total_tok_s", "output_tok_s_total", "tpot_ms_median", "ttft_ms_median", "e2e_ms_median")
#: one closed-loop run per published point, shared by the point's metric rows
_RUNS: dict[tuple, tuple[dict[str, float], str] | str] = {}


def predict_disagg_row(
    row: Mapping[str, Any],
    catalog: Catalog,
    *,
    profile: Profile | None = None,
    n_min: int = 600,
    seed: int = 20240601,
    iters: int = 14,
) -> tuple[float, str] | str:
    """Predicted value of a disaggregated ``concurrency`` row in its metric (:data:`METRICS`:
    throughputs [tok/s] over all GPUs of both pools, medians [ms] over the steady part of the
    run, the first quarter and last eighth of the requests left out, as ``closed_loop``'s
    Little's-law mean) and a note, or the reason it is not predicted (MLPerf Server /
    Interactive rows: :func:`predict_disagg_rate_row`). ``profile``: as :func:`build_row`."""
    if cell(row, "mode") in ("server", "interactive"):
        return predict_disagg_rate_row(row, catalog, profile=profile, seed=seed)
    metric = cell(row, "metric")
    if cell(row, "mode") == "static_batch" and "pool measured alone" in cell(row, "notes"):
        return (
            "one pool measured alone in a static batch (the other assumed unlimited), not an "
            "xPyD run: no composition to simulate"
        )
    if cell(row, "mode") != "concurrency" or metric not in METRICS:
        return f"only concurrency rows of {', '.join(METRICS)} are predicted"
    conc = number(row, "concurrency")
    if not conc:
        return "no concurrency"
    lens = _lengths(row)
    if isinstance(lens, str):
        return lens
    # a None profile is the default one at call time (scripts swap it for a held-out fit)
    default = str(profile_mod.DEFAULT_PROFILE) if profile is None else ""
    key = (
        id(catalog), id(profile), default, n_min, seed, iters, conc, lens,
        repr(disagg_layout(cell(row, "notes"))),
        *(cell(row, k) for k in ("hardware", "framework", "precision", "model",
                                 "framework_version", "as_of")),
    )  # fmt: skip
    if key not in _RUNS:
        _RUNS[key] = _run(row, catalog, profile, conc, lens, n_min, seed, iters)
    got = _RUNS[key]
    if isinstance(got, str):
        return got
    value, note = got[0][metric], got[1]
    if metric in ("total_tok_s", "output_tok_s_total") and finite_run.applies(cell(row, "notes")):
        f = finite_run.drain_factor(conc, lens[1], got[0]["_ttft_mean_s"], got[0]["_tpot_mean_s"])
        value, note = value * f, f"{note}; finite run of {finite_run.PROMPTS_PER_CLIENT} C x{f:.3f}"
    return value, note


def build_spec_row(
    row: Mapping[str, Any], catalog: Catalog, profile: Profile | None = None
) -> tuple[DisaggReplicas, dict] | str:
    """:func:`build_row` with the recipe's speculative decoding (:func:`spec_recipe`): the
    decode pool with its K and the acceptance prior for the row's prompts, the prefill pool
    with its own K (the draft pass over the prompt) or none."""
    from planner.benchmarks.speculative_rows import row_workload

    lay = disagg_layout(cell(row, "notes"))
    sp = lay.get("spec") if isinstance(lay, dict) else None
    if sp is None:
        return build_row(row, catalog, profile)

    def kw(k: int | None) -> dict[str, Any]:
        if k is None:
            return {}
        return {"spec_method": sp["method"], "spec_tokens": k, "spec_workload": row_workload(row)}

    dec = build_row(row, catalog, profile, **kw(sp["k_decode"]))
    if isinstance(dec, str) or sp["k_prefill"] == sp["k_decode"]:
        return dec
    pre = build_row(row, catalog, profile, **kw(sp["k_prefill"]))
    if isinstance(pre, str):
        return pre
    return replace(dec[0], prefill=pre[0].prefill), dec[1]


def _spec_note(d: DisaggReplicas, lay: dict) -> str:
    if not lay["mtp"]:
        return ""
    s = d.decode.spec
    if s is None:
        return "; MTP not modelled (K not in the notes)"
    pre = d.prefill.spec
    return f"; decode {s.label()} (prior for the row's prompts), prefill " + (
        f"draft K={pre.spec_tokens}" if pre is not None else "no draft"
    )


def _run(row, catalog, profile, conc, lens, n_min, seed, iters) -> tuple[dict, str] | str:
    built = build_spec_row(row, catalog, profile)
    if isinstance(built, str):
        return built
    d, lay = built
    rng = np.random.default_rng(seed)
    n = int(max(n_min, 3 * conc))
    i = rng.integers(lens[0][0], lens[0][1] + 1, n)
    o = np.maximum(rng.integers(lens[1][0], lens[1][1] + 1, n), 1)
    gaps = rng.exponential(1.0, n)
    rate, res = closed_loop(d, make_requests(np.cumsum(gaps), i, o), float(conc), iters=iters)
    keep = slice(n // 4, n - n // 8)
    values = {
        "total_tok_s": rate * float(i.mean() + o.mean()),
        "output_tok_s_total": rate * float(o.mean()),
        "tpot_ms_median": float(np.nanmedian(res.tpot_s[keep])) * 1e3,
        "ttft_ms_median": float(np.median(res.ttft_s[keep])) * 1e3,
        "e2e_ms_median": float(np.median(res.e2e_s[keep])) * 1e3,
        # the steady means, for the finite run's drain (planner.benchmarks.finite_run)
        "_ttft_mean_s": float(np.mean(res.ttft_s[keep])),
        "_tpot_mean_s": float(
            (np.mean(res.e2e_s[keep]) - np.mean(res.ttft_s[keep])) / max(o.mean() - 1.0, 1.0)
        ),
    }
    cl = res.meta.get("closed_loop")
    how = (
        f"at the pools' served rate {rate:.3g} req/s (Little's law gave {cl['little_rate_rps']:.3g})"
        if cl
        else f"by Little's law at {rate:.3g} req/s"
    )
    note = (
        f"{d.spec.label()} ({d.num_gpus} GPUs, link {d.link_kind}); closed loop of {int(conc)} "
        f"{how}, TPOT mean {np.nanmean(res.tpot_s) * 1e3:.1f} ms, "
        f"TTFT mean {np.mean(res.ttft_s) * 1e3:.0f} ms" + _spec_note(d, lay)
    )
    return values, note


_RATE_METRICS = {
    "ttft_ms_mean": ("ttft_mean_s", 1e3),
    "ttft_ms_p99": ("ttft_p99_s", 1e3),
    "tpot_ms_mean": ("tpot_mean_s", 1e3),
    "tpot_ms_p99": ("tpot_p99_s", 1e3),
}


def predict_disagg_rate_row(
    row: Mapping[str, Any],
    catalog: Catalog,
    *,
    profile: Profile | None = None,
    seed: int = 20240601,
    n_min: int = 3000,
) -> tuple[float, str] | str:
    """A disaggregated MLPerf Server / Interactive row (Poisson at ``request_rate`` over one
    xPyD group, the dataset's length distribution): ``output_tok_s_total`` (tokens generated
    per second inside the steady window), TTFT or TPOT [ms]; a note, or the reason.

    Speculative decoding (``spec 'mtp'`` with K in the notes) runs in both pools with the
    catalog's published acceptance length for that K (``data/speculative.yaml``)."""
    from planner.benchmarks.serving_rows import (
        dataset_lengths,
        steady_requests,
        steady_token_rate,
        steady_window,
    )
    from planner.benchmarks.speculative_rows import spec_of_row
    from planner.catalog.speculative import spec_decode
    from planner.serving.disagg import simulate_disagg

    metric = cell(row, "metric")
    if metric != "output_tok_s_total" and metric not in _RATE_METRICS:
        return f"metric {metric} of a disaggregated rate row is not predicted"
    rate = number(row, "request_rate")
    if not rate or not np.isfinite(rate) or rate <= 0:
        return "no finite request_rate"
    lay = disagg_layout(cell(row, "notes"))
    if isinstance(lay, str):
        return lay
    spec_kw: dict[str, Any] = {}
    spec_note = ""
    if lay["mtp"]:
        sp = spec_of_row(row)
        if sp is None or sp[1] is None:
            return "speculative decoding without K in the notes"
        try:
            s = spec_decode(catalog.model_ref(cell(row, "model"), None), sp[0], sp[1])
        except PlannerError as e:
            return str(e)
        spec_kw = {"spec_method": s.method, "spec_tokens": s.spec_tokens,
                   "acceptance_length": s.acceptance_length}  # fmt: skip
        spec_note = f"; {s.label()} (published AL)"
    built = build_row(row, catalog, profile, **spec_kw)
    if isinstance(built, str):
        return built
    d, _ = built
    m = catalog.model_ref(cell(row, "model"), None)
    ds = dataset_lengths(row, m.id)
    if isinstance(ds, str):
        return ds
    ilen, olen, note_len = ds
    rng = np.random.default_rng(seed)

    def sim(n: int):
        a = np.cumsum(rng.exponential(1.0 / rate, n))
        return simulate_disagg(d, make_requests(a, ilen.sample(n, rng), olen.sample(n, rng)))

    n = n_min
    res = sim(n)
    n2 = steady_requests(res, n)
    if n2 > n:
        n = n2
        res = sim(n)
    lo_t, hi_t, win = steady_window(res)
    if metric == "output_tok_s_total":
        val = steady_token_rate(res, lo_t, hi_t)
    else:
        key, k = _RATE_METRICS[metric]
        s = res.summary(warmup_frac=0.2, cooldown_frac=0.1) if win is None else (
            res.summary(mask=win)
        )  # fmt: skip
        val = float(s[key]) * k
    note = (
        f"{d.spec.label()} ({d.num_gpus} GPUs, link {d.link_kind}); Poisson at {rate:.4g} req/s, "
        f"{n} requests, scored after warm-up; {note_len}{spec_note}"
    )
    return val, note


def disagg_accuracy(
    rows: list[Mapping[str, Any]],
    catalog: Catalog,
    profile_for: Callable[[str], Profile | None] | None = None,
) -> list[dict[str, Any]]:
    """Each disaggregated row predicted: ``id, source, hardware, framework, concurrency,
    mtp, value, predicted, ape`` (absolute percentage error) or ``reason``.

    ``profile_for``: the profile of a row's source (e.g. fitted without that source: held
    out; it must return a profile, a missing one is the row's ``reason``); None: the bundled
    profile for every row (in sample for the sources it was fitted on)."""
    out = []
    for r in rows:
        if not is_disagg_row(r):
            continue
        lay = disagg_layout(cell(r, "notes"))
        rec: dict[str, Any] = {
            k: cell(r, k)
            for k in ("id", "source", "hardware", "framework", "concurrency", "isl", "metric")
        }
        rec["mtp"] = bool(isinstance(lay, dict) and lay["mtp"])
        rec["value"] = number(r, "value")
        prof = profile_for(cell(r, "source")) if profile_for is not None else None
        if profile_for is not None and prof is None:
            p: tuple[float, str] | str = "no profile fitted without this row's source"
        else:
            p = predict_disagg_row(r, catalog, profile=prof)
        if isinstance(p, str):
            rec["reason"] = p
        else:
            rec["predicted"], rec["note"] = p
            rec["ape"] = abs(p[0] / rec["value"] - 1)
            rec["signed"] = p[0] / rec["value"] - 1
        out.append(rec)
    return out


def summarize(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """MdAPE and median signed error of :func:`disagg_accuracy`'s rows by source, metric and
    speculative decoding (``mtp``), plus the not-predicted count."""
    groups: dict[tuple[str, str, bool], list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["source"], r.get("metric", ""), r["mtp"]), []).append(r)
    out = []
    for (src, metric, mtp), rs in sorted(groups.items()):
        ok = [r for r in rs if "ape" in r]
        out.append(
            {
                "source": src,
                "metric": metric,
                "mtp": mtp,
                "rows": len(rs),
                "predicted": len(ok),
                "mdape": float(np.median([r["ape"] for r in ok])) if ok else None,
                "median_signed": float(np.median([r["signed"] for r in ok])) if ok else None,
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m planner.benchmarks.disagg_rows [CSV ...]``: predict every disaggregated
    row (default: data/benchmarks/public_inferencex.csv) and print the errors by source and
    metric."""
    import sys

    from planner.benchmarks.io import read_rows
    from planner.catalog.catalog import load_catalog
    from planner.report import emit

    paths = (argv if argv is not None else sys.argv[1:]) or [
        "data/benchmarks/public_inferencex.csv"
    ]
    cat = load_catalog()
    results = []
    for p in paths:
        results += disagg_accuracy(read_rows(p)[0], cat)
    emit(summarize(results), "table")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
