"""Calibration: fit the engine's efficiencies and overheads to measured data.

Pipeline (pvlib style: every model has its ``fit_*``):

1. :func:`load_measurements` reads rows in the benchmark schema
   (``shared/reference/benchmarks/README.md``) or the JSON that ``vllm bench serve``
   writes, and validates them (missing columns, unknown ids, non-positive values
   are errors that name the rows; nothing is fitted from a partly valid file).
2. :func:`prepare_rows` turns each row into a predictor ``params -> value``
   (step rows, static batches, single stream, offline throughput) or a reason why
   it cannot be predicted.
3. :func:`fit_profile` fits :class:`~planner.perf.EfficiencyParams` with
   ``scipy.optimize.least_squares`` on log error, top-down over a hierarchy
   ``global -> framework -> framework x arch -> framework x gpu -> framework x gpu x
   precision``. Each node is pulled toward its parent by a Gaussian prior in log
   space, so sparse nodes shrink toward the family value.
4. :func:`resolve_params` picks the deepest node that exists for a (gpu,
   framework, precision) and labels the prediction ``fit``, ``transferred from
   ...`` or ``prior``.
5. :func:`cross_validate` refits without each source (leave-one-source-out) or
   fold (k-fold) and predicts the held-out rows; :func:`accuracy_report` writes
   ``docs/accuracy.md``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, ValidationError

from .catalog import DATA_DIR, Catalog, Frozen, load_catalog
from .errors import PlannerError, UnknownIdError, read_text
from .perf import PRIOR, EfficiencyParams, StepModel, step_model

DEFAULT_PROFILE = DATA_DIR / "calibration" / "profile.yaml"

#: parameters the fit may move, their bounds and the prior width (std-dev of log value)
FIT_BOUNDS: dict[str, tuple[float, float, float]] = {
    "mem_eff": (0.15, 1.0, 0.35),
    "kv_mem_eff": (0.1, 1.0, 0.5),
    "compute_eff": (0.1, 1.0, 0.35),
    "compute_half_tokens": (1.0, 8192.0, 1.5),
    "attn_eff": (0.03, 1.0, 0.6),
    "step_overhead_s": (1e-6, 0.2, 2.5),
    "layer_overhead_s": (1e-8, 2e-3, 2.5),
    "seq_overhead_s": (1e-9, 2e-3, 2.5),
    "eager_layer_s": (1e-7, 5e-3, 3.0),
    "comm_eff": (0.05, 1.0, 0.6),
    "sched_overhead_s": (1e-7, 0.2, 2.5),
}
#: priors of the overheads are not zero in log space: start values for the global node
_START = {
    "step_overhead_s": 2e-4,
    "layer_overhead_s": 5e-6,
    "seq_overhead_s": 1e-6,
    "eager_layer_s": 1e-4,
    "sched_overhead_s": 1e-4,
}
FIT_FIELDS = tuple(FIT_BOUNDS)

REQUIRED_COLUMNS = (
    "hardware",
    "model",
    "framework",
    "mode",
    "metric",
    "value",
    "unit",
)
SCHEMA_COLUMNS = (
    "id",
    "source",
    "source_detail",
    "as_of",
    "hardware",
    "n_gpus",
    "tp",
    "pp",
    "model",
    "precision",
    "kv_precision",
    "framework",
    "framework_version",
    "mode",
    "isl",
    "osl",
    "batch",
    "concurrency",
    "request_rate",
    "context_len",
    "metric",
    "value",
    "unit",
    "notes",
)
SERVING_MODES = ("rate", "server", "concurrency", "interactive")
#: time units accepted for step metrics, in seconds
TIME_UNITS_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}


# =========================================================================== measurements
def _hash_files(paths: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(Path(x) for x in paths):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def read_vllm_bench_json(
    path: str | os.PathLike[str],
    *,
    gpu: str,
    model: str | None = None,
    precision: str = "bf16",
    tp: int = 1,
    framework: str = "vllm",
):
    """Rows in the benchmark schema from one ``vllm bench serve --save-result`` JSON.

    Keys read: ``model_id``, ``num_prompts``, ``request_rate``, ``max_concurrency``,
    ``completed``, ``total_input_tokens``, ``total_output_tokens``,
    ``request_throughput``, ``output_throughput``, ``total_token_throughput``,
    ``mean/median/p99_ttft_ms``, ``mean/median_tpot_ms``, ``mean/median_itl_ms``,
    ``mean/median_e2el_ms``, ``date``. The JSON does not record the GPU, the TP size
    or the precision, so they are arguments. Prompt and answer lengths become their
    means (``total_*_tokens / completed``), i.e. the replay uses fixed lengths.
    """
    p = Path(path)
    text = read_text(p, "vllm bench JSON", "JSON file")
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise PlannerError(f"{p}: cannot read vllm bench JSON ({e})") from None
    try:
        return _vllm_rows(p, d, gpu, model, precision, tp, framework)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError) as e:
        if isinstance(e, PlannerError):
            raise
        raise PlannerError(f"{p}: a number in the vllm bench JSON is not usable ({e})") from None


def _vllm_rows(p: Path, d: Any, gpu, model, precision, tp, framework):
    import pandas as pd

    if not isinstance(d, dict):
        raise PlannerError(f"{p}: expected a JSON object from `vllm bench serve`")
    need = ("completed", "total_input_tokens", "total_output_tokens", "output_throughput")
    miss = [k for k in need if k not in d]
    if miss:
        raise PlannerError(f"{p}: not a `vllm bench serve` result: missing keys {', '.join(miss)}")
    n = float(d["completed"])
    if not (math.isfinite(n) and n > 0):
        raise PlannerError(f"{p}: completed must be > 0")
    rate = d.get("request_rate", "inf")
    rate_f = float("inf") if str(rate).lower() in ("inf", "none") else float(rate)
    conc = d.get("max_concurrency")
    mode = "rate" if math.isfinite(rate_f) else ("concurrency" if conc else "offline")
    isl = round(float(d["total_input_tokens"]) / n)
    osl = round(float(d["total_output_tokens"]) / n)
    base = {
        "source": f"vllm bench serve result {p.name}",
        "source_detail": str(p),
        "as_of": str(d.get("date", ""))[:8],
        "hardware": gpu,
        "n_gpus": tp,
        "tp": tp,
        "pp": 1,
        "model": model or d.get("model_id", ""),
        "precision": precision,
        "kv_precision": "",
        "framework": framework,
        "framework_version": str(d.get("backend", "")),
        "mode": mode,
        "isl": isl,
        "osl": osl,
        "batch": np.nan,
        "concurrency": conc if conc else np.nan,
        "request_rate": rate_f,
        "context_len": isl + osl,
        "notes": f"{int(n)} requests; lengths are means of the run",
    }
    metric_keys = {
        "output_tok_s_total": ("output_throughput", "tok/s"),
        "total_tok_s": ("total_token_throughput", "tok/s"),
        "req_s": ("request_throughput", "req/s"),
        "ttft_ms_mean": ("mean_ttft_ms", "ms"),
        "ttft_ms_median": ("median_ttft_ms", "ms"),
        "ttft_ms_p99": ("p99_ttft_ms", "ms"),
        "tpot_ms_mean": ("mean_tpot_ms", "ms"),
        "tpot_ms_median": ("median_tpot_ms", "ms"),
        "itl_ms_mean": ("mean_itl_ms", "ms"),
        "itl_ms_median": ("median_itl_ms", "ms"),
        "e2e_ms_mean": ("mean_e2el_ms", "ms"),
        "e2e_ms_median": ("median_e2el_ms", "ms"),
    }
    rows = []
    for i, (metric, (key, unit)) in enumerate(metric_keys.items()):
        if d.get(key) is None:
            continue
        rows.append(
            {
                **base,
                "id": f"{p.stem}-{i:02d}",
                "metric": metric,
                "value": float(d[key]),
                "unit": unit,
            }
        )
    return pd.DataFrame(rows, columns=list(SCHEMA_COLUMNS))


def load_measurements(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    catalog: Catalog | None = None,
    **vllm_kw: Any,
):
    """Load and validate measurement files (benchmark-schema CSV or vLLM bench JSON).

    Raises
    ------
    PlannerError
        On a missing file or column, an unknown hardware/framework id, a model that is
        neither a catalog id nor a readable config.json, or a non-positive value. The
        message names the rows (by ``id``) so nothing is fitted from a partly valid file.
    """
    import pandas as pd

    cat = catalog or load_catalog()
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    frames = []
    for path in paths:
        p = Path(path)
        if not p.exists():
            raise PlannerError(f"measurement file not found: {p}")
        if p.suffix.lower() == ".json":
            if "gpu" not in vllm_kw:
                raise PlannerError(
                    f"{p}: a vllm bench JSON needs --gpu (the JSON does not record it)"
                )
            df = read_vllm_bench_json(p, **vllm_kw)
        else:
            try:
                df = pd.read_csv(p, dtype={"id": str, "precision": str, "kv_precision": str})
            except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as e:
                raise PlannerError(f"{p}: not a readable CSV ({str(e).splitlines()[0]})") from None
        missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
        if missing:
            raise PlannerError(
                f"{p}: missing columns {', '.join(missing)} (schema: {', '.join(SCHEMA_COLUMNS)})"
            )
        for c in SCHEMA_COLUMNS:
            if c not in df.columns:
                df[c] = np.nan
        if df["id"].isna().any():
            df["id"] = [f"{p.stem}-{i:04d}" if pd.isna(v) else v for i, v in enumerate(df["id"])]
        if df["source"].isna().any():
            df["source"] = df["source"].fillna(p.name)
        df["_file"] = str(p)
        df["_dir"] = str(p.parent)
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    problems: list[str] = []
    vals = pd.to_numeric(df["value"], errors="coerce")
    bad = df.loc[~((vals > 0) & np.isfinite(vals)), "id"].tolist()
    if bad:
        problems.append(f"non-positive, infinite or missing value in rows {_few(bad)}")
    dup = df.loc[df["id"].duplicated(keep=False), "id"].unique().tolist()
    if dup:
        problems.append(f"duplicate row ids {_few(dup)} (ids must be unique across files)")
    for col in ("n_gpus", "tp", "pp", "isl", "osl", "batch", "concurrency", "context_len"):
        raw = df[col]
        v = pd.to_numeric(raw, errors="coerce")
        badc = df.loc[v.notna() & (v <= 0), "id"].tolist()
        if badc:
            problems.append(f"non-positive {col} in rows {_few(badc)}")
        text = raw.notna() & raw.astype(str).str.strip().ne("") & v.isna()
        if text.any():
            problems.append(f"{col} is not a number in rows {_few(df.loc[text, 'id'].tolist())}")
        frac = v.notna() & np.isfinite(v) & (v != np.floor(v))
        if frac.any():
            problems.append(
                f"{col} must be a whole number in rows {_few(df.loc[frac, 'id'].tolist())}"
            )
    tp_ = pd.to_numeric(df["tp"], errors="coerce")
    pp_ = pd.to_numeric(df["pp"], errors="coerce").fillna(1)
    ng_ = pd.to_numeric(df["n_gpus"], errors="coerce")
    uneven = ng_.notna() & tp_.notna() & (tp_ > 0) & (pp_ > 0) & ((ng_ % (tp_ * pp_)) != 0)
    if uneven.any():
        problems.append(
            f"n_gpus is not a multiple of tp x pp in rows {_few(df.loc[uneven, 'id'].tolist())}"
        )
    for col, finder in (("precision", cat.precision), ("kv_precision", cat.kv_precision)):
        unknown_p: dict[str, list[str]] = {}
        for rid, v in zip(df["id"], df[col], strict=True):
            if pd.isna(v) or not str(v).strip():
                continue  # empty = not stated by the source: a reason at prediction time
            try:
                finder(str(v))
            except UnknownIdError:
                unknown_p.setdefault(str(v), []).append(rid)
        for v, rids in unknown_p.items():
            problems.append(f"unknown {col} '{v}' in rows {_few(rids)}")
    # units: step metrics in a time unit (converted to seconds), *_ms_* metrics in ms
    units = df["unit"].astype(str).str.strip()
    metric = df["metric"].astype(str)
    is_step = metric.isin(["prefill_s", "decode_step_s"])
    scale = units.map(TIME_UNITS_S)
    bad_step = is_step & scale.isna()
    if bad_step.any():
        problems.append(
            f"step metrics need a time unit ({', '.join(TIME_UNITS_S)}) in rows "
            f"{_few(df.loc[bad_step, 'id'].tolist())}"
        )
    bad_ms = metric.str.contains("_ms_") & units.ne("ms")
    if bad_ms.any():
        problems.append(
            f"*_ms_* metrics need unit ms in rows {_few(df.loc[bad_ms, 'id'].tolist())}"
        )
    for col, finder in (("hardware", cat.gpu), ("framework", cat.framework)):
        unknown: dict[str, list[str]] = {}
        for rid, v in zip(df["id"], df[col], strict=True):
            if pd.isna(v) or not str(v).strip():
                unknown.setdefault("(empty)", []).append(rid)
                continue
            try:
                finder(str(v))
            except UnknownIdError as e:
                unknown.setdefault(
                    f"{v}" + (f" (did you mean {e.suggestions[0]}?)" if e.suggestions else ""), []
                ).append(rid)
        for v, rids in unknown.items():
            problems.append(f"unknown {col} '{v}' in rows {_few(rids)}")
    unknown_models: dict[str, list[str]] = {}
    for rid, v, d in zip(df["id"], df["model"], df["_dir"], strict=True):
        try:
            cat.model_ref(str(v), d)
        except PlannerError:
            unknown_models.setdefault(str(v), []).append(rid)
    for v, rids in unknown_models.items():
        problems.append(
            f"unknown model '{v}' (not a catalog id nor a config.json) in rows {_few(rids)}"
        )
    if problems:
        raise PlannerError("invalid measurements: " + "; ".join(problems))
    df["value"] = vals
    step = df["metric"].isin(["prefill_s", "decode_step_s"])
    if step.any():  # step values in seconds from here on
        df.loc[step, "value"] = df.loc[step, "value"] * df.loc[step, "unit"].astype(
            str
        ).str.strip().map(TIME_UNITS_S)
        df.loc[step, "unit"] = "s"
    return df


def _few(ids: list[Any], n: int = 5) -> str:
    ids = [str(i) for i in ids]
    return ", ".join(ids[:n]) + (f" and {len(ids) - n} more" if len(ids) > n else "")


# =========================================================================== predictors
@dataclass(frozen=True)
class PreparedRow:
    """A measurement row ready for fitting: a predictor of ``value`` given params."""

    id: str
    source: str
    framework: str
    gpu: str
    arch: str
    precision: str
    metric: str
    mode: str
    value: float
    predict: Callable[[EfficiencyParams], float] | None
    reason: str = ""
    fit_kind: str = ""  # step, static, single, offline, serving
    model: str = ""

    @property
    def ok(self) -> bool:
        return self.predict is not None


def _num(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def prefill_time(sm: StepModel, batch: float, isl: float) -> float:
    """One prefill of ``batch`` prompts of ``isl`` tokens [s] (scalar fast path)."""
    pairs = isl * (isl + 1) / 2
    if sm.window:
        from .perf import _window_sums

        kv_sw, pairs_sw = (float(x) for x in _window_sums(isl, isl, sm.window))
    else:
        kv_sw = pairs_sw = 0.0
    return sm.step_time(
        batch * isl, batch, batch, batch * isl, batch * pairs, batch * kv_sw, batch * pairs_sw
    )


def decode_time(sm: StepModel, batch: float, context: float) -> float:
    """One decode step of ``batch`` sequences holding ``context`` tokens [s]."""
    c = context + 1
    sw = min(c, sm.window) if sm.window else 0.0
    return sm.step_time(batch, batch, batch, batch * c, batch * c, batch * sw, batch * sw)


def mean_decode_time(
    sm: StepModel, batch: float, isl: float, osl: float, samples: int = 4
) -> float:
    """Mean decode-step time while contexts grow from isl to isl+osl-1 [s]."""
    steps = max(osl - 1, 1)
    if samples <= 1 or steps <= 1:
        return decode_time(sm, batch, isl + steps / 2)
    # decode time is piecewise linear in context; Gauss-like midpoint samples
    tot = 0.0
    for i in range(samples):
        tot += decode_time(sm, batch, isl + (i + 0.5) * steps / samples)
    return tot / samples


def offline_throughput(
    sm: StepModel, isl: float, osl: float, max_batch: float, token_budget: float
) -> tuple[float, float]:
    """Steady-state offline throughput of one replica [output tok/s] and its batch.

    Little's-law fast path: ``B = max_batch`` sequences run at once; per cycle of
    ``n_iter = max(osl, B (isl + osl) / token_budget)`` iterations B requests finish
    and B prompts are prefilled in chunks spread evenly over the iterations. One
    iteration holds ``B (isl + osl) / n_iter`` new tokens, B sequences, contexts of
    ``isl + osl / 2`` on average. Throughput = ``B osl / (n_iter t_iter)``.
    """
    B = max(1.0, float(max_batch))
    n_iter = max(osl, B * (isl + osl) / token_budget)
    new = B * (isl + osl) / n_iter
    ctx = isl + osl / 2
    pairs = B * (isl * isl / 2 + osl * ctx) / n_iter
    if sm.window:
        sw = min(ctx, sm.window)
        from .perf import _window_sums

        _, prefill_pairs_sw = _window_sums(isl, isl, sm.window)
        pairs_sw = B * (float(prefill_pairs_sw) + osl * sw) / n_iter
    else:
        sw = pairs_sw = 0.0
    t = sm.step_time(new, B, B, B * ctx, pairs, B * sw, pairs_sw) + sm.params.sched_overhead_s
    return B * osl / (n_iter * t), B


def _static_parts(sm, batch, isl, osl):
    pf = prefill_time(sm, batch, isl)
    dec = mean_decode_time(sm, batch, isl, osl) if osl > 1 else 0.0
    return pf, dec, pf + dec * max(osl - 1, 0)


def row_predictor(row: dict, cat: Catalog) -> tuple[Callable | None, str, str]:
    """(predict(params) -> value, reason, fit_kind) for one benchmark-schema row."""
    metric = str(row.get("metric", ""))
    mode = str(row.get("mode", ""))
    prec = row.get("precision")
    if prec is None or (isinstance(prec, float) and math.isnan(prec)) or not str(prec).strip():
        return None, "precision not stated by the source", ""
    prec = str(prec)
    try:
        m = cat.model_ref(str(row["model"]), str(row.get("_dir", ".")))
        g = cat.gpu(str(row["hardware"]))
        p = cat.precision(prec)
        fw = cat.framework(str(row["framework"]))
    except PlannerError as e:
        return None, str(e), ""
    tp = _num(row.get("tp"))
    pp = _num(row.get("pp")) or 1.0
    n_gpus = _num(row.get("n_gpus"))
    if tp is None:
        if n_gpus == 1:
            tp = 1.0
        else:
            return None, "tp not stated by the source", ""
    kv = row.get("kv_precision")
    kv = (
        str(kv)
        if kv is not None and not (isinstance(kv, float) and math.isnan(kv)) and str(kv).strip()
        else None
    )
    try:
        kv = cat.kv_precision(kv).id if kv is not None else None
        sm0 = step_model(m, g, p, kv, tp, pp, PRIOR, cat)
    except PlannerError as e:
        return None, str(e), ""
    isl, osl = _num(row.get("isl")), _num(row.get("osl"))
    batch = _num(row.get("batch"))
    ctx = _num(row.get("context_len"))
    for name, v in (("isl", isl), ("osl", osl), ("batch", batch), ("context_len", ctx)):
        if v is not None and v <= 0:
            return None, f"{name} must be > 0, got {v:g}", ""
    if n_gpus is not None and n_gpus % (tp * pp):
        return None, f"n_gpus={n_gpus:g} is not a multiple of tp x pp = {tp * pp:g}", ""
    replicas = (n_gpus / (tp * pp)) if n_gpus else 1.0
    scale = 1000.0 if metric.startswith(("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")) else 1.0

    def with_p(params: EfficiencyParams) -> StepModel:
        return replace(sm0, params=params)

    if metric == "prefill_s":
        if batch is None or isl is None:
            return None, "prefill_s needs batch and isl", ""
        return (lambda q: prefill_time(with_p(q), batch, isl)), "", "step"
    if metric == "decode_step_s":
        if batch is None or ctx is None:
            return None, "decode_step_s needs batch and context_len", ""
        return (lambda q: decode_time(with_p(q), batch, ctx)), "", "step"
    if metric == "other":
        return (
            None,
            "metric 'other' is ambiguous in the source (per GPU or per group not stated)",
            "",
        )
    if mode in ("static_batch", "single_stream"):
        b = batch if batch is not None else (1.0 if mode == "single_stream" else None)
        if b is None:
            return None, "static batch without a batch size", ""
        if metric == "decode_tok_s_single_stream":
            if osl is None:
                # llama-bench tg / mlc 256-token decode from a near-empty context
                osl_eff = 128.0
                isl_eff = isl or 0.0
            else:
                osl_eff, isl_eff = osl, isl or 0.0
            return (
                (lambda q: 1.0 / mean_decode_time(with_p(q), 1.0, isl_eff, osl_eff)),
                "",
                "single",
            )
        if metric == "prefill_tok_s":
            if isl is None:
                return None, "prefill_tok_s needs isl", ""
            return (lambda q: b * isl / prefill_time(with_p(q), b, isl)), "", "single"
        if isl is None or osl is None:
            return None, "static batch without isl/osl", ""
        kind = "single" if mode == "single_stream" else "static"
        if metric == "ttft_ms_mean":
            return (lambda q: scale * prefill_time(with_p(q), b, isl)), "", kind
        if metric in ("tpot_ms_median", "tpot_ms_mean", "itl_ms_mean", "itl_ms_median"):
            if osl <= 1:
                return None, "TPOT undefined for one output token", ""
            return (lambda q: scale * mean_decode_time(with_p(q), b, isl, osl)), "", kind
        if metric in ("output_tok_s_total", "output_tok_s_per_gpu", "total_tok_s", "req_s"):
            per = {
                "output_tok_s_total": b * osl * replicas,
                "output_tok_s_per_gpu": b * osl / (tp * pp),
                "total_tok_s": b * (isl + osl) * replicas,
                "req_s": b * replicas,
            }[metric]
            return (lambda q: per / _static_parts(with_p(q), b, isl, osl)[2]), "", kind
        return None, f"metric {metric} not supported in mode {mode}", ""
    if mode == "offline" and metric in (
        "output_tok_s_total",
        "output_tok_s_per_gpu",
        "total_tok_s",
        "req_s",
    ):
        if isl is None or osl is None:
            return (
                None,
                "offline row without isl/osl: predicted by the simulator with the dataset's length distribution",
                "serving",
            )
        from .memory import plan_memory

        try:
            mp = plan_memory(
                m,
                g,
                p,
                sm0.precision.kv_default if kv is None else kv,
                int(tp),
                int(pp),
                int(isl + osl),
                # the TensorRT-LLM v0.17 table states kv_cache_free_gpu_mem_fraction 0.95
                # (the simulator reads the same note)
                0.95 if "fraction 0.95" in str(row.get("notes") or "") else None,
                fw,
                catalog=cat,
                suggest=False,
            )
        except PlannerError as e:
            return None, str(e), ""
        if not mp.fits:
            return None, mp.reason, ""
        max_seqs = fw.default_max_num_seqs
        B = float(min(mp.max_concurrent_sequences, max_seqs))
        budget = float(fw.default_max_num_batched_tokens or 8192)
        per_gpu = metric == "output_tok_s_per_gpu"
        mult = (1.0 / (tp * pp)) if per_gpu else replicas
        if metric == "total_tok_s":
            mult *= (isl + osl) / osl
        if metric == "req_s":
            mult /= osl
        return (
            (lambda q: mult * offline_throughput(with_p(q), isl, osl, B, budget)[0]),
            "",
            "offline",
        )
    if mode in SERVING_MODES or mode == "offline":
        return None, "serving row: predicted by the simulator, not used in the fit", "serving"
    return None, f"metric {metric} in mode {mode} not supported", ""


def _canonical_precision(cat: Catalog, value: Any) -> str:
    """Catalog id of a precision label (aliases such as BF16 map to bf16); '' if empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip():
        return ""
    try:
        return cat.precision(str(value)).id
    except PlannerError:
        return str(value)


