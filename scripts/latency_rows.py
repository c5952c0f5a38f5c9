"""Row-by-row dump of the public serving rows' TTFT / TPOT (and MLPerf Llama-2-70B Server /
Interactive throughput), predicted leave-one-source-out by the serving simulator.

Usage::

    PYTHONPATH=$PWD python scripts/latency_rows.py [-o docs/latency_rows.csv] [--cache F]
    # planner's serving model (no prefill scale), per-row tables of vLLM and TensorRT-LLM:
    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale --rows-md /tmp/rows.md
    # one engine's rows only, by source, model family and TP (the vLLM rows: changes/s8-vllmlat.md):
    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale --engine vllm -o /tmp/vllm.csv
    # the same without trtllm-serve's fitted first-token latency (the before):
    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale --no-first-token
    # SGLang with its own scheduler policy (prompt chunks in steps of their own):
    PYTHONPATH=$PWD python scripts/latency_rows.py --engine-prefill-first
    # overlap schedulers' extra iteration before a prompt joins (off in planner):
    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale --overlap-lag
    # SGLang's gates as its releases read them (no dead --num-continuous-decode-steps gate)
    # together with the overlap scheduler's iteration (both off in planner):
    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale --sglang-release-gates --overlap-lag
    # a closed loop's next request joins the next iteration at once (the before of s11-ttft):
    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale --no-rearrival
    # every row with its fold's fit over every release (the before of 2026-12-07):
    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale --no-release
    # TTFT's fixed part and per-prompt-token slope at 1-4 clients, measured vs predicted:
    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale --prompt-slope -o /tmp/lr.csv
    # what-if: NVIDIA SGLang MLA rows with the all-reduce at the planner's measured NCCL rate:
    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale --mla-comm-eff 0.68 --ttft-terms

Each row is predicted with the parameters ``planner validate`` predicts it with (its release's
node, else the nearest release's; a row naming none: its fold's fit as of its date;
``--no-release``: the fit over every release, this script before 2026-12-07).
Each held-out source's profile is fitted once (the same fit ``planner validate`` does) and
kept in ``--cache`` (a pickle; delete it when the fit changes), so a change of the serving
model alone re-runs only the simulations. Prints MdAPE / bias by metric class, engine and
vendor; writes one CSV line per row: measured, predicted, error, source, engine and
release, vendor, ISL/OSL, concurrency / rate, client and the latency terms applied, the
engine flags (chunked prefill, max_num_seqs / max_num_batched_tokens and who set them), the
client (warm-up, range ratio), the same run's TPOT ratio and a cause per TTFT miss
(``assign_causes``; ``--rows-md`` writes the per-row tables of ``--engines`` and the misses
by cause). trtllm-serve's first-token latency (PyTorch backend) is fitted per held-out
source on the other sources' TTFT rows (``--no-first-token``: without it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import pickle
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from planner.benchmarks.chunk_flags import CHUNK_OFF, CHUNK_ON
from planner.benchmarks.client_metrics import definition_check
from planner.benchmarks.io import load_measurements
from planner.benchmarks.scheduler_waits import first_token_wait, trtllm_pytorch_backend
from planner.benchmarks.schema import cell
from planner.benchmarks.serving_rows import serving_row_details
from planner.calibration.bands import metric_class
from planner.calibration.fit import (
    fit_profile,
    own_files_default,
    prepare_rows,
    public_files_default,
)
from planner.calibration.latency_fit import (
    CURRENT_SINCE,
    TTFT_TERM_GRIDS,
    fit_first_token,
    fit_prefill_scales,
    ratio_band,
    scale_for,
    ttft_term_loso,
)
from planner.calibration.release_fit import (
    RELEASE_MIN_ROWS,
    AsOfFits,
    as_of_days,
    fit_release_nodes,
    release_params_for_row,
)
from planner.catalog.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.latency import latency_family
from planner.catalog.profile import resolve_params
from planner.errors import PlannerError


def _client(row: dict) -> str:
    mode = cell(row, "mode")
    notes = cell(row, "notes").lower()
    rr = "random-range-ratio" in notes or "range_ratio" in notes or "range ratio" in notes
    c = {"concurrency": "closed loop", "rate": "request rate", "server": "MLPerf server",
         "interactive": "MLPerf interactive"}.get(mode, mode)  # fmt: skip
    return c + (" (random-range-ratio)" if rr else "")


_WARM = re.compile(r"warm-?up of (\d+)|--num-warmups[ =](\d+)|--warmup-requests[ =](\d+)", re.I)
_RANGE = re.compile(r"range[_ -]ratio[ =]*([0-9.]+)", re.I)
_SETTING = re.compile(r"(max_num_seqs|max_num_batched_tokens)=(\d+) \(([^)]*)\)")
_RIN = re.compile(r"random[_-]input[_-]len[ =](\d+)")
_RRATIO = re.compile(r"random[_-]range[_-]ratio[ =]([0-9.]+)")


def _prompt_tokens(row: dict) -> float:
    """Mean prompt length of a row [tokens]: its ``isl``, else the random dataset's
    ``random_input_len`` x (1 + range ratio) / 2 its notes state (a uniform draw between
    ratio x len and len), else NaN."""
    isl = cell(row, "isl")
    if isl:
        return float(isl)
    notes = cell(row, "notes")
    m = _RIN.search(notes)
    if m is None:
        return float("nan")
    r = _RRATIO.search(notes)
    ratio = float(r.group(1).rstrip(".")) if r else 0.0
    return float(m.group(1)) * (1.0 + ratio) / 2.0


def _chunked(notes: str) -> str:
    """Chunked prefill as the row's notes state it: 'off', 'on', 'on (size N)' or ''."""
    if CHUNK_OFF.search(notes):
        return "off"
    m = CHUNK_ON.search(notes)
    if m is None:
        return ""
    return f"on (size {m.group(1)})" if m.group(1) else "on"


def _client_detail(row: dict) -> str:
    """Warm-up and random-range-ratio of the row's client, as its notes state them."""
    notes = cell(row, "notes")
    parts = []
    w = _WARM.search(notes)
    parts.append(f"warm-up {next(g for g in w.groups() if g)}" if w else "warm-up unstated")
    r = _RANGE.search(notes)
    if r:
        parts.append(f"range ratio {r.group(1).rstrip('.')}")
    return ", ".join(parts)


