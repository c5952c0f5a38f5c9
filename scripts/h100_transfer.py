#!/usr/bin/env python3
"""The reference engine on a GPU the planner has no fit for: the H100 serving runs
(``data/benchmarks/reference_h100_serving.csv``, held out of every fit) against the serving
simulator with the parameters the planner transfers to the H100.

The runs are the H200's (``reference_h200_serving.csv``): same engine, traces and settings,
on one H100 SXM. Two transfer rules, both from the bundled profile (fitted on H200 data
only, plus public rows of other engines):

* before: the pooled rule (``resolve_params(..., siblings=False)``): the ``pytorch`` node of
  every Hopper GPU and precision (the H200's bf16 and fp8 fits pooled);
* after: the nearest sibling (``siblings=True``): ``pytorch``/H200/bf16, with the H100's
  own datasheet peaks and bandwidth; the weight reads at the rate ratio of the two GPUs'
  batch-1 decode steps (``step_weight_ratio``), the GEMMs at the rate ratio of their prefill
  steps (``step_compute_ratio``), the KV reads keeping the H200's per-kernel latency in
  seconds and scaling only their streaming part (``planner.catalog.bandwidth``).

The runs scored are those below 80 % of the analytic saturation rate of one fixed transfer
(the nearest sibling without the prefill-step ratio), whatever rule is scored.

Usage::

    python scripts/h100_transfer.py            # print the table
    python scripts/h100_transfer.py --write    # also replace its section of docs/accuracy.md
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.calibration.sections import put_section  # noqa: E402
from planner.catalog import load_catalog, resolve_params  # noqa: E402
from planner.catalog.host import (  # noqa: E402
    REPEAT_OF,
    host_of_gpu,
    host_ratio,
    scale_host_terms,
    serving_host_ratios,
    serving_log_host,
    step_sweep_host,
)
from planner.catalog.profile import load_profile  # noqa: E402
from planner.catalog.siblings import nearest_sibling  # noqa: E402
from planner.serving import build_replica, simulate, steady_state  # noqa: E402
from planner.workload import Workload  # noqa: E402

GPU, PREC, FW = "nvidia-h100-sxm", "bf16", "pytorch"
DATA = ROOT / "data" / "benchmarks" / "reference_h100_serving.csv"
#: the repeat runs of 2026-12-07 on another H100 machine start (held out the same way)
REPEAT = ROOT / "data" / "benchmarks" / "reference_h100_repeat_serving.csv"
LOGS = ROOT / "data" / "benchmarks" / "serving_raw"
ENGINE = dict(
    max_num_seqs=256,
    max_num_batched_tokens=2048,
    block_size=16,
    prefix_caching=False,
    chunked_prefill=True,
)
METRICS = (
    ("output_tok_s_total", "throughput", "output_tok_s", 1.0),
    ("ttft_ms_median", "TTFT p50", "ttft_p50_s", 1e3),
    ("ttft_ms_p99", "TTFT p99", "ttft_p99_s", 1e3),
    ("tpot_ms_median", "TPOT p50", "tpot_p50_s", 1e3),
    ("tpot_ms_p99", "TPOT p99", "tpot_p99_s", 1e3),
    ("e2e_ms_p99", "E2E p99", "e2e_p99_s", 1e3),
)
#: issue 32's targets: TPOT P50 and E2E P99 within 8 %, throughput within 5 %
TARGET = {"throughput": 5.0, "TPOT p50": 8.0, "E2E p99": 8.0}
BEGIN, END = "<!-- h100-transfer:begin -->", "<!-- h100-transfer:end -->"
MODEL_NAMES = {"llama-3.2-1b": "Llama-3.2-1B", "llama-3.1-8b": "Llama-3.1-8B",
               "qwen2.5-14b": "Qwen2.5-14B"}  # fmt: skip


def measured_runs(path: Path = DATA) -> dict[tuple[str, str, str], dict[str, float]]:
    """(model, scenario, rate) -> metric -> measured value (scenario as the run names it:
    ``chatb`` is a repeat of the chat trace, :data:`planner.catalog.host.REPEAT_OF`)."""
    runs: dict[tuple[str, str, str], dict[str, float]] = {}
    with path.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            m = re.search(r"/(\w+)_rate([\d.]+)\.csv", r["notes"])
            if m:
                runs.setdefault((r["model"], m.group(1), m.group(2)), {})[r["metric"]] = float(
                    r["value"]
                )
    return runs


def simulate_run(rep, scen: str, rate: str) -> tuple[dict[str, float], float]:
    scen = REPEAT_OF.get(scen, scen)
    trace = ROOT / "bench" / "traces" / f"{scen}_rate{rate}.csv"
    wl = Workload.model_validate(
        {
            "traffic": {"arrival": "trace", "trace_path": str(trace)},
            "input_tokens": {"kind": "trace"},
            "output_tokens": {"kind": "trace"},
        }
    )
    n = sum(1 for _ in trace.open()) - 1
    s = simulate(rep, wl, n_requests=n, rate_rps=None).summary()
    return s, float(rate) / steady_state(selection_replica(rep), wl, 1.0).saturation_rps


_LOAD_REPS: dict = {}


def selection_replica(rep):
    """The replica whose analytic saturation rate gives a run's load, which picks the runs
    scored (below 80 %): one fixed transfer for every rule scored here, the nearest sibling
    without the prefill-step ratio (``STEP_COMPUTE_RULE`` off: the 15 runs scored before it),
    so that a rule does not choose its own runs."""
    import planner.catalog.bandwidth as bw

    m = rep.sm.model.id
    if m not in _LOAD_REPS:
        was, bw.STEP_COMPUTE_RULE = bw.STEP_COMPUTE_RULE, False
        try:
            p, prov = resolve_params(GPU, FW, PREC, siblings=True, family="dense")
        finally:
            bw.STEP_COMPUTE_RULE = was
        _LOAD_REPS[m] = build_replica(m, GPU, PREC, FW, params=p, params_source=prov, **ENGINE)
    return _LOAD_REPS[m]


def decode_gpu_s(sm, d) -> list[float]:
    """The step model's GPU time of each graph decode iteration of log ``d`` [s]: the step
    (weights, KV, overheads) plus the longest sequence's wait (``straggler_time``)."""
    n = d["n_decode"].to_numpy(float)
    kv = d["decode_ctx_tokens"].to_numpy(float) + n
    b = sm.step(n, n, d["logits"].to_numpy(float), kv, kv)
    strag = sm.straggler_time(n, d["decode_ctx_max"], d["decode_ctx_tokens"])
    return list(b.time_s + strag)