def prepare_rows(df, catalog: Catalog | None = None) -> list[PreparedRow]:
    """One :class:`PreparedRow` per measurement (unpredictable rows carry a reason)."""
    cat = catalog or load_catalog()
    out = []
    for row in df.to_dict("records"):
        fn, reason, kind = row_predictor(row, cat)
        try:
            g = cat.gpu(str(row["hardware"]))
            gid, arch = g.id, g.arch
        except PlannerError:
            gid, arch = str(row["hardware"]), "?"
        try:
            fwid = cat.framework(str(row["framework"])).id
        except PlannerError:
            fwid = str(row["framework"])
        out.append(
            PreparedRow(
                id=str(row.get("id")),
                source=str(row.get("source")),
                framework=fwid,
                gpu=gid,
                arch=arch,
                precision=_canonical_precision(cat, row.get("precision")),
                metric=str(row.get("metric")),
                mode=str(row.get("mode")),
                value=float(row["value"]),
                predict=fn,
                reason=reason,
                fit_kind=kind,
                model=Path(str(row.get("model"))).parent.name
                if str(row.get("model", "")).endswith(".json")
                else str(row.get("model")),
            )
        )
    return out


# =========================================================================== profile
class ProfileNode(Frozen):
    """Fitted parameters of one node of the hierarchy."""

    framework: str | None = None
    arch: str | None = None
    gpu: str | None = None
    precision: str | None = None
    level: int = Field(ge=0, le=4)
    n_rows: int = Field(ge=0)
    sources: tuple[str, ...] = ()
    in_sample_mdape: float | None = None
    params: EfficiencyParams

    @property
    def label(self) -> str:
        parts = [x for x in (self.framework, self.gpu or self.arch, self.precision) if x]
        if self.gpu and self.arch is None:
            pass
        return "/".join(parts) if parts else "global (all frameworks)"