def _engine_cells(note: str) -> dict:
    """max_num_seqs / max_num_batched_tokens the simulation used and who set them (the
    row or the engine default), read from the simulation's note."""
    out = {}
    for k, v, src in _SETTING.findall(note or ""):
        out[k] = int(v)
        out[k + "_from"] = "row" if src == "row" else "default"
    return out


#: a TTFT row whose TPOT (same run) is off by a factor within this of its TTFT's is a
#: step-time miss: the first token waits on the same iterations the TPOT measures
STEP_TRACK = 1.25
#: a TTFT miss larger than this factor is "a miss" in the cause table
MISS = 1.25


def _run_key(d: dict) -> tuple:
    return tuple(str(d.get(k)) for k in ("source", "gpu", "model", "precision", "tp", "mode",
                                         "isl", "osl", "concurrency", "rate", "release",
                                         "as_of", "note"))  # fmt: skip


def assign_causes(out: list[dict]) -> None:
    """Label each TTFT row with the cause of its miss (``cause``) and each row with the
    measured / predicted TPOT of the same run (``tpot_ratio_same_run``).

    Rules, first match wins: the simulated queue grows (over capacity); within
    :data:`MISS` of the measurement (no miss); a run dated before :data:`CURRENT_SINCE` or
    undated (an engine release of another season); an offline burst (every request sent
    at t = 0: TTFT is the queue behind the other prompts, so it carries the step-time
    error); the same run's TPOT off by the same factor within :data:`STEP_TRACK` (step
    time, not the first-token path); trtllm-serve closed loop (the ~120 ms first-token
    excess of InferenceX, where the term is not applied); an MLPerf Server / Interactive
    harness; else unexplained.
    """
    tpot = {}
    for d in out:
        if d["metric_class"] == "tpot/itl":
            tpot.setdefault(_run_key(d), d["measured"] / d["predicted"])
    for d in out:
        q = tpot.get(_run_key(d), float("nan"))
        d["tpot_ratio_same_run"] = q
        if d["metric_class"] != "ttft":
            d["cause"] = ""
            continue
        r = d["measured"] / d["predicted"]
        day = str(d.get("as_of") or "")[:10]
        if d.get("over_capacity"):
            c = "over capacity"
        elif abs(math.log(r)) <= math.log(MISS):
            c = "within 25%"
        elif not day or day < CURRENT_SINCE.isoformat():
            c = "release before 2025-07 or undated"
        elif d["mode"] == "offline":
            c = "offline burst (queue behind prompts)"
        elif math.isfinite(q) and abs(math.log(r / q)) <= math.log(STEP_TRACK):
            c = "step time (TPOT off alike)"
        elif (
            d["engine"] == "trtllm"
            and d["mode"] == "concurrency"
            and "trtllm-serve" in (d.get("notes_text") or "")
        ):
            c = "trtllm-serve first-token excess"
        elif d["mode"] in ("server", "interactive"):
            c = "MLPerf harness"
        else:
            c = "unexplained"
        d["cause"] = c


class Folds:
    """The parameters a held-out row is predicted with, as ``planner validate`` predicts the
    serving rows (``planner.calibration.accuracy.serving_predictions``): the fold's profile
    (fitted without the row's source), its release nodes (``fit_release_nodes``: the row's
    release, else the nearest one, ``resolve_release_params``) and, for a row naming no
    release, the fold's fit as of the row's date (``AsOfFits``). ``release=False``: the fit
    over every release (``resolve_params``; this script before 2026-12-07, whose CDNA3 SGLang
    0.5.x rows took the pooled SGLang-on-AMD node of the 0.4.2 dstack run).

    Parameters
    ----------
    profiles : dict
        source -> the fold's profile (None where the fit failed: the prior)
    asof : AsOfFits or None
    release : bool
    cache : tuple or None
        (the ``--cache`` dict, its path) where the as-of fits made while predicting are kept
        (:func:`_keep_asof`)
    """

    def __init__(self, profiles: dict, asof: Any = None, release: bool = True,
                 cache: tuple | None = None) -> None:  # fmt: skip
        self.profiles, self.asof, self.release, self.cache = profiles, asof, release, cache

    def params(self, r, cat) -> tuple[Any, str, str]:
        """(params, provenance, release used) of prepared row ``r``; raises PlannerError."""
        prof = self.profiles[r.source]
        if not self.release:
            if prof is None:
                return PRIOR, "prior", ""
            p, prov = resolve_params(r.gpu, r.framework, r.precision or None, catalog=cat,
                                     profile=prof, family=r.family)  # fmt: skip
            return p, prov, ""
        p, prov, used, _ = release_params_for_row(r, prof, cat, self.asof, r.source)
        return p, prov, used


#: what-if (``--release-min-rows``): the fittable rows a release node needs in each fold
#: (planner.calibration.release_fit.RELEASE_MIN_ROWS; the cache key carries a changed value)
RELEASE_MIN_ROWS_WHATIF = RELEASE_MIN_ROWS


def _release_folds(keep, rows, own_rows, df, cat, profiles, cache_p, release=True) -> Folds:
    """:class:`Folds` of the held-out sources of ``keep``: each fold's release nodes and
    as-of fits, kept in the ``--cache`` pickle beside the fold profiles (keys ``("release",
    source)`` and ``("asof", source, engine, day)``)."""
    if not release:
        return Folds(profiles, None, False)
    asof = AsOfFits(as_of_days(df))
    out = {}
    for s in sorted({r.source for r in keep}):
        train = [r for r in rows if r.source != s and (r.ok or r.steady)] + [
            r for r in own_rows if r.ok or r.steady
        ]
        key = (
            ("release", s)
            if RELEASE_MIN_ROWS_WHATIF == RELEASE_MIN_ROWS
            else ("release", s, RELEASE_MIN_ROWS_WHATIF)
        )
        if key not in profiles:
            print("release nodes without", s, file=sys.stderr, flush=True)
            prof = profiles[s]
            if prof is not None:
                only = {(r.framework, r.arch, r.precision) for r in rows if r.source == s}
                try:
                    prof = fit_release_nodes(
                        prof, train, cat, only=only, min_rows=RELEASE_MIN_ROWS_WHATIF
                    )
                except PlannerError:
                    prof = None
            profiles[key] = prof
            cache_p.write_bytes(pickle.dumps(profiles))
        out[s] = profiles[key]
        asof.fit_fold(s, [r for r in rows if r.source == s], train)
        for (fold, fw, day), plan in asof.plans.items():
            k = ("asof", fold, fw, day)
            if fold == s and k in profiles:
                plan["fit"] = profiles[k]
    return Folds(out, asof, True, (profiles, cache_p))