def host_lines(reps=None) -> list[str]:
    """The host's share, read from the two machines' iteration logs, and the GPU time of a
    graph decode iteration predicted on the H100 by each rule (``reps``: (rule, model) ->
    replica) against the H100 log's (a diagnostic: the H100 log is held out of the fit)."""
    import pandas as pd

    logs = ROOT / "data" / "benchmarks" / "serving_raw"
    med, pred = {}, {}
    for gpu in ("h200", "h100"):
        d = pd.read_csv(logs / f"reference_{gpu}_iterations.csv.gz")
        d["host_s"] = d["sched_s"] + d["prep_launch_s"] + d["book_s"]
        graph, eager = d[d["graph_batch"] > 0], d[d["graph_batch"] == 0]
        med[gpu] = (
            graph.groupby("model")["host_s"].median() * 1e3,
            graph.groupby("model")["gpu_span_s"].median() * 1e3,
            eager.groupby("model")["prep_launch_s"].median() * 1e3,
        )
        if gpu == "h100" and reps:
            dec = graph[graph["n_prefill_seqs"] == 0]
            for (rule, m), rep in reps.items():
                x = dec[dec["model"] == m]
                ratio = [
                    p / s for p, s in zip(decode_gpu_s(rep.sm, x), x["gpu_span_s"], strict=True)
                ]
                pred[rule, m] = median(ratio) - 1
    out = [
        "Where the rest of the error is: the host. The serving terms (host time per iteration "
        "and per sequence, eager dispatch per layer) are the H200 machine's, and the H100 "
        "machine's CPU is faster. Medians per iteration from the two iteration logs "
        "(`data/benchmarks/serving_raw/reference_{h200,h100}_iterations.csv.gz`; the H100 log "
        "is held out: read here, never fitted), H200 / H100 [ms]:",
        "",
        "| model | host time, graph decode iteration | GPU span, graph decode iteration | "
        "launch time, eager mixed iteration |",
        "|---|---|---|---|",
    ]
    for m in med["h200"][0].index:
        cells = [f"{a[m]:.2f} / {b[m]:.2f}" for a, b in zip(med["h200"], med["h100"], strict=True)]
        out.append(f"| {MODEL_NAMES.get(m, m)} | " + " | ".join(cells) + " |")
    if pred:
        out += [
            "",
            "The GPU part: the step model's GPU time of each graph decode iteration of the H100 "
            "log (weights, KV, fixed terms and the longest sequence's wait, with the transferred "
            "parameters) against its measured GPU span, median error after / with the H200's "
            "efficiencies as plain fractions of the H100's datasheet bandwidth (the sibling rule "
            "before the latency was kept):",
            "",
            "| model | " + " | ".join(MODEL_NAMES.get(m, m) for m in med["h100"][0].index) + " |",
            "|---|" + "---|" * len(med["h100"][0].index),
            "| GPU time, graph decode iteration | "
            + " | ".join(
                f"{pred.get(('after', m), float('nan')):+.1%} / "
                f"{pred.get(('datasheet', m), float('nan')):+.1%}"
                for m in med["h100"][0].index
            )
            + " |",
        ]
    out += [
        "",
        "The GPU time of a graph decode iteration grows on the H100 by 1.10-1.25x (less than "
        "the 1.43x of the datasheet bandwidths: not all of it is bandwidth-bound: on the H200's "
        "GEMV micro-benchmarks each kernel spends about 5 us in ramp and tail whatever its size, "
        "so a 34 MB weight read reaches 2.6 TB/s and a 1 GB one 4.35 TB/s; the reference "
        "engine's batch-1 decode steps take 1.36x longer for their weights, and the transfer "
        "moves the weight reads by that, subsection above), while the "
        "host time shrinks to 0.27-0.59x: a small model, whose iterations are mostly host "
        "time, decodes as fast or faster on the H100 machine than on the H200 machine "
        "(Llama-3.2-1B, chat at 50 req/s: TPOT p50 2.6 ms against 3.4 ms). A transfer between "
        "GPUs cannot know another machine's CPU; the host terms are a property of the serving "
        "host, not of the GPU.",
    ]
    return out