class Profile(Frozen):
    """A versioned calibration profile: fitted nodes plus the hash of the data."""

    planner_calibration_profile: int = 1
    created: _dt.date
    data_hash: str
    data_files: tuple[str, ...]
    n_rows_fitted: int
    method: str
    nodes: tuple[ProfileNode, ...]

    def find(
        self, framework: str | None, arch: str | None, gpu: str | None, precision: str | None
    ) -> ProfileNode | None:
        keys = _node_keys(framework, arch, gpu, precision)
        by_key = {_key_of(n): n for n in self.nodes}
        for k in reversed(keys):
            if k in by_key:
                return by_key[k]
        return None


def _node_keys(fw, arch, gpu, prec) -> list[tuple]:
    return [
        (None, None, None, None),
        (fw, None, None, None),
        (fw, arch, None, None),
        (fw, arch, gpu, None),
        (fw, arch, gpu, prec),
    ]


def _key_of(n: ProfileNode) -> tuple:
    return (n.framework, n.arch, n.gpu, n.precision)


def save_profile(profile: Profile, path: str | os.PathLike[str]) -> None:
    import yaml

    d = profile.model_dump(mode="json")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(
            "# planner calibration profile (generated by `planner calibrate`; do not edit by hand)\n"
        )
        yaml.safe_dump(d, fh, sort_keys=False, width=100)