def _keep_asof(folds: Folds) -> None:
    """Store the as-of fits made while predicting in the ``--cache`` pickle."""
    if folds.asof is None or folds.cache is None:
        return
    profiles, cache_p = folds.cache
    new = False
    for (fold, fw, day), plan in folds.asof.plans.items():
        k = ("asof", fold, fw, day)
        if "fit" in plan and k not in profiles:
            profiles[k], new = plan["fit"], True
    if new:
        cache_p.write_bytes(pickle.dumps(profiles))


#: what-if (``--mla-comm-eff``): (comm_eff, engines, vendor[, any_model]) replacing the fitted
#: comm_eff of MLA rows (``any_model`` true, ``--comm-any-model``: of every model's rows) of
#: those engines on that vendor's GPUs (``"all"``: every vendor); None: off
COMM_WHATIF: tuple[float, frozenset, str] | None = None


def comm_override(params, engine: str, vendor: str, is_mla: bool, spec=None):
    """``params`` with ``comm_eff`` replaced by the what-if's value where ``spec`` =
    (comm_eff, engines, vendor[, any_model]) covers the row (an MLA model, or any model when
    ``any_model``; its engine, its GPU's vendor), else ``params`` itself. The fold's other fitted values stay as they are: a diagnosis of
    what the fitted comm_eff carries, not a refit (s9-mlaprompt)."""
    if spec is None or not (is_mla or (len(spec) > 3 and spec[3])):
        return params
    eff, engines, ven = spec[:3]
    if engine in engines and (ven == "all" or vendor == ven):
        return params.with_(comm_eff=eff)
    return params


