"""The user's own measurement in a profile: a saved benchmark result of one deployment
(``vllm bench serve --save-result``, :mod:`planner.deploy.results`) with the ``expected.json``
that names the deployment (:mod:`planner.deploy.verify`) becomes benchmark rows, and a node
fitted on them alone takes the place of its (GPU, framework, precision) in the profile.

How the node is fitted: the same least-squares fit as every node of the hierarchy
(:func:`planner.calibration.fit._fit_node`), on the user's rows only, with the parameters the
profile gave that deployment before (:func:`~planner.catalog.profile.resolve_params`) as its
prior. The measurement so moves its own deployment's parameters as far as it can explain,
and the rest of the profile is left as it was. Predictions of that (GPU, framework, precision)
then take the node first, and their provenance names the file (``fit (vllm/nvidia-l40s/bf16,
1 dense rows; your measurement: result.json)``).

Which row the fit uses. A request-rate run gives no throughput the engine's speed sets (the
server delivers what it is offered), but its time-averaged number of requests in flight is
known exactly: ``request_throughput x mean E2E`` (Little's law over the run: the sum of the
requests' E2E times divided by the run's duration). The run is fitted as the closed loop of
that many clients (``mode`` concurrency, :func:`~planner.benchmarks.step_rows.closed_loop_predictor`)
delivering the measured output throughput: the engine's step times must give that many
requests in flight their measured E2E. A run at a fixed concurrency is that row as measured;
a run with every request sent at once is an offline row. The latency rows (TTFT, TPOT at P50
and P99) are kept as ``rate`` rows, which the simulator predicts (``planner predict``) and the
fit does not use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planner.benchmarks.schema import SCHEMA_COLUMNS
from planner.calibration.fit import FITTED_KINDS, PreparedRow, _fit_node, _rounded, prepare_rows
from planner.catalog.catalog import Catalog
from planner.catalog.profile import Profile, ProfileNode, resolve_params
from planner.deploy.expected import Expected
from planner.deploy.results import BenchResult
from planner.deploy.verify import compare, loaded_replicas
from planner.errors import PlannerError

#: the ``source`` of a user's measurement row (the file's path follows)
MEASURED_SOURCE = "your measurement"
#: latency rows kept for the simulator: (metric column, latency metric, statistic)
LATENCY_ROWS = (
    ("ttft_ms_median", "ttft", "median"),
    ("ttft_ms_p99", "ttft", "p99"),
    ("tpot_ms_median", "tpot", "median"),
    ("tpot_ms_p99", "tpot", "p99"),
    ("e2e_ms_median", "e2e", "median"),
)


def result_rows(
    result: BenchResult,
    expected: Expected,
    catalog: Catalog | None = None,
    replicas: int | None = None,
) -> tuple[Any, list[str]]:
    """Benchmark-schema rows (a DataFrame) of one result, and the comparison's warnings.

    The deployment (GPU, framework, release, precision, layout, engine settings) comes from
    ``expected``; the lengths (means of the run), rate, date and values from ``result``.
    ``replicas``: how many replicas the run's endpoint spread its load over; default: told by
    the run's rate (:func:`~planner.deploy.verify.loaded_replicas`), else one (said in the
    returned notes).

    Raises
    ------
    PlannerError
        a result of another model than ``expected``, a result without a date (its rows
        would have no ``as_of``), a run too light to fit (under one request in flight)
    """
    import pandas as pd

    compare(expected, result, catalog)  # refuses a run of another model
    opt, r = expected.option, result
    notes = []
    if replicas is None:
        replicas = loaded_replicas(expected, r)
        if replicas is None:
            replicas = 1
            if opt.replicas > 1:
                notes.append(
                    "its rate is neither one replica's nor the fleet's of expected.json: "
                    "taken as a run on one replica (--bench-replicas N says otherwise)"
                )
    if r.as_of is None:
        raise PlannerError(
            f"{r.where}: date {r.date!r} is not the client's %Y%m%d-%H%M%S; the measurement "
            "needs the day it was taken (as_of)"
        )
    gpus = opt.tp * opt.pp * opt.attention_dp * replicas
    isl, osl = round(r.input_tokens_mean), round(r.output_tokens_mean)
    tags = [f"{r.completed} requests", f"{r.backend or 'vllm'} bench serve result"]
    for k in ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization"):
        if getattr(opt, k) is not None:
            tags.append(f"{k}={getattr(opt, k)}")
    if opt.kv_precision:
        tags.append(f"kv_cache_dtype={opt.kv_precision}")
    base = {
        "source": f"{MEASURED_SOURCE}: {r.where}",
        "source_detail": f"{r.where}, run of {r.date}; deployment from expected.json "
        f"({opt.label or opt.gpu})",
        "as_of": r.as_of.isoformat(),
        "hardware": opt.gpu,
        "n_gpus": gpus,
        "tp": opt.tp,
        "pp": opt.pp,
        "ep": opt.ep,
        "attention_dp": opt.attention_dp,
        "model": expected.workload.model,
        "precision": opt.precision,
        "kv_precision": opt.kv_precision or "",
        "framework": opt.framework,
        "framework_version": f"{opt.framework} {opt.release}" if opt.release else "",
        "isl": isl,
        "osl": osl,
        "context_len": isl + osl,
    }
    rows = [{**base, **_fit_row(r, replicas), "notes": "; ".join(tags + [_fit_note(r)])}]
    if math.isfinite(r.request_rate_rps):
        for metric, m, stat in LATENCY_ROWS:
            v = r.latency(m, stat)
            if v is not None:
                rows.append(
                    {
                        **base,
                        "mode": "rate",
                        "request_rate": r.request_rate_rps,
                        "concurrency": r.max_concurrency,
                        "metric": metric,
                        "value": 1000.0 * v,
                        "unit": "ms",
                        "notes": "; ".join(
                            tags + [f"poisson arrivals at {r.request_rate_rps:g} req/s"]
                        ),
                    }
                )
    stem = Path(r.path).stem + (f"-run{r.index + 1}" if r.index else "")
    for i, row in enumerate(rows):
        row["id"] = f"{stem}-{i:02d}"
    df = pd.DataFrame(rows, columns=list(SCHEMA_COLUMNS), dtype=object)
    return df.astype(object).where(df.notna(), None), notes


def _fit_row(r: BenchResult, replicas: int) -> dict[str, Any]:
    """The row the fit uses: see the module docstring."""
    value = {"metric": "output_tok_s_total", "value": r.output_throughput_tok_s, "unit": "tok/s"}
    if math.isfinite(r.request_rate_rps):
        e2e = r.e2e_mean_s()
        if e2e is None:
            raise PlannerError(
                f"{r.where}: the run has neither mean_e2el_ms nor mean_ttft_ms and mean_tpot_ms; "
                "its requests in flight are unknown"
            )
        in_flight = r.request_throughput_rps * e2e
        if in_flight < replicas:
            raise PlannerError(
                f"{r.where}: {in_flight:.2f} requests in flight on average over {replicas} "
                "replica(s): too light a load to tell the engine's speed; rerun at a higher rate"
            )
        return {**value, "mode": "concurrency", "concurrency": round(in_flight)}
    if r.max_concurrency:
        return {**value, "mode": "concurrency", "concurrency": r.max_concurrency}
    return {**value, "mode": "offline", "request_rate": math.inf}


def _fit_note(r: BenchResult) -> str:
    if not math.isfinite(r.request_rate_rps):
        return "the run as measured"
    e2e = r.e2e_mean_s()
    how = (
        "mean_e2el_ms"
        if r.latency("e2e", "mean") is not None
        else "mean TTFT + mean TPOT x (mean output - 1)"
    )
    return (
        f"closed-loop equivalent of a {r.request_rate_rps:g} req/s run: requests in flight = "
        f"request_throughput {r.request_throughput_rps:.4g} req/s x mean E2E {e2e:.4g} s ({how})"
    )


def with_measurement(
    profile: Profile,
    rows: Sequence[PreparedRow],
    catalog: Catalog,
    prior_scale: float = 1.0,
    max_nfev: int = 60,
) -> tuple[Profile, list[str]]:
    """``profile`` with one node per (GPU, framework, precision, model family) of ``rows``
    fitted on those rows alone (prior: the parameters ``profile`` gave that deployment), and
    a line per node saying what it replaced.

    A dense model's node becomes the dense child of the (GPU, framework, precision) node
    when the profile has one holding dense rows; otherwise the node itself (its family child
    of the same family, if any, dropped).
    """
    kinds = set(FITTED_KINDS)
    use = [r for r in rows if r.fit_predictor(kinds) is not None and not r.expert_parallel]
    if not use:
        why = next((r.reason for r in rows if r.reason), "no row can be fitted")
        raise PlannerError(f"the measurement cannot be fitted: {why}")
    groups: dict[tuple, list[PreparedRow]] = {}
    for r in use:
        groups.setdefault((r.vendor, r.framework, r.arch, r.gpu, r.precision, r.family), []).append(
            r
        )
    nodes = list(profile.nodes)
    said = []
    for (vendor, fw, arch, gpu, prec, fam), g in groups.items():
        prior, prov = resolve_params(gpu, fw, prec, catalog=catalog, profile=profile, family=fam)
        params, mdape = _fit_node(g, prior, prior_scale, max_nfev, kinds)
        key = (vendor, fw, arch, gpu, prec)
        here = {
            n.family: n for n in nodes if (n.vendor, n.framework, n.arch, n.gpu, n.precision) == key
        }
        child = fam in profile.split_families and "" in here and here[""].holds(fam)
        node = ProfileNode(
            vendor=vendor,
            framework=fw,
            arch=arch,
            gpu=gpu,
            precision=prec,
            level=5,
            n_rows=len(g),
            sources=tuple(sorted({r.source for r in g})),
            gpus=(gpu,),
            in_sample_mdape=round(mdape, 4),
            params=_rounded(params),
            family=fam if child else "",
            families=(fam,),
        )
        drop = {fam} if child else {"", fam}
        nodes = [
            n
            for n in nodes
            if not ((n.vendor, n.framework, n.arch, n.gpu, n.precision) == key and n.family in drop)
        ]
        nodes.append(node)
        said.append(
            f"{node.label}: fitted on {len(g)} row(s) of your measurement (in-sample error "
            f"{100 * mdape:.1f}%), prior: {prov}"
        )
    out = profile.model_copy(
        update={
            "nodes": tuple(nodes),
            "n_rows_fitted": profile.n_rows_fitted + len(use),
            "data_files": (*profile.data_files, *sorted({r.source for r in use})),
            "method": profile.method + "; then one node per deployment of the user's measurement "
            "fitted on it alone with the profile's parameters for it as the prior "
            "(planner.calibration.measured)",
        }
    )
    return out, said


def measurement_profile(
    profile: Profile,
    pairs: Sequence[tuple[BenchResult, Expected]],
    catalog: Catalog,
    prior_scale: float = 1.0,
    replicas: int | None = None,
) -> tuple[Profile, Any, list[str]]:
    """:func:`with_measurement` of the rows of every (result, expected) pair: (profile, the
    rows as a DataFrame, warnings and what each node replaced)."""
    import pandas as pd

    frames, notes = [], []
    for r, e in pairs:
        df, warn = result_rows(r, e, catalog, replicas)
        frames.append(df)
        notes += [f"{r.where}: {w}" for w in warn]
    df = pd.concat(frames, ignore_index=True)
    prof, said = with_measurement(profile, prepare_rows(df, catalog), catalog, prior_scale)
    return prof, df, notes + said