@lru_cache(maxsize=8)
def _load_profile_cached(path: str, mtime: float) -> Profile:
    import yaml

    text = read_text(path, "calibration profile", "YAML file")
    try:
        return Profile.model_validate(yaml.safe_load(text))
    except yaml.YAMLError as e:
        raise PlannerError(f"cannot read calibration profile {path}: {e}") from None
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise PlannerError(f"{path}: field '{loc}': {err['msg']}") from None


def load_profile(path: str | os.PathLike[str] | None = None) -> Profile | None:
    """The calibration profile at ``path`` (default: the bundled one; None if absent)."""
    p = Path(path) if path else DEFAULT_PROFILE
    if not p.exists():
        if path:
            raise PlannerError(f"calibration profile not found: {p}")
        return None
    return _load_profile_cached(str(p), p.stat().st_mtime)


def resolve_params(
    gpu: str,
    framework: str | None,
    precision: str | None,
    profile_path: str | os.PathLike[str] | None = None,
    catalog: Catalog | None = None,
    profile: Profile | None = None,
) -> tuple[EfficiencyParams, str]:
    """Parameters for (gpu, framework, precision) and their provenance label.

    Returns
    -------
    (EfficiencyParams, str)
        provenance is ``fit (<node>, n rows)`` when the profile has a node for exactly
        this framework, GPU and precision; ``transferred from <node>`` when a coarser
        node (same GPU other precision, same architecture, same framework, or all
        frameworks) is used; ``prior`` without a profile.
    """
    cat = catalog or load_catalog()
    prof = profile if profile is not None else load_profile(profile_path)
    if prof is None:
        return PRIOR, "prior"
    g = cat.gpu(gpu)
    fw = cat.framework(framework).id if framework else None
    prec = cat.precision(precision).id if precision else None
    node = prof.find(fw, g.arch, g.id, prec)
    if node is None:
        return PRIOR, "prior"
    if node.level == 4:
        return (
            node.params,
            f"fit ({node.framework}/{node.gpu}/{node.precision}, {node.n_rows} rows)",
        )
    return node.params, f"transferred from {_describe(node)}"