def _predict(r, row, folds, cat, scale, first_token_s=None):
    try:
        params, prov, used = folds.params(r, cat)
    except PlannerError:
        return None
    if COMM_WHATIF is not None:
        mla = cat.model_ref(r.model).is_mla
        params = comm_override(params, r.framework, r.vendor, mla, COMM_WHATIF)
    row = {k: ("" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
           for k, v in row.items()}  # fmt: skip
    d = serving_row_details(row, cat, params, prefill_scale=scale, first_token_s=first_token_s)
    v = d.get(r.metric)
    if v is None or not np.isfinite(v) or v <= 0:
        return None
    return {
        "id": r.id,
        "source": r.source,
        "engine": r.framework,
        "framework": r.framework,
        "release": cell(row, "framework_version"),
        "as_of": cell(row, "as_of"),
        "vendor": r.vendor,
        "gpu": r.gpu,
        "model": r.model,
        "family": latency_family(cat.model_ref(r.model)),
        "precision": r.precision,
        "tp": cell(row, "tp"),
        "mode": r.mode,
        "client": _client(row),
        "isl": cell(row, "isl"),
        "osl": cell(row, "osl"),
        "concurrency": cell(row, "concurrency"),
        "rate": cell(row, "request_rate"),
        "metric": r.metric,
        "metric_class": metric_class(r.metric),
        "measured": r.value,
        "predicted": float(v),
        "err_pct": 100 * (float(v) / r.value - 1),
        "ttft_ms_median_pred": d.get("ttft_ms_median"),
        "tpot_ms_median_pred": d.get("tpot_ms_median"),
        "tpot_ms_mean_pred": d.get("tpot_ms_mean"),
        # the run's predicted total token rate (offline bursts: the run's length, which
        # their mean TTFT follows; scripts/ttft_groups.py burst_table)
        "total_tok_s_pred": d.get("total_tok_s"),
        # the source's client definition of this metric and whether the simulator's
        # statistic is it (planner.benchmarks.client_metrics; sources.yaml client_metrics)
        "client_definition": definition_check(r.source, r.metric)[0],
        "definition_agrees": definition_check(r.source, r.metric)[1],
        "prefill_scale": scale,
        "over_capacity": bool(d.get("over_capacity", False)),
        "queue_growth": d.get("queue_growth", float("nan")),
        "provenance": prov,
        "release_used": used,
        # the fitted node's values the row was simulated with (docs/changes/2026-12-07f/vllmlat.md)
        "comm_eff": params.comm_eff,
        "mem_eff": params.mem_eff,
        "compute_eff": params.compute_eff,
        "attn_eff": params.attn_eff,
        "note": d.get("note", ""),
        "chunked_prefill": "off (vLLM V0, MLA)"
        if "V0 with MLA: chunked prefill off" in d.get("note", "")
        else _chunked(cell(row, "notes")),
        **_engine_cells(d.get("note", "")),
        "client_detail": _client_detail(row),
        "prompt_tokens": _prompt_tokens(row),
        "itl_ms": d.get("itl_ms_median"),
        "busy": 0.0
        if r.mode in ("static_batch", "single_stream")
        or (r.mode == "concurrency" and float(cell(row, "concurrency") or 0) < 2)
        else 1.0,
        "notes_text": cell(row, "notes"),
        "first_token_ms": 1e3
        * first_token_wait(
            r.framework, cell(row, "framework_version"), cell(row, "notes"), first_token_s
        ),
    }


def _coverage(out):
    """TTFT band coverage, held out: each source's rows against p10-p90 of the other
    sources' held-out measured / predicted TTFT (after their own scale), pooled over engines
    and families (the per-group bands rest on two or three sources each: too few)."""
    t = [d for d in out if d["metric_class"] == "ttft"]
    q = np.array([d["measured"] / d["predicted"] for d in t])
    src = np.array([d["source"] for d in t])
    inside = 0
    for i, d in enumerate(t):
        band = ratio_band(q[src != d["source"]])
        d["inside"] = band is not None and band[0] <= q[i] <= band[1]
        inside += d["inside"]
    pct = 100 * inside / max(len(t), 1)
    print(f"TTFT band coverage (held out): {inside}/{len(t)} = {pct:.1f}%")
    return pct


def _write(ttft, out, first_token=None):
    from planner.catalog.latency import LATENCY_FILE, FirstTokenPath, LatencyTerms

    scales = fit_prefill_scales(ttft)
    held = [d for d in out if d["metric_class"] == "ttft"]
    band = ratio_band([d["measured"] / d["predicted"] for d in held])
    fixed = []
    for p in scales:
        x = [d["measured"] / d["predicted"] for d in held if d["family"] == p.family
             and (p.framework is None or d["engine"] == p.framework)]  # fmt: skip
        b = ratio_band(x)
        fixed.append(p.model_copy(update={"ttft_ratio_p10": b and round(b[0], 4),
                                          "ttft_ratio_p90": b and round(b[1], 4),
                                          "scale": round(p.scale, 4)}))  # fmt: skip
    terms = LatencyTerms(
        source="median measured / predicted TTFT of the public serving rows "
        "(data/benchmarks/public*.csv, metric ttft_ms_*) predicted by the serving simulator "
        "with prefill_scale 1 and the leave-one-source-out profile of each row's source "
        "(scripts/latency_rows.py --write; rows in docs/latency_rows.csv)",
        as_of=dt.date.today(),
        method="planner.calibration.latency_fit.fit_prefill_scales (min 10 rows, 2 sources; "
        "clipped to 0.25-8); ttft_ratio_p10/p90: measured / predicted TTFT of the rows "
        "predicted leave-one-source-out WITH the scale fitted without their source (per group; "
        "the top-level pair pools every held-out TTFT row: the TTFT band)",
        prefill_scales=tuple(fixed),
        ttft_ratio_p10=round(band[0], 4),
        ttft_ratio_p90=round(band[1], 4),
        trtllm_first_token=None
        if first_token is None
        else FirstTokenPath(
            latency_s=first_token[0],
            n_rows=first_token[1],
            n_sources=first_token[2],
            source="TTFT of the public serving rows on TensorRT-LLM's PyTorch backend "
            "(data/benchmarks/public*.csv), predicted without the term (scripts/latency_rows.py "
            "--write)",
            as_of=dt.date.today(),
            note=FIRST_TOKEN_NOTE,
        ),
    )
    import yaml

    LATENCY_FILE.write_text(
        "# serving latency terms (generated by scripts/latency_rows.py --write; see\n"
        "# planner/catalog/latency.py)\n"
        + yaml.safe_dump(terms.model_dump(mode="json"), sort_keys=False, width=100)
    )
    print("wrote", LATENCY_FILE)


def _table(rows, by):
    o = pd.DataFrame(rows)
    o = o[o["metric_class"].isin(["ttft", "tpot/itl"])]
    o["ape"] = o["err_pct"].abs()
    return o.groupby(["metric_class", *by]).agg(
        n=("ape", "size"), mdape_pct=("ape", "median"), bias_pct=("err_pct", "median")
    )


def _md(df) -> str:
    df = df.reset_index()
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "---|" * len(df.columns)
    body = [
        "| " + " | ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in r) + " |"
        for r in df.itertuples(index=False)
    ]
    return "\n".join([head, sep, *body])


def _write_section(base, out, cov0, cov1, cat):
    from planner.benchmarks.io import load_measurements
    from planner.benchmarks.mlperf_latency import tight_tpot_table
    from planner.calibration.sections import LATENCY_SECTION, put_section
    from planner.catalog.latency import load_latency
    from planner.catalog.profile import load_profile

    parts = []
    for by in ([], ["engine"], ["vendor"]):
        b, a_ = _table(base, by), _table(out, by)
        j = b.join(a_, lsuffix="_before", rsuffix="_after").drop(columns=["n_after"])
        parts.append(_md(j.rename(columns={"n_before": "n"})))
    over = [d for d in base if d.get("over_capacity")]
    within = _md(_table([d for d in base if not d.get("over_capacity")], []))
    load_latency.cache_clear()
    terms = load_latency()
    sc = pd.DataFrame([p.model_dump() for p in terms.prefill_scales])
    sc["framework"] = sc["framework"].fillna("all engines")
    mp = tight_tpot_table(load_measurements(public_files_default(), cat), cat, load_profile())
    begin, end = LATENCY_SECTION
    block = "\n".join(
        [
            begin,
            "## Serving latency on public runs: TTFT and TPOT, leave-one-source-out (issue 32)",
            "",
            "Every public serving row with a TTFT or TPOT (`docs/latency_rows.csv`: measured, "
            "predicted, error, source, engine and release, vendor, lengths, concurrency or rate, "
            "client), predicted by the serving simulator with the profile fitted without the "
            "row's source, at the row's engine release as `planner validate` predicts it (the "
            "release's node, else the nearest release's; a row naming none: the fit as of its "
            "date; `release_used` in the CSV; until 2026-12-07 this section took the fit over "
            "every release, and CDNA3 SGLang 0.5.x rows the pooled SGLang-on-AMD node: AMD "
            "TPOT 43.6%). *before*: no prefill scale (SGLang's continuous-decode wait, which "
            "needs no fit, included; on main before issue 32's latency work TTFT was 44.8% / "
            "-42.0% and TPOT 30.2% / +16.4%); *after*: the prefill scale of the row's "
            "engine and latency family fitted without the row's source "
            "(`planner.calibration.latency_fit`; `scripts/latency_rows.py --write`). Targets: "
            "TTFT MdAPE <= 20% with |bias| <= 10%, TPOT <= 15%, TTFT band coverage >= 75%.",
            "",
            "**What planner uses: *before*.** The prefill scale is not applied "
            "(`planner.catalog.latency.APPLY_PREFILL_SCALE = False`): it lowers TTFT but "
            "raises TPOT, because the same runs' decode steps are already predicted too slow "
            "above 16 clients (at 1-4 clients it costs TPOT nothing); the product's replicas "
            "and disaggregated pools never take it. *after* is kept as the record of that "
            "test.",
            "",
            f"TTFT band coverage (each source against the p10-p90 band of the other sources' "
            f"held-out TTFT ratios, all engines pooled): before {cov0:.1f}%, after "
            f"{cov1:.1f}%.",
            "",
            *[x + "\n" for x in parts],
            "trtllm-serve's first-token path on TensorRT-LLM's PyTorch backend (a latency "
            "outside the engine loop, 100-120 ms fitted leave-one-source-out on the TTFT of "
            "the PyTorch-backend rows; `planner.benchmarks.scheduler_waits.first_token_wait`) "
            "is in both columns.",
            "",
            f"Engine admission gates the rows' notes state (SGLang scheduler-recv-interval and "
            f"continuous decode steps, TensorRT-LLM batch wait and attention-DP balance; "
            f"`planner.benchmarks.scheduler_waits`) are in both columns. {len(over)} rows are "
            f"open-loop runs simulated above their predicted capacity (the queue grows; "
            f"`over_capacity` in the CSV): a capacity error, scored by the throughput rows. "
            f"*before* without them:",
            "",
            within,
            "",
            "Prefill scales of the bundled file (`data/calibration/latency.yaml`; the band is "
            "p10-p90 of measured / predicted TTFT held out, after the scale):",
            "",
            _md(sc.set_index("framework")),
            "",
            "### MLPerf Llama-2-70B Server and Interactive: per-GPU throughput at the limits",
            "",
            "Output tok/s per GPU at the largest Poisson rate whose P99 TTFT and TPOT meet the "
            "scenario's limits (Server 2 s / 200 ms, Interactive 450 ms / 40 ms; "
            "`planner.benchmarks.mlperf_latency`, bundled profile), against the results "
            "(median over systems and rounds). Target: within 15% and the same order.",
            "",
            _md(mp.set_index("mode")),
            end,
            "",
        ]
    )
    put_section("docs/accuracy.md", block, LATENCY_SECTION)
    print("wrote the latency section of docs/accuracy.md")


#: what latency.yaml says of the first-token path's value
FIRST_TOKEN_NOTE = (
    "trtllm-serve on TensorRT-LLM's PyTorch backend (the default from 1.0) delivers the first "
    "token a near-constant time later than the simulated engine; fitted on the public TTFT rows "
    "of that path (grid 0-200 ms by 20 ms, median |log error|, runs from 2025-07; "
    "planner.calibration.latency_fit.fit_first_token over every source; refitted without "
    "each held-out source in leave-one-source-out). Added to TTFT and E2E "
    "outside the engine loop. The mechanism in the source is not identified "
    "(planner/benchmarks/scheduler_waits.py)"
)


def _first_token_extra(keep, every, recs) -> list:
    """The rows of ``every`` outside ``keep`` (``--source`` / ``--engine``) that
    :func:`_first_token_loso` fits a kept fold's first-token latency on: the other sources'
    TensorRT-LLM PyTorch-backend TTFT rows dated from ``CURRENT_SINCE``, predicted by their own
    folds and not reported. Without them a fold's latency depended on which sources the run
    kept (``--source InferenceX``: none, 120-140 ms missing; docs/changes s12-epsub)."""
    if not any(r.framework == "trtllm" for r in keep):
        return []
    srcs, since = {r.source for r in keep}, CURRENT_SINCE.isoformat()
    return [
        r for r in every
        if r.source not in srcs and r.framework == "trtllm" and metric_class(r.metric) == "ttft"
        and trtllm_pytorch_backend(cell(recs[r.id], "framework_version"),
                                   cell(recs[r.id], "notes"))
        and str(recs[r.id].get("as_of") or "")[:10] >= since
    ]  # fmt: skip


def _first_token_loso(keep, recs, profiles, cat) -> tuple[dict, Any]:
    """(row id -> trtllm-serve's first-token latency [s] fitted without the row's source,
    the fit over every source ``(latency [s], rows, sources)`` or None), on TensorRT-LLM rows
    on the PyTorch backend (``trtllm_pytorch_backend``): the grid point whose TTFT
    predictions of the other sources' such rows have the smallest median |log error|
    (``planner.calibration.latency_fit.fit_first_token``, from one pass without the term:
    it is added after the simulation); a fold with too few rows gets none."""
    rows = [
        r for r in keep
        if r.framework == "trtllm" and metric_class(r.metric) == "ttft"
        and trtllm_pytorch_backend(cell(recs[r.id], "framework_version"),
                                   cell(recs[r.id], "notes"))
    ]  # fmt: skip
    first = []
    for r in rows:
        d = _predict(r, recs[r.id], profiles, cat, 1.0, None)
        if d is not None:
            first.append(d | {"metric": r.metric})
    out = {}
    for src in sorted({r.source for r in keep if r.framework == "trtllm"}):
        fit = fit_first_token(first, exclude_source=src)
        v = None if fit is None else fit[0]
        print(f"first-token path without {src}: {v if v is None else f'{v * 1e3:.0f} ms'}")
        if v:
            out.update({r.id: v for r in keep if r.source == src})
    every = fit_first_token(first)
    print("first-token path, every source:", every)
    return out, every


_ROW_COLS = ["id", "source", "gpu", "model", "precision", "tp", "isl", "osl", "concurrency",
             "rate", "client", "client_detail", "chunked_prefill", "max_num_batched_tokens",
             "max_num_batched_tokens_from", "max_num_seqs", "max_num_seqs_from", "metric",
             "measured", "predicted", "err_pct", "first_token_ms", "tpot_ratio_same_run", "cause"]  # fmt: skip


def ttft_terms_table(out: list[dict]) -> pd.DataFrame:
    """TTFT held out by source with each term of
    :data:`planner.calibration.latency_fit.TTFT_TERM_GRIDS` added after the simulation,
    fitted per engine on the other sources' rows (``ttft_term_loso``; exact: the terms sit
    outside the engine loop, so no row is simulated again): n, MdAPE and median error [%]
    over every TTFT row, per engine and per vendor."""
    t = [d for d in out if d["metric_class"] == "ttft"]
    rows = []
    for form in ("none", *TTFT_TERM_GRIDS):
        pred = (
            [d["predicted"] for d in t]
            if form == "none"
            else [p for p, _ in ttft_term_loso(t, form, group="engine")]
        )
        err = pd.Series([100 * (p / d["measured"] - 1) for p, d in zip(pred, t, strict=True)])
        o = pd.DataFrame({"err": err, "ape": err.abs(), "engine": [d["engine"] for d in t],
                          "vendor": [d["vendor"] for d in t]})  # fmt: skip
        row = {"term": form, "n": len(o), "mdape_pct": o.ape.median(), "bias_pct": o.err.median()}
        for by in ("engine", "vendor"):
            for k, g in o.groupby(by):
                row[f"{k}"] = f"{g.ape.median():.1f} / {g.err.median():+.1f}"
        rows.append(row)
    return pd.DataFrame(rows).set_index("term")


_ISL_BANDS = (0, 1500, 4000, 1e9)
_CONC_BANDS = (0, 4, 16, 64, 1e9)


def where_table(out: list[dict]) -> pd.DataFrame:
    """Where the TTFT error sits: TTFT rows dated from ``CURRENT_SINCE`` by engine, latency
    family, vendor, prompt length band and concurrency band (closed-loop rows; other modes
    under ``-``): n, MdAPE, median error [%], the median measured / predicted TTFT and the
    median measured / predicted TPOT of the same runs (``tpot_ratio_same_run``)."""
    o = pd.DataFrame([d for d in out if d["metric_class"] == "ttft"])
    o = o[o["as_of"].astype(str).str.slice(0, 10) >= CURRENT_SINCE.isoformat()].copy()
    o["isl_band"] = pd.cut(o["prompt_tokens"], _ISL_BANDS, labels=["<1.5k", "1.5-4k", ">4k"])
    conc = pd.to_numeric(o["concurrency"], errors="coerce").where(o["mode"] == "concurrency")
    o["conc_band"] = pd.cut(conc, _CONC_BANDS, labels=["1-4", "5-16", "17-64", ">64"])
    o["conc_band"] = o["conc_band"].cat.add_categories("-").fillna("-")
    o["isl_band"] = o["isl_band"].cat.add_categories("?").fillna("?")
    o["ratio"] = o["measured"] / o["predicted"]
    o["ape"] = o["err_pct"].abs()
    return o.groupby(["engine", "family", "vendor", "isl_band", "conc_band"], observed=True).agg(
        n=("ape", "size"),
        mdape_pct=("ape", "median"),
        bias_pct=("err_pct", "median"),
        ttft_ratio=("ratio", "median"),
        tpot_ratio_same_run=("tpot_ratio_same_run", "median"),
    )


def prompt_slope_table(out: list[dict], max_clients: float = 4.0) -> pd.DataFrame:
    """TTFT against the prompt's length at 1-``max_clients`` clients (closed loops, where TTFT
    is about one prefill): per engine, GPU, precision and TP, the least-squares line
    ``TTFT = a + b x prompt k-tokens`` of the measured and of the predicted TTFT (groups with
    at least two prompt lengths): ``a`` [ms] is the fixed part (host, first token,
    eager launches), ``b`` [ms per 1,000 prompt tokens] the prompt's per-token cost
    (matmuls, attention, all-reduces). A slope ratio far from 1 is a per-token term
    mis-sized for that GPU; an intercept gap a fixed cost (s9-mlaprompt)."""
    o = pd.DataFrame([d for d in out if d["metric_class"] == "ttft"])
    if o.empty:
        return pd.DataFrame()
    conc = pd.to_numeric(o["concurrency"], errors="coerce")
    o = o[(o["mode"] == "concurrency") & (conc <= max_clients)].dropna(subset=["prompt_tokens"])
    rows = []
    for key, g in o.groupby(["engine", "family", "gpu", "precision", "tp"]):
        if g["prompt_tokens"].nunique() < 2:
            continue
        x = np.c_[np.ones(len(g)), g["prompt_tokens"].to_numpy(float) / 1000.0]
        (am, bm), (ap, bp) = (np.linalg.lstsq(x, g[c].to_numpy(float), rcond=None)[0]
                              for c in ("measured", "predicted"))  # fmt: skip
        rows.append(dict(zip(("engine", "family", "gpu", "precision", "tp"), key, strict=True))
                    | {"n": len(g), "measured_a_ms": am, "predicted_a_ms": ap,
                       "measured_b_ms_per_k": bm, "predicted_b_ms_per_k": bp,
                       "slope_ratio": bm / bp if bp else float("nan")})  # fmt: skip
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).set_index(["engine", "family", "gpu", "precision", "tp"])