def step_rows_lines(after, datasheet) -> list[str]:
    """The transferred step model against the reference engine's decode steps on the H100
    (``reference_h100_steps_micro.csv``: static batches, CUDA graphs, never fitted), with the
    KV reads moved by the rule (``after``) and as the H200's datasheet fraction."""
    from planner.catalog.bandwidth import kv_stream_fits
    from planner.engine.step import step_model

    cat = load_catalog()
    g = cat.gpu(GPU)
    path = ROOT / "data" / "benchmarks" / "reference_h100_steps_micro.csv"
    with path.open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["metric"] == "decode_step_s"]
    groups: dict[str, dict[str, list[float]]] = {}
    for label, p in (("after", after), ("before", datasheet)):
        for r in rows:
            b, ctx = int(r["batch"]), int(r["context_len"])
            sm = step_model(r["model"], g, PREC, params=p, catalog=cat)
            e = abs(sm.step_time(b, b, b, b * (ctx + 1), b * (ctx + 1)) / float(r["value"]) - 1)
            for k in (
                "all",
                "KV-heavy (batch x context >= 64k tokens)" if b * ctx >= 65536 else "light",
            ):
                groups.setdefault(k, {}).setdefault(label, []).append(e * 100)
    fits = kv_stream_fits()
    k100, k200 = fits[GPU], fits["nvidia-h200-sxm"]
    out = [
        "KV reads: the marginal KV read rate of the reference engine's decode step (slope of the "
        "step time over the KV bytes at a fixed batch of 16-512, median over (model, batch)) is "
        f"{k200.stream_bytes_s / 1e12:.2f} TB/s on the H200 ({k200.n_series} series, "
        f"`{k200.source}`) and {k100.stream_bytes_s / 1e12:.2f} TB/s on the H100 "
        f"({k100.n_series} series, `{k100.source}`, device run of 2026-12-07, never fitted): "
        "0.69-0.71x the H200's per (model, batch) but Llama-3.2-1B at batch 16 (0.81x): the datasheet "
        "ratio (0.698). The KV efficiency moves by "
        f"the weight-read rule with these rates: {datasheet.kv_mem_eff:.3f} -> "
        f"{after.kv_mem_eff:.3f}. The transferred step model against those H100 decode steps, "
        "median absolute error after / before (KV as the H200's datasheet fraction):",
        "",
        "| decode steps | n | after | before |",
        "|---|---|---|---|",
    ]
    for k, v in groups.items():
        out.append(
            f"| {k} | {len(v['after'])} | {median(v['after']):.1f}% | {median(v['before']):.1f}% |"
        )
    return out


def sensitivity_params(p) -> dict:
    """The transferred parameters with one term moved (a diagnosis, not a rule): KV reads at
    the datasheet bandwidth (``kv_mem_eff`` 1: no KV transfer can do more); the scheduler terms
    (per iteration and per sequence) halved; the eager dispatch per layer of mixed iterations
    halved (the H100 machine's host time per graph decode iteration is 0.27-0.59x the H200
    machine's in the two logs, its eager launch time of a mixed iteration 0.53-0.72x, medians
    per model)."""
    return {
        "KV at datasheet": p.with_(kv_mem_eff=1.0),
        "scheduler halved": p.with_(
            sched_overhead_s=p.sched_overhead_s / 2,
            sched_seq_overhead_s=p.sched_seq_overhead_s / 2,
        ),
        "eager dispatch halved": p.with_(serving_eager_layer_s=p.serving_eager_layer_s / 2),
    }


def run_parts(reps, sens, load) -> list[str]:
    """Per run: the predicted decode iteration's parts at the run's own batch and context
    (medians over the graph decode iterations of the held-out H100 log: read, never fitted)
    against its measured GPU span and host time, and the TPOT p50 error of the run with each
    term moved (``sens``: label -> {(model, scenario, rate): error})."""
    import pandas as pd

    d = pd.read_csv(
        ROOT / "data" / "benchmarks" / "serving_raw" / "reference_h100_iterations.csv.gz"
    )
    d = d[(d["graph_batch"] > 0) & (d["n_prefill_seqs"] == 0)]
    labels = list(sens)
    out = [
        "Where each run's TPOT p50 miss sits. Per run: the median batch and context of its graph "
        "decode iterations in the H100 log (held out: read here, never fitted); the step model's "
        "parts of one such iteration with the transferred parameters [ms]: weights (GEMMs), KV "
        "reads (attention), fixed per-step and per-layer terms, the longest sequence's wait, and "
        "the host (scheduler terms, fitted on the H200 machine); the measured GPU span and host "
        "time (`sched_s + prep_launch_s + book_s`) of those iterations; then the run's TPOT p50 "
        "error as transferred and with one term moved: "
        + "; ".join(f"**{k}**" for k in labels[1:])
        + ".",
        "",
        "| model | scenario | rate | load | batch | ctx/seq | weights | KV | fixed | wait | host "
        "| GPU pred / meas | host pred / meas | "
        + " | ".join(f"TPOT p50 {k}" for k in labels)
        + " |",
        "|" + "---|" * (13 + len(labels)),
    ]
    for key in sorted(
        sens[labels[0]], key=lambda k: (list(MODEL_NAMES).index(k[0]), k[1], float(k[2]))
    ):
        m, scen, rate = key
        x = d[(d["model"] == m) & (d["scenario"] == scen) & (d["rate"] == float(rate))]
        if x.empty:
            continue
        n = float(x["n_decode"].median())
        ctx = float((x["decode_ctx_tokens"] / x["n_decode"]).median())
        sm = reps[m].sm
        kv = n * (ctx + 1)
        b = sm.step(n, n, n, kv, kv)
        wait = float(sm.straggler_time(n, float(x["decode_ctx_max"].median()), n * ctx))
        host = reps[m].engine.host_time_s(n)
        gpu = float(b.time_s) + wait
        h_meas = float((x["sched_s"] + x["prep_launch_s"] + x["book_s"]).median())
        cells = [
            MODEL_NAMES[m],
            scen,
            rate,
            f"{load[key]:.0%}",
            f"{n:.0f}",
            f"{ctx:,.0f}",
            *(f"{float(v) * 1e3:.2f}" for v in (b.t_gemm_s, b.t_attn_s, b.t_overhead_s)),
            f"{wait * 1e3:.2f}",
            f"{host * 1e3:.2f}",
            f"{gpu * 1e3:.2f} / {float(x['gpu_span_s'].median()) * 1e3:.2f}",
            f"{host * 1e3:.2f} / {h_meas * 1e3:.2f}",
            *(f"{sens[k][key]:+.1%}" for k in labels),
        ]
        out.append("| " + " | ".join(cells) + " |")
    return out