def _describe(n: ProfileNode) -> str:
    if n.level == 0:
        return f"global fit over all frameworks ({n.n_rows} rows)"
    if n.level == 1:
        return f"{n.framework} on all GPUs ({n.n_rows} rows)"
    if n.level == 2:
        return f"{n.framework} on {n.arch} GPUs ({n.n_rows} rows)"
    return f"{n.framework} on {n.gpu}, all precisions ({n.n_rows} rows)"


# =========================================================================== fitting
def _to_x(p: EfficiencyParams) -> np.ndarray:
    return np.array([math.log(max(getattr(p, f), FIT_BOUNDS[f][0])) for f in FIT_FIELDS])


def _from_x(x: np.ndarray, base: EfficiencyParams) -> EfficiencyParams:
    upd = {}
    for f, v in zip(FIT_FIELDS, x, strict=True):
        lo, hi, _ = FIT_BOUNDS[f]
        upd[f] = float(min(max(math.exp(v), lo), hi))
    return base.model_copy(update=upd)


def _fit_node(
    rows: list[PreparedRow], parent: EfficiencyParams, prior_scale: float, max_nfev: int
) -> tuple[EfficiencyParams, float]:
    from scipy.optimize import least_squares

    x0 = _to_x(parent)
    lo = np.array([math.log(FIT_BOUNDS[f][0]) for f in FIT_FIELDS])
    hi = np.array([math.log(FIT_BOUNDS[f][1]) for f in FIT_FIELDS])
    x0 = np.clip(x0, lo + 1e-9, hi - 1e-9)
    sig = np.array([FIT_BOUNDS[f][2] for f in FIT_FIELDS]) * prior_scale
    meas = np.log(np.array([r.value for r in rows]))
    preds = [r.predict for r in rows]

    def resid(x):
        q = _from_x(x, parent)
        out = np.empty(len(preds))
        for i, fn in enumerate(preds):
            try:
                v = fn(q)
                out[i] = math.log(v) if v > 0 and math.isfinite(v) else 10.0
            except (ValueError, ZeroDivisionError, OverflowError):
                out[i] = 10.0
        return np.concatenate([(out - meas), (x - x0) / sig])

    res = least_squares(
        resid,
        x0,
        bounds=(lo, hi),
        method="trf",
        loss="soft_l1",
        f_scale=0.2,
        max_nfev=max_nfev,
        x_scale=1.0,
        diff_step=1e-3,
    )
    fitted = _from_x(res.x, parent)
    err = resid(res.x)[: len(rows)]
    mdape = float(np.median(np.abs(np.expm1(err)))) if len(rows) else float("nan")
    return fitted, mdape