def _rows_md(out: list[dict], engines: list[str]) -> str:
    """Per-row TTFT tables of ``engines`` and the TTFT misses by cause (every engine)."""
    o = pd.DataFrame([d for d in out if d["metric_class"] == "ttft"])
    o["ape"] = o["err_pct"].abs()
    parts = ["# TTFT rows held out by source (scripts/latency_rows.py --rows-md)", ""]
    by = o.groupby(["engine", "cause"]).agg(
        n=("ape", "size"), mdape_pct=("ape", "median"), bias_pct=("err_pct", "median")
    )
    parts += ["## TTFT by engine and cause", "", _md(by), ""]
    by_src = o.groupby(["engine", "source"]).agg(
        n=("ape", "size"), mdape_pct=("ape", "median"), bias_pct=("err_pct", "median")
    )
    parts += ["## TTFT by engine and source", "", _md(by_src), ""]
    parts += [
        "## Where the TTFT error sits (runs from 2025-07; measured / predicted TTFT and the "
        "same runs' TPOT ratio)",
        "",
        _md(where_table(out)),
        "",
        "## TTFT against the prompt's length at 1-4 clients (a + b x prompt k-tokens, "
        "measured and predicted)",
        "",
        _md(prompt_slope_table(out).round(1)),
        "",
    ]
    for e in engines:
        t = o[o["engine"] == e].sort_values(["cause", "source", "id"])
        cols = [c for c in _ROW_COLS if c in t.columns]
        parts += [f"## {e}: {len(t)} TTFT rows", "", _md(t[cols].set_index("id")), ""]
    return "\n".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default="docs/latency_rows.csv")
    ap.add_argument("--cache", default="/tmp/latency_loso_profiles.pkl")
    ap.add_argument("--source", default=None, help="only sources containing this text")
    ap.add_argument("--engine", default=None, help="only rows of this engine (e.g. vllm)")
    ap.add_argument("--no-scale", action="store_true", help="prefill scale 1 (the before)")
    ap.add_argument("--write", action="store_true", help="write data/calibration/latency.yaml")
    ap.add_argument(
        "--rows-md",
        default=None,
        help="write the per-row TTFT tables of --engines and the misses by cause (Markdown)",
    )
    ap.add_argument("--engines", default="vllm,trtllm", help="engines of --rows-md")
    ap.add_argument(
        "--no-first-token",
        action="store_true",
        help="no fitted first-token latency for trtllm-serve's PyTorch backend (the before)",
    )
    ap.add_argument(
        "--engine-prefill-first",
        action="store_true",
        help="follow each framework's prefill-first policy (SGLang: prompt chunks in steps "
        "of their own; planner.serving.replica.ENGINE_PREFILL_FIRST_DEFAULT is off)",
    )
    ap.add_argument(
        "--overlap-lag",
        action="store_true",
        help="one more iteration before a prompt joins on engines that overlap the host "
        "(planner.benchmarks.scheduler_waits.overlap_wait; "
        "planner.benchmarks.serving_rows.OVERLAP_LAG, on by default since the tenth pass)",
    )
    ap.add_argument(
        "--no-overlap-lag",
        action="store_true",
        help="the before of the tenth pass: no overlap-scheduler lag",
    )
    ap.add_argument(
        "--sglang-release-gates",
        action="store_true",
        help="SGLang >= 0.4.0 runs without the admission gate of --num-continuous-decode-steps, "
        "a flag those releases no longer read "
        "(planner.benchmarks.scheduler_waits.CONTINUOUS_DECODE_STEPS_BY_RELEASE, on by default "
        "since the tenth pass)",
    )
    ap.add_argument(
        "--no-sglang-release-gates",
        action="store_true",
        help="the before of the tenth pass: every stated --num-continuous-decode-steps gates",
    )
    ap.add_argument(
        "--no-rearrival",
        action="store_true",
        help="the before of the eleventh pass: a closed loop's next request joins the next "
        "iteration with no wait (planner.benchmarks.scheduler_waits.rearrival_wait; "
        "planner.benchmarks.serving_rows.CLOSED_LOOP_REARRIVAL, on by default)",
    )
    ap.add_argument(
        "--no-prompt-gemm",
        action="store_true",
        help="the before of s14-ttft: no excess for a prompt's dense FP8 linears where the "
        "launch script turns DeepGEMM off (planner.benchmarks.prompt_gemm.PROMPT_GEMM_RATE, "
        "on by default)",
    )
    ap.add_argument(
        "--rearrival-phase",
        type=float,
        default=None,
        help="what-if: the closed-loop re-arrival wait in iterations (default "
        "planner.benchmarks.scheduler_waits.REARRIVAL_PHASE, 0.5; 1 = the request lands just "
        "after the iteration was formed)",
    )
    ap.add_argument(
        "--no-release",
        action="store_true",
        help="every row with its fold's fit over every release (the before of 2026-12-07), "
        "not its release's node as planner validate predicts it",
    )
    ap.add_argument(
        "--gate-burst",
        action="store_true",
        help="rows with an admission gate also wait behind the prompts it releases together "
        "(planner.benchmarks.scheduler_waits.burst_wait; on by default: serving_rows.GATE_BURST)",
    )
    ap.add_argument(
        "--ttft-terms",
        action="store_true",
        help="print TTFT held out with each first-token term form added after the simulation, "
        "fitted per engine leave-one-source-out (planner.calibration.latency_fit.TTFT_TERM_GRIDS)",
    )
    ap.add_argument(
        "--scale-engines",
        default=None,
        help="only these engines (comma-separated ids) take a prefill scale (default: every one)",
    )
    ap.add_argument(
        "--scale-own-group",
        action="store_true",
        help="an engine takes only its own group's prefill scale, never the family's over "
        "all engines",
    )
    ap.add_argument(
        "--prompt-slope",
        action="store_true",
        help="print TTFT's fixed part and per-prompt-token slope at 1-4 clients, measured "
        "and predicted, per engine, GPU, precision and TP (prompt_slope_table)",
    )
    ap.add_argument(
        "--mla-comm-eff",
        type=float,
        default=None,
        help="what-if: this comm_eff instead of the fitted one on MLA rows of "
        "--mla-comm-engines on --mla-comm-vendor GPUs (0.68: the planner's own NCCL "
        "all-reduce on H200, data/benchmarks/nccl_h200_x2_micro.csv)",
    )
    ap.add_argument("--mla-comm-engines", default="sglang", help="engines of --mla-comm-eff")
    ap.add_argument("--mla-comm-vendor", default="nvidia", help="vendor of --mla-comm-eff (or all)")
    ap.add_argument(
        "--comm-any-model",
        action="store_true",
        help="--mla-comm-eff on every model's rows of those engines, not only MLA (the vLLM "
        "Qwen3-235B TP4 / TP8 rows: docs/changes/2026-12-07e/vllmsrc.md cause 3)",
    )
    ap.add_argument(
        "--series-first",
        action="store_true",
        help="what-if: a release whose architecture's nearest release node is of another "
        "series takes its own series' node on another architecture "
        "(planner.catalog.release_profile.SERIES_FIRST, off)",
    )
    ap.add_argument(
        "--frontend-queue-ms",
        type=float,
        default=None,
        help="what-if: vLLM's API server as a FIFO queue of this service time per request "
        "[ms] ahead of admission, offline bursts (planner.benchmarks.frontend_queue, off)",
    )
    ap.add_argument(
        "--release-min-rows",
        type=int,
        default=None,
        help="what-if: the fittable rows a release node needs in each fold (default "
        "planner.calibration.release_fit.RELEASE_MIN_ROWS, 8)",
    )
    a = ap.parse_args(argv)
    if a.frontend_queue_ms is not None:
        import planner.benchmarks.frontend_queue as _fe

        _fe.FRONTEND_QUEUE = a.frontend_queue_ms > 0
        _fe.SERVICE_S_PER_REQUEST = a.frontend_queue_ms / 1e3
    if a.release_min_rows is not None:
        global RELEASE_MIN_ROWS_WHATIF
        RELEASE_MIN_ROWS_WHATIF = a.release_min_rows
    if a.series_first:
        import planner.catalog.release_profile as _rp

        _rp.SERIES_FIRST = True
    global COMM_WHATIF
    if a.mla_comm_eff is not None:
        COMM_WHATIF = (a.mla_comm_eff, frozenset(a.mla_comm_engines.split(",")),
                       a.mla_comm_vendor, a.comm_any_model)  # fmt: skip
    scale_engines = set(a.scale_engines.split(",")) if a.scale_engines else None
    if a.gate_burst:
        import planner.benchmarks.serving_rows as _rows

        _rows.GATE_BURST = True
    if a.overlap_lag:
        import planner.benchmarks.serving_rows as _rows

        _rows.OVERLAP_LAG = True
    if a.sglang_release_gates:
        import planner.benchmarks.scheduler_waits as _waits

        _waits.CONTINUOUS_DECODE_STEPS_BY_RELEASE = True
    if a.no_overlap_lag:
        import planner.benchmarks.serving_rows as _rows

        _rows.OVERLAP_LAG = False
    if a.no_sglang_release_gates:
        import planner.benchmarks.scheduler_waits as _waits

        _waits.CONTINUOUS_DECODE_STEPS_BY_RELEASE = False
    if a.no_rearrival:
        import planner.benchmarks.serving_rows as _rows

        _rows.CLOSED_LOOP_REARRIVAL = False
    if a.no_prompt_gemm:
        import planner.benchmarks.prompt_gemm as _pg

        _pg.PROMPT_GEMM_RATE = False
    if a.rearrival_phase is not None:
        import planner.benchmarks.scheduler_waits as _waits

        _waits.REARRIVAL_PHASE = a.rearrival_phase
    if a.engine_prefill_first:
        import planner.serving.replica as _replica

        _replica.ENGINE_PREFILL_FIRST_DEFAULT = True
    cat = load_catalog()
    df = load_measurements(public_files_default(), cat)
    rows = prepare_rows(df, cat)
    own_rows = [r for r in prepare_rows(load_measurements(own_files_default(), cat), cat)]
    recs = {str(r["id"]): r for r in df.to_dict("records")}
    keep = []
    for r in rows:
        if r.fit_kind != "serving":
            continue
        mc = metric_class(r.metric)
        mlperf = (
            r.source.startswith("MLPerf")
            and r.model.startswith("llama-2-70b")
            and r.mode in ("server", "interactive")
        )
        if mc in ("ttft", "tpot/itl") or mlperf:
            keep.append(r)
    every = keep
    if a.source:
        keep = [r for r in keep if a.source.lower() in r.source.lower()]
    if a.engine:
        keep = [r for r in keep if r.framework == a.engine]
    ft_keep = keep + _first_token_extra(keep, every, recs)
    if (a.source or a.engine) and not a.no_scale:  # the first-token fit reads every source
        print("note: with --source / --engine the prefill scale is fitted on the kept rows "
              "only, not the full run's (use --no-scale to compare)", file=sys.stderr)  # fmt: skip
    cache_p = Path(a.cache)
    profiles = pickle.loads(cache_p.read_bytes()) if cache_p.exists() else {}
    for s in sorted({r.source for r in ft_keep}):
        if s in profiles:
            continue
        print("fit without", s, file=sys.stderr, flush=True)
        train = [r for r in rows if r.source != s and (r.ok or r.steady)] + [
            r for r in own_rows if r.ok or r.steady
        ]
        targets = [(r.vendor or None, r.framework, r.arch, r.gpu, r.precision or None,
                    r.family) for r in rows if r.source == s and r.vendor != "?"]  # fmt: skip
        try:
            profiles[s] = fit_profile(train, targets=targets)
        except PlannerError:
            profiles[s] = None
        cache_p.write_bytes(pickle.dumps(profiles))
    folds = _release_folds(ft_keep, rows, own_rows, df, cat, profiles, cache_p, not a.no_release)
    ft, ft_all = ({}, None) if a.no_first_token else _first_token_loso(ft_keep, recs, folds, cat)
    base = [_predict(r, recs[r.id], folds, cat, 1.0, ft.get(r.id)) for r in keep]
    _keep_asof(folds)
    base = [b for b in base if b is not None]
    ttft = [b for b in base if b["metric_class"] == "ttft"]
    if a.no_scale:
        out = base
        _coverage(out)
    else:
        cov0 = _coverage([dict(b) for b in base])
        out = []
        for src in sorted({b["source"] for b in base}):
            scales = fit_prefill_scales(ttft, exclude_source=src)
            for b in base:
                if b["source"] != src:
                    continue
                sc, grp = scale_for(scales, b["engine"], b["family"], engines=scale_engines,
                                    fallback=not a.scale_own_group)  # fmt: skip
                r = next(x for x in keep if x.id == b["id"] and x.metric == b["metric"])
                d = b if sc == 1.0 else _predict(r, recs[r.id], folds, cat, sc, ft.get(r.id))
                if d is None:
                    continue
                d["measured_over_unscaled"] = b["measured"] / b["predicted"]
                d["scale_group"] = grp
                out.append(d)
        cov1 = _coverage(out)
        if a.write:
            _write(ttft, out, ft_all)
            _write_section(base, out, cov0, cov1, cat)
    assign_causes(out)
    if a.ttft_terms:
        print("TTFT with a term after the simulation, fitted per engine held out by source:")
        print(ttft_terms_table(out).round(1).to_string(), "\n")
    if a.prompt_slope:
        print("TTFT = a + b x prompt k-tokens at 1-4 clients, measured and predicted:")
        print(prompt_slope_table(out).round(1).to_string(), "\n")
    if a.rows_md:
        Path(a.rows_md).write_text(_rows_md(out, a.engines.split(",")))
        print("wrote", a.rows_md)
    o = pd.DataFrame(out).drop(columns=["framework", "notes_text"])
    lat = o[o["metric_class"] == "tpot/itl"]
    print("TPOT / ITL rows by the source client's definition (sources.yaml client_metrics):")
    print(lat.groupby(["client_definition", "definition_agrees"], dropna=False).size().to_string())
    o.to_csv(a.output, index=False, float_format="%.4g")
    o["ape"] = o["err_pct"].abs()
    over = o["over_capacity"].astype(bool)
    for label, part in (("all rows", o), ("rows within the predicted capacity", o[~over])):
        print(f"== {label} ({int(over.sum()) if part is o else 0} above capacity included)")
        bys = [["metric_class"], ["metric_class", "engine"], ["metric_class", "vendor"]]
        if a.engine or a.source:  # a few sources: each one, and its model family and TP
            bys += [["metric_class", "source"], ["metric_class", "source", "family", "tp"]]
        for by in bys:
            g = part.groupby(by).agg(
                n=("ape", "size"),
                mdape=("ape", "median"),
                bias=("err_pct", "median"),
            )
            print(g.round(1).to_string(), "\n")
    if over.any():
        print("above the predicted capacity (open-loop rows whose simulated queue grows):")
        print(o[over].groupby(["source", "metric_class"]).size().to_string(), "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