def host_ratio_lines(cat, models, runs, after, donor_gpu) -> list[str]:
    """The host terms of the transferred parameters (fitted on the H200 serving host) moved
    by the host ratio of two measured machines (``planner.catalog.host``: a host
    micro-benchmark file if one holds both GPUs' machines, else the step sweeps' host-bound
    eager prefill rows; never the serving logs); the runs below 80 % of saturation scored as
    transferred / moved, and with the ratio's low and high end (its spread over benches)."""
    tgt, don = host_of_gpu(GPU), host_of_gpu(donor_gpu)
    if tgt is None or don is None:  # no host micro-benchmark: the step sweeps' hosts
        bench = ROOT / "data" / "benchmarks"
        tgt = step_sweep_host(bench / "reference_h100_steps_micro.csv", GPU,
                              "the H100 step-sweep machine (2026-12-07)")  # fmt: skip
        don = step_sweep_host(bench / "reference_h200.csv", donor_gpu,
                              "the H200 step-sweep machine (2026-12-01)")  # fmt: skip
    if tgt is None or don is None:
        return ["No host record for both machines: the host terms stay the donor host's."]
    r, lo, hi = host_ratio(tgt, don)
    variants = {"as transferred": 1.0, "host ratio": r, "ratio low": lo, "ratio high": hi}
    per_bench = "; ".join(
        f"{k}: {tgt.launch_s[k] * 1e3:.3f} / {don.launch_s[k] * 1e3:.3f} ms"
        for k in sorted(set(tgt.launch_s) & set(don.launch_s))
    )
    errs: dict = {}
    for label, k in variants.items():
        params = scale_host_terms(after, k)
        for m in models:
            rep = build_replica(m, GPU, PREC, FW, params=params, catalog=cat, **ENGINE)
            for (model, scen, rate), meas in runs.items():
                if model != m:
                    continue
                sim, load = simulate_run(rep, scen, rate)
                if label == "as transferred":
                    errs.setdefault("load", {})[model, scen, rate] = load
                if errs.get("load", {}).get((model, scen, rate), 1.0) >= 0.8:
                    continue
                for key, name, skey, scale in METRICS:
                    e = abs(sim[skey] * scale / meas[key] - 1) * 100
                    errs.setdefault((label, name), []).append(e)
    out = [
        "### The host terms moved by a measured host ratio",
        "",
        f"Host time per bench, {tgt.host} / {don.host} ({tgt.source}; {don.source}): "
        f"{per_bench}; ratio (median) {r:.3f}, over the benches {lo:.3f}-{hi:.3f}. "
        "The scheduler terms and the eager dispatch per layer of the transferred parameters "
        "times that ratio; the GPU terms untouched. Median absolute error over the runs below "
        "80 % of saturation:",
        "",
        "| metric | as transferred | x host ratio | x low end | x high end | target |",
        "|---|---|---|---|---|---|",
    ]
    for _, name, _, _ in METRICS:
        t = TARGET.get(name)
        cells = [f"{median(errs[lab, name]):.1f}%" for lab in variants]
        out.append(f"| {name} | " + " | ".join(cells) + f" | {f'{t:g}%' if t else '-'} |")
    out += [
        "",
        "Not adopted: the host ratio must come from the machine that served. The step sweeps "
        "ran on other machine starts than the serving runs, and the pool's machines of one "
        "kind differ more than the kinds do: this H100 step machine dispatched 1.4-2.0x slower "
        "than this H200 step machine, while the H100 serving machine launched a mixed "
        "iteration in 0.53-0.72x the H200 serving machine's time (its own log, above); on "
        "the H200 pool alone, two machines dispatched at 0.47 and 0.23-0.31 ms per layer "
        "(`bench/README.md`). The GEMV micro-benchmarks (`*_micro.csv`, t0 3.1-5.2 us) are "
        "CUDA-graph replays, GPU time with no host launch in it, so they carry no host "
        "either. A host record measured in the same call as the serving runs would.",
    ]
    return out


MACHINES = {
    "A": ("2026-12-06", DATA, LOGS / "reference_h100_iterations.csv.gz"),
    "B": ("2026-12-07", REPEAT, LOGS / "reference_h100_repeat_iterations.csv.gz"),
}


def serving_host_runs(cat, after) -> tuple[list[dict], dict]:
    """Every H100 run of both machine starts (:data:`MACHINES`) simulated with the transferred
    parameters as they are and with their host terms moved by the serving machine's own host
    record (``planner.catalog.host.serving_host_ratios``: that machine's iteration log against
    the H200 serving log over the same traces, leaving out the scored run's trace and its
    repeats). Returns (one dict per run, (machine, run key) -> measured metrics)."""
    import pandas as pd

    layers = {m: cat.model(m).num_hidden_layers for m in MODEL_NAMES}
    donor = serving_log_host(LOGS / "reference_h200_iterations.csv.gz", layers)
    base = {m: build_replica(m, GPU, PREC, FW, params=after, catalog=cat, **ENGINE)
            for m in MODEL_NAMES}  # fmt: skip
    out, meas_by = [], {}
    for mach, (day, rows_path, log_path) in MACHINES.items():
        runs = measured_runs(rows_path)
        host = serving_log_host(log_path, layers)
        full = serving_host_ratios(host, donor)
        d = pd.read_csv(log_path)
        d = d[(d["graph_batch"] > 0) & (d["n_prefill_seqs"] == 0)]
        for key in sorted(runs, key=lambda k: (list(MODEL_NAMES).index(k[0]), k[1], float(k[2]))):
            m, scen, rate = key
            trace = (m, REPEAT_OF.get(scen, scen), f"{float(rate):g}")
            rs, re_ = serving_host_ratios(host, donor, exclude=[trace])
            rep = build_replica(m, GPU, PREC, FW, params=scale_host_terms(after, rs, re_),
                                catalog=cat, **ENGINE)  # fmt: skip
            (s0, load), (s1, _) = simulate_run(base[m], scen, rate), simulate_run(rep, scen, rate)
            meas = runs[key]
            meas_by[mach, key] = meas
            x = d[(d["model"] == m) & (d["scenario"] == scen) & (d["rate"] == float(rate))]
            n = float(x["n_decode"].median())
            ctx = float((x["decode_ctx_tokens"] / x["n_decode"]).median())
            sm = base[m].sm
            gpu = float(sm.step(n, n, n, n * (ctx + 1), n * (ctx + 1)).time_s) + float(
                sm.straggler_time(n, float(x["decode_ctx_max"].median()), n * ctx)
            )
            out.append(
                {
                    "machine": mach,
                    "day": day,
                    "key": key,
                    "load": load,
                    "ratios": (rs, re_),
                    "full": full,
                    "batch": n,
                    "gpu": (gpu, float(x["gpu_span_s"].median())),
                    "host": (
                        base[m].engine.host_time_s(n),
                        rep.engine.host_time_s(n),
                        float((x["sched_s"] + x["prep_launch_s"] + x["book_s"]).median()),
                    ),
                    "tpot": (
                        meas["tpot_ms_median"],
                        s0["tpot_p50_s"] * 1e3,
                        s1["tpot_p50_s"] * 1e3,
                    ),
                    "err": {
                        lab: {name: (s[sk] * f / meas[k] - 1) * 100 for k, name, sk, f in METRICS}
                        for lab, s in (("as", s0), ("rule", s1))
                    },
                }
            )
    return out, meas_by