def fit_profile(
    rows: Sequence[PreparedRow],
    *,
    data_files: Sequence[str] = (),
    data_hash: str = "",
    min_rows: int = 1,
    prior_scale: float = 1.0,
    max_nfev: int = 60,
    include_kinds: Iterable[str] = ("step", "static", "single", "offline"),
    base: EfficiencyParams | None = None,
) -> Profile:
    """Fit the hierarchy of nodes top-down (see module docstring).

    Parameters
    ----------
    rows : prepared measurement rows; rows without a predictor are ignored
    min_rows : a node is fitted only if it has at least this many rows
    prior_scale : multiplies every prior width (smaller = stronger shrinkage)
    include_kinds : which row kinds the fit uses (serving rows are validated, not fitted)
    """
    kinds = set(include_kinds)
    use = [r for r in rows if r.ok and r.fit_kind in kinds]
    if not use:
        raise PlannerError(
            "no measurement row can be used for the fit (see `planner predict` reasons)"
        )
    base = base or PRIOR.with_(**_START)
    nodes: list[ProfileNode] = []
    fitted: dict[tuple, EfficiencyParams] = {}

    def add(level, key, subset, parent):
        if len(subset) < min_rows:
            return
        params, mdape = _fit_node(subset, parent, prior_scale, max_nfev)
        fitted[key] = params
        nodes.append(
            ProfileNode(
                framework=key[0],
                arch=key[1],
                gpu=key[2],
                precision=key[3],
                level=level,
                n_rows=len(subset),
                sources=tuple(sorted({r.source for r in subset})),
                in_sample_mdape=round(mdape, 4),
                params=_rounded(params),
            )
        )

    add(0, (None, None, None, None), use, base)
    groups: dict[tuple, list[PreparedRow]] = {}
    for r in use:
        for lvl, k in enumerate(_node_keys(r.framework, r.arch, r.gpu, r.precision)):
            if lvl:
                groups.setdefault(k, []).append(r)
    for lvl in (1, 2, 3, 4):
        for k in sorted((k for k in groups if _level(k) == lvl), key=str):
            parent_key = _node_keys(*k)[lvl - 1]
            # the closest fitted ancestor
            pk = parent_key
            anc = _node_keys(*k)[:lvl]
            for a in reversed(anc):
                if a in fitted:
                    pk = a
                    break
            add(lvl, k, groups[k], fitted.get(pk, base))
    return Profile(
        created=_dt.date.today(),
        data_hash=data_hash,
        data_files=tuple(data_files),
        n_rows_fitted=len(use),
        method=(
            "scipy.optimize.least_squares (trf, soft_l1 loss, f_scale 0.2) on log(predicted/measured), "
            "parameters in log space with bounds; each node regularised toward its parent by a "
            "Gaussian prior in log space (widths FIT_BOUNDS x prior_scale); hierarchy global -> "
            "framework -> framework x arch -> framework x gpu -> framework x gpu x precision"
        ),
        nodes=tuple(nodes),
    )


def _level(k: tuple) -> int:
    return sum(1 for x in k if x is not None)


def _rounded(p: EfficiencyParams) -> EfficiencyParams:
    return p.model_copy(update={f: float(f"{getattr(p, f):.5g}") for f in type(p).model_fields})


def predict_rows(
    rows: Sequence[PreparedRow], profile: Profile | None, catalog: Catalog | None = None
):
    """Predictions of the rows a profile can predict: list of (row, value, provenance)."""
    cat = catalog or load_catalog()
    out = []
    for r in rows:
        if not r.ok:
            out.append((r, None, r.reason))
            continue
        params, prov = (
            resolve_params(r.gpu, r.framework, r.precision, catalog=cat, profile=profile)
            if profile
            else (PRIOR, "prior")
        )
        try:
            out.append((r, float(r.predict(params)), prov))
        except (ValueError, ZeroDivisionError, OverflowError) as e:
            out.append((r, None, f"prediction failed: {e}"))
    return out


# =========================================================================== validation
def oos_record(r: PreparedRow, predicted: float, provenance: str, fold: Any) -> dict[str, Any]:
    """One out-of-sample prediction as a flat record (for the accuracy tables)."""
    return {
        "id": r.id,
        "source": r.source,
        "framework": r.framework,
        "gpu": r.gpu,
        "precision": r.precision,
        "metric": r.metric,
        "model": r.model,
        "mode": r.mode,
        "kind": r.fit_kind,
        "measured": r.value,
        "predicted": float(predicted),
        "provenance": provenance,
        "fold": fold,
    }