def serving_host_lines(res: list[dict], meas_by: dict) -> list[str]:
    """The section of the serving machine's host record: summary, per run, repeatability."""

    def med(mach, lab, name):
        v = [abs(r["err"][lab][name]) for r in res
             if r["machine"] in mach and r["load"] < 0.8]  # fmt: skip
        return median(v), len(v)

    ra = {r["machine"]: r["full"] for r in res}
    out = [
        "### The host terms from the serving machine's own log (leave one trace out)",
        "",
        "The serving machine's host record is its engine's iteration log "
        "(`planner.catalog.host.serving_log_host`): the host time of each CUDA-graph decode "
        "iteration (`sched_s + prep_launch_s + book_s`) and the launch time per layer of each "
        "eager mixed iteration. Over the traces both machines served, the median of each on the "
        "H100 machine over the H200 serving log's (`serving_host_ratios`) moves the transferred "
        "scheduler terms (per iteration, per sequence) and the eager dispatch per layer "
        "(`scale_host_terms`); the GPU terms stay the transfer's. Each run is scored with the "
        "ratios of its machine's *other* traces (its own trace and its repeat left out): the "
        "host is measured per machine, never fitted to the run. Two H100 machine starts: "
        "**A** served the 20 runs above (2026-12-06); **B**, started afresh on 2026-12-07 "
        "(`data/benchmarks/reference_h100_repeat_serving.csv`, held out the same way), served "
        "6 of those traces, 3 of them twice in the same process. Ratios with all of a machine's "
        f"traces: A {ra['A'][0]:.2f} (graph decode host) / {ra['A'][1]:.2f} (eager launch per "
        f"layer); B {ra['B'][0]:.2f} / {ra['B'][1]:.2f}.",
        "",
        "Median absolute error of the runs below 80 % of saturation, as transferred / with the "
        "machine's host record:",
        "",
        "| metric | A: as transferred | A: host record | B: as transferred | B: host record "
        "| A+B: as transferred | A+B: host record | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, name, _, _ in METRICS:
        t = TARGET.get(name)
        cells = []
        for mach in ("A", "B", "AB"):
            for lab in ("as", "rule"):
                v, n = med(mach, lab, name)
                cells.append(f"{v:.1f}%")
        out.append(f"| {name} | " + " | ".join(cells) + f" | {f'{t:g}%' if t else '-'} |")
    na, nb = med("A", "as", "TPOT p50")[1], med("B", "as", "TPOT p50")[1]
    out += [
        "",
        f"({na} runs of A, {nb} of B below 80 % of saturation.) Per run: load; the median batch "
        "of its graph decode iterations (the concurrency a decode iteration sees); the GPU "
        "time of such an iteration, predicted / measured span [ms]; its host time predicted as "
        "transferred / with the record / measured [ms]; TPOT p50 measured, and predicted as "
        "transferred and with the record (error); E2E p99 and throughput errors as "
        "transferred / with the record.",
        "",
        "| machine | model | scenario | rate | load | batch | GPU pred / meas | host as transferred "
        "/ record / meas | ratios (graph, eager) | TPOT p50 meas | TPOT p50 as transferred | "
        "TPOT p50 record | E2E p99 | throughput |",
        "|" + "---|" * 14,
    ]
    for r in res:
        m, scen, rate = r["key"]
        tm, t0, t1 = r["tpot"]
        e0, e1 = r["err"]["as"], r["err"]["rule"]
        out.append(
            "| "
            + " | ".join(
                [
                    f"{r['machine']} ({r['day']})",
                    MODEL_NAMES[m],
                    scen,
                    rate,
                    f"{r['load']:.0%}",
                    f"{r['batch']:.0f}",
                    f"{r['gpu'][0] * 1e3:.2f} / {r['gpu'][1] * 1e3:.2f}",
                    " / ".join(f"{v * 1e3:.2f}" for v in r["host"]),
                    f"{r['ratios'][0]:.2f}, {r['ratios'][1]:.2f}",
                    f"{tm:.2f}",
                    f"{t0:.2f} ({e0['TPOT p50']:+.1f}%)",
                    f"{t1:.2f} ({e1['TPOT p50']:+.1f}%)",
                    f"{e0['E2E p99']:+.1f} / {e1['E2E p99']:+.1f}%",
                    f"{e0['throughput']:+.1f} / {e1['throughput']:+.1f}%",
                ]
            )
            + " |"
        )
    out += [
        "",
        "Repeatability: the same trace served again, on the same machine (B, same process, "
        "right after) and on another machine start (A, the day before). Measured values; "
        "differences relative to B's first run:",
        "",
        "| model | trace | metric | A | B | B again | B again / B | A / B |",
        "|---|---|---|---|---|---|---|---|",
    ]
    spread: dict[str, list[float]] = {}
    for (mach, (m, scen, rate)), meas in sorted(meas_by.items()):
        if mach != "B" or scen in REPEAT_OF:
            continue
        again = meas_by.get(
            ("B", (m, next((k for k, v in REPEAT_OF.items() if v == scen), ""), rate))
        )
        a = meas_by.get(("A", (m, scen, rate)))
        for key, name, _, _ in METRICS:
            if name not in TARGET:
                continue
            b = meas[key]
            fmt = ".2f" if b < 100 else ",.0f"
            cells = [f"{a[key]:{fmt}}" if a else "-", f"{b:{fmt}}",
                     f"{again[key]:{fmt}}" if again else "-",
                     f"{(again[key] / b - 1) * 100:+.1f}%" if again else "-",
                     f"{(a[key] / b - 1) * 100:+.1f}%" if a else "-"]  # fmt: skip
            if again:
                spread.setdefault(f"same machine {name}", []).append(abs(again[key] / b - 1) * 100)
            if a:
                spread.setdefault(f"machine A vs B {name}", []).append(abs(a[key] / b - 1) * 100)
            out.append(f"| {MODEL_NAMES[m]} | {scen} {rate} | {name} | " + " | ".join(cells) + " |")
    out += [
        "",
        "Median absolute difference: "
        + "; ".join(f"{k} {median(v):.1f}% (n={len(v)})" for k, v in spread.items())
        + ".",
        "",
        "What this says (2026-12-07): on machine A the transfer's TPOT p50 miss was the host "
        "(all over-predicted, the 1B and the chat runs); A's own host record removes it. "
        "Machine B's host was as slow as the H200 serving machine's (ratios near 1), so the "
        "transfer as it is already fits B's host and the record changes little; what remains "
        "on B are the chat runs (+7..+21 % with the record), and B's host moved from run to "
        "run: the same trace on the same machine, one run after the other, moved TPOT p50 by "
        "8 % and E2E p99 by 10 % (Llama-3.1-8B chat 15: host per graph decode iteration 0.44 "
        "-> 0.32 ms, eager launch 16.4 -> 10.8 ms, GPU span 7.76 -> 7.73 ms), and "
        "Llama-3.2-1B chat 50 spent 0.34 ms of host per graph decode iteration where B's "
        "other runs predicted 0.51 ms. The 8 % target is at this noise floor. The GPU side needs no new term: a graph decode iteration's GPU span is "
        "predicted within -4..+7 % on A and +0..+3 % on B for the 8B and 14B (the 1B's span on "
        "B, -7..-10 %, likely holds host gaps between its short kernels). A host measured per machine "
        "start is the input the transfer lacks; a GPU kind does not carry it.",
    ]
    return out


def score_variants(cat, models, runs, variants: dict) -> tuple[dict, dict]:
    """Each parameter variant's absolute errors [%] per metric over the runs below 80 % load,
    and its signed TPOT p50 error [%] per run ``(model, scenario, rate)``."""
    err: dict[str, dict[str, list[float]]] = {}
    tpot: dict[str, dict[tuple, float]] = {}
    for label, p in variants.items():
        for m in models:
            rep = build_replica(m, GPU, PREC, FW, params=p, catalog=cat, **ENGINE)
            for (model, scen, rate), meas in runs.items():
                if model != m:
                    continue
                sim, load = simulate_run(rep, scen, rate)
                if load < 0.8:
                    tpot.setdefault(label, {})[model, scen, rate] = (
                        sim["tpot_p50_s"] * 1e3 / meas["tpot_ms_median"] - 1
                    ) * 100
                    for key, name, skey, f in METRICS:
                        e = abs(sim[skey] * f / meas[key] - 1) * 100
                        err.setdefault(label, {}).setdefault(name, []).append(e)
    return err, tpot


def variant_table(err: dict, variants: dict) -> list[str]:
    """The markdown table of :func:`score_variants`' median absolute errors [%]: a row per
    metric, a column per variant, and the item's target."""
    out = [
        "| metric | " + " | ".join(variants) + " | target |",
        "|---|" + "---|" * (len(variants) + 1),
    ]
    for _, name, _, _ in METRICS:
        t = TARGET.get(name)
        cells = [f"{median(err[k][name]):.1f}%" for k in variants]
        out.append(f"| {name} | " + " | ".join(cells) + f" | {f'{t:g}%' if t else '-'} |")
    return out


def weight_rule_lines(cat, models, runs, after) -> list[str]:
    """The weight reads moved by the two GPUs' decode steps (``step_weight_ratio``) against the
    GEMV rule it replaced (``STEP_WEIGHT_RULE`` off) and the ratio's smallest / largest pair:
    median absolute error of the runs below 80 % of saturation."""
    import planner.catalog.bandwidth as bw

    donor = nearest_sibling(load_profile(), cat, GPU, FW, PREC, "dense")
    sw = bw.step_weight_ratio(donor.params, cat.gpu(donor.gpu), cat.gpu(GPU))
    bw.STEP_WEIGHT_RULE = False
    try:
        gemv = resolve_params(GPU, FW, PREC, catalog=cat, siblings=True, family="dense")[0]
    finally:
        bw.STEP_WEIGHT_RULE = True
    scale = cat.gpu(donor.gpu).mem_bw_gbs / cat.gpu(GPU).mem_bw_gbs
    variants = {
        "GEMV rule (before)": gemv,
        f"ratio {sw.low:.3f} (lowest pair)": after.with_(mem_eff=donor.params.mem_eff * sw.low * scale),
        f"ratio {sw.ratio:.3f} (as transferred)": after,
        f"ratio {sw.high:.3f} (highest pair)": after.with_(mem_eff=min(1.0, donor.params.mem_eff * sw.high * scale)),
    }  # fmt: skip
    err, _ = score_variants(cat, models, runs, variants)
    out = [
        "### Weight reads from the two GPUs' decode steps",
        "",
        "The reference engine's batch-1 decode steps of the same model and context (256-4,096 "
        f"tokens) on both GPUs (`{sw.source}`; the H100 file is a device micro-benchmark, no "
        "serving run): each step's time less the H200 fit's fixed per-step and per-layer terms "
        "and its KV read at the GPU's marginal KV rate is its weight time; the H100 reads a "
        f"step's weights at {sw.ratio:.3f}x the H200's rate (median of {sw.n_pairs} pairs, "
        f"{sw.low:.3f}-{sw.high:.3f}; the datasheets say {1 / scale:.3f}), so the transferred "
        f"`mem_eff` is {donor.params.mem_eff:.3f} x {sw.ratio:.3f} x {scale:.3f} = "
        f"{after.mem_eff:.3f} (`planner.catalog.bandwidth.step_weight_ratio`). The GEMV rule "
        f"before it (the GEMV micro-benchmarks' streaming rates, latency kept in seconds) gave "
        f"{gemv.mem_eff:.3f}: 1.43x the H200's weight time where the decode steps take "
        f"{1 / sw.ratio:.2f}x. Median absolute error of the runs below 80 % of saturation:",
        "",
        *variant_table(err, variants),
    ]
    return out


def compute_rule_lines(cat, models, runs, after) -> list[str]:
    """The GEMMs moved by the two GPUs' prefill steps (``step_compute_ratio``) against the
    transfer without it (``STEP_COMPUTE_RULE`` off: ``compute_eff`` kept as a fraction of the
    peak) and the ratio's smallest / largest pair: median absolute error of the scored runs."""
    import planner.catalog.bandwidth as bw

    donor = nearest_sibling(load_profile(), cat, GPU, FW, PREC, "dense")
    dg = cat.gpu(donor.gpu)
    sc = bw.step_compute_ratio(donor.params, dg, cat.gpu(GPU))
    bw.STEP_COMPUTE_RULE = False
    try:
        off = resolve_params(GPU, FW, PREC, catalog=cat, siblings=True, family="dense")[0]
    finally:
        bw.STEP_COMPUTE_RULE = True
    ce = donor.params.compute_eff
    variants = {
        "without (before)": off,
        f"ratio {sc.low:.3f} (lowest pair)": after.with_(compute_eff=round(ce * sc.low, 5)),
        f"ratio {sc.ratio:.3f} (as transferred)": after,
        f"ratio {sc.high:.3f} (highest pair)": after.with_(compute_eff=round(ce * sc.high, 5)),
    }
    err, tpot = score_variants(cat, models, runs, variants)
    out = [
        "### GEMMs from the two GPUs' prefill steps",
        "",
        "The reference engine's one-sequence prefill steps of the same model and prompt "
        f"({bw.PREFILL_STEP_MIN_TOKENS:,}-{bw.PREFILL_STEP_MAX_TOKENS:,} tokens) on both GPUs "
        f"(`{sc.source}`; the H100 file is a device micro-benchmark, no serving run): each "
        "step's time less its causal attention (at the H200 fit's `attn_eff`, kept in seconds: "
        "one architecture, the same peak) and the fit's fixed terms is its GEMM time, which "
        "also holds the memory-bound element-wise kernels between the GEMMs (norms, RoPE, "
        f"SiLU, KV writes); the H100 runs it at {sc.ratio:.3f}x the H200's rate (median of "
        f"{sc.n_pairs} pairs, {sc.low:.3f}-{sc.high:.3f}; the datasheets' bf16 peaks are "
        f"equal), so the transferred `compute_eff` is {ce:.3f} x {sc.ratio:.3f} = "
        f"{after.compute_eff:.3f} (`planner.catalog.bandwidth.step_compute_ratio`). Before it "
        f"the transfer kept {off.compute_eff:.3f}: the prefill-chunk iterations of the rag "
        "runs, GPU-bound at 2,048 tokens, came out equal on both GPUs where the H100's take "
        "1-5 % longer. Median absolute error of the runs below 80 % of saturation (the same "
        "runs for every column):",
        "",
        *variant_table(err, variants),
    ]
    keys = sorted(tpot["without (before)"], key=lambda k: abs(tpot["without (before)"][k]))
    out += [
        "",
        "TPOT p50 per run, without -> with the ratio (ordered by the error without; the "
        "median is the 8th of 15): "
        + "; ".join(
            f"{MODEL_NAMES[k[0]]} {k[1]} {k[2]} {tpot['without (before)'][k]:+.1f} -> "
            f"{tpot[list(variants)[2]][k]:+.1f}%"
            for k in keys
        )
        + ".",
    ]
    return out


def median(v: list[float]) -> float:
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--write", action="store_true", help="replace the section in docs/accuracy.md")
    args = ap.parse_args()
    cat = load_catalog()
    runs = measured_runs()
    models = [m for m in MODEL_NAMES if any(k[0] == m for k in runs)]
    rules = {"before": False, "after": True}
    provs, reps, par = {}, {}, {}
    for rule, sib in rules.items():
        params, provs[rule] = resolve_params(
            GPU, FW, PREC, catalog=cat, siblings=sib, family="dense"
        )
        par[rule] = params
        for m in models:
            reps[rule, m] = build_replica(m, GPU, PREC, FW, params=params,
                                          params_source=provs[rule], catalog=cat, **ENGINE)  # fmt: skip
    rows, errs = [], {}
    for (model, scen, rate), meas in sorted(
        runs.items(), key=lambda kv: (models.index(kv[0][0]), kv[0][1], float(kv[0][2]))
    ):
        sims = {rule: simulate_run(reps[rule, model], scen, rate) for rule in rules}
        load = sims["after"][1]
        row = {
            "model": MODEL_NAMES[model],
            "scenario": scen,
            "rate_rps": rate,
            "load": f"{load:.0%}",
        }
        for key, name, skey, scale in METRICS:
            mv = meas[key]
            e = {k: (sims[k][0][skey] * scale / mv - 1) * 100 for k in sims}
            sv = sims["after"][0][skey] * scale
            fmt = ",.0f" if scale == 1.0 or mv > 100 else ".1f"
            row[name] = f"{mv:{fmt}} / {sv:{fmt}} ({e['after']:+.0f}%; before {e['before']:+.0f}%)"
            if load < 0.8:
                for k, v in e.items():
                    errs.setdefault((k, name), []).append(abs(v))
                    errs.setdefault((k, name, model), []).append(abs(v))
        rows.append(row)
    cols = ["model", "scenario", "rate_rps", "load", *[m[1] for m in METRICS]]
    n = len(errs[("after", "throughput")])
    lines = [
        "## Transfer to a sibling GPU: the reference engine on the H100 (held out)",
        "",
        "The 20 serving runs of the H200 section below, repeated on one H100 SXM (80 GB) with the "
        "same engine, traces and settings (`data/benchmarks/reference_h100_serving.csv`, "
        "2026-12-06; kept out of every fit: `planner.calibration.fit.HELD_OUT_FILES`). The "
        "planner has no fit for `pytorch` on the H100; it transfers one. **after** = the "
        f"nearest-sibling rule ({provs['after']}): the H200's bf16 efficiencies and serving terms "
        "with the H100's own peaks and bandwidth, the weight reads at the rate ratio of the two "
        "GPUs' decode steps, the GEMMs at the rate ratio of their prefill steps, the KV reads "
        "with the H200's per-kernel latency kept "
        "(`planner.catalog.bandwidth`; subsections \"Weight reads from the two GPUs' decode "
        'steps" and "GEMMs from the two GPUs\' prefill steps" below); **before** = the pooled rule it replaced '
        f"({provs['before']}). Each cell: measured / simulated after (error after; error before). "
        "TTFT, TPOT, E2E in ms; throughput in output tok/s; load = rate / the analytic saturation "
        "rate of one fixed transfer (after, without the prefill-step ratio: every rule below is "
        "scored on the same runs). Regenerate with `python scripts/h100_transfer.py --write`.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows]
    lines += [
        "",
        f"Median absolute error over the {n} runs below 80 % of saturation:",
        "",
        "| metric | after + the machine's host record | after (nearest sibling) "
        "| before (pooled) | target (issue 32) |",
        "|---|---|---|---|---|",
    ]
    host_res = serving_host_runs(cat, par["after"])
    for _, name, _, _ in METRICS:
        t = TARGET.get(name)
        rec = [abs(r["err"]["rule"][name]) for r in host_res[0]
               if r["machine"] == "A" and r["load"] < 0.8]  # fmt: skip
        lines.append(
            f"| {name} | {median(rec):.1f}% | {median(errs['after', name]):.1f}% "
            f"| {median(errs['before', name]):.1f}% | {f'{t:g}%' if t else '-'} |"
        )
    lines += [
        "",
        "**after + the machine's host record**: the transfer with its host terms (scheduler, "
        "eager dispatch) moved by the serving machine's own iteration log against the H200's, "
        "each run scored with the ratios of the machine's other traces (section \"The host "
        "terms from the serving machine's own log\" below, which also scores a second H100 "
        "machine start and the run-to-run repeatability).",
    ]
    lines += [
        "",
        "By model (after / before, median absolute error of the runs below 80 % of saturation):",
        "",
        "| model | runs | " + " | ".join(m[1] for m in METRICS) + " |",
        "|---|---|" + "---|" * len(METRICS),
    ]
    for m in models:
        k = errs.get(("after", "throughput", m), [])
        if k:
            cells = [f"{median(errs['after', name, m]):.1f} / {median(errs['before', name, m]):.1f}%"
                     for _, name, _, _ in METRICS]  # fmt: skip
            lines.append(f"| {MODEL_NAMES[m]} | {len(k)} | " + " | ".join(cells) + " |")
    diag = {("after", m): reps["after", m] for m in models}
    donor = nearest_sibling(load_profile(), cat, GPU, FW, PREC, "dense")
    for m in models:  # the sibling rule before the latency was kept: datasheet fractions
        diag["datasheet", m] = build_replica(m, GPU, PREC, FW, params=donor.params, catalog=cat,
                                             **ENGINE)  # fmt: skip
    lines += ["", *weight_rule_lines(cat, models, runs, par["after"])]
    lines += ["", *compute_rule_lines(cat, models, runs, par["after"])]
    lines += ["", *host_lines(diag)]
    lines += ["", *serving_host_lines(*host_res)]
    lines += ["", *host_ratio_lines(cat, models, runs, par["after"], donor.gpu)]
    load, sens = {}, {"as transferred": {}}
    for (model, scen, rate), meas in runs.items():
        sim, load[model, scen, rate] = simulate_run(reps["after", model], scen, rate)
        sens["as transferred"][model, scen, rate] = (
            sim["tpot_p50_s"] * 1e3 / meas["tpot_ms_median"] - 1
        )
    for label, moved in sensitivity_params(par["after"]).items():
        sens[label] = {}
        for m in models:
            rep = build_replica(m, GPU, PREC, FW, params=moved, catalog=cat, **ENGINE)
            for (model, scen, rate), meas in runs.items():
                if model == m:
                    sim = simulate_run(rep, scen, rate)[0]
                    sens[label][model, scen, rate] = (
                        sim["tpot_p50_s"] * 1e3 / meas["tpot_ms_median"] - 1
                    )
    lines += ["", *run_parts({m: reps["after", m] for m in models}, sens, load)]
    lines += [
        "",
        *step_rows_lines(par["after"], par["after"].with_(kv_mem_eff=donor.params.kv_mem_eff)),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        put_section(ROOT / "docs" / "accuracy.md", f"{BEGIN}\n{text}{END}\n", (BEGIN, END))
    return 0


if __name__ == "__main__":
    sys.exit(main())