def cross_validate(
    rows: Sequence[PreparedRow],
    scheme: str = "loso",
    k: int = 5,
    seed: int = 0,
    catalog: Catalog | None = None,
    **fit_kw: Any,
):
    """Out-of-sample predictions: leave-one-source-out (``loso``) or ``kfold``.

    Returns a DataFrame with one row per predicted measurement: id, source, framework,
    gpu, precision, metric, mode, measured, predicted, provenance, fold, ape, log_err.
    """
    import pandas as pd

    cat = catalog or load_catalog()
    usable = [r for r in rows if r.ok]
    if scheme == "loso":
        folds = sorted({r.source for r in usable})
        assign = [r.source for r in usable]
    elif scheme == "kfold":
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(usable))
        assign = [0] * len(usable)
        for j, i in enumerate(perm):
            assign[i] = int(j % k)
        folds = list(range(k))
    else:
        raise PlannerError(f"unknown validation scheme '{scheme}' (use loso or kfold)")
    recs = []
    for f in folds:
        train = [r for r, a in zip(usable, assign, strict=True) if a != f]
        test = [r for r, a in zip(usable, assign, strict=True) if a == f]
        try:
            prof = fit_profile(train, **fit_kw)
        except PlannerError:
            prof = None
        for r, v, prov in predict_rows(test, prof, cat):
            if v is None:
                continue
            recs.append(oos_record(r, v, prov, f))
    df = pd.DataFrame(recs)
    if len(df):
        df["log_err"] = np.log(df["predicted"] / df["measured"])
        df["ape"] = np.abs(df["predicted"] / df["measured"] - 1)
    return df


def error_table(df, by: Sequence[str]):
    """Median and P90 absolute percentage error and signed bias per group [%]."""
    import pandas as pd

    if df is None or not len(df):
        return pd.DataFrame(columns=[*by, "n", "mdape_pct", "p90_ape_pct", "bias_pct"])
    g = df.groupby(list(by), dropna=False)
    out = g.agg(
        n=("ape", "size"),
        mdape_pct=("ape", lambda s: 100 * float(np.median(s))),
        p90_ape_pct=("ape", lambda s: 100 * float(np.quantile(s, 0.9))),
        bias_pct=("log_err", lambda s: 100 * float(np.expm1(np.median(s)))),
    ).reset_index()
    return out.round({"mdape_pct": 1, "p90_ape_pct": 1, "bias_pct": 1})


def data_files_default() -> list[Path]:
    """Measurement files the bundled profile is fitted on (``data/benchmarks/*.csv``)."""
    d = DATA_DIR / "benchmarks"
    return sorted(p for p in d.glob("*.csv") if not p.name.endswith("_micro.csv"))


def _rel(p: Path) -> str:
    try:
        return p.resolve().relative_to(DATA_DIR.parent.resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def calibrate(
    paths: Sequence[str | os.PathLike[str]] | None = None,
    catalog: Catalog | None = None,
    **kw: Any,
) -> tuple[Profile, list[PreparedRow]]:
    """Load measurements, prepare rows and fit a profile (``planner calibrate``)."""
    cat = catalog or load_catalog()
    files = [Path(p) for p in (paths or data_files_default())]
    vllm_kw = {
        k: v
        for k in ("gpu", "model", "precision", "tp", "framework")
        if (v := kw.pop(k, None)) is not None
    }
    df = load_measurements(files, cat, **vllm_kw)
    rows = prepare_rows(df, cat)
    prof = fit_profile(
        rows, data_files=[_rel(f) for f in files], data_hash=_hash_files(files), **kw
    )
    return prof, rows
