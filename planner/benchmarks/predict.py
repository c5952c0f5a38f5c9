"""Predict measurement rows of the benchmark schema (``planner predict``).

A row (one published or measured number, see ``planner/benchmarks/README.md``) names
hardware, model, precision, framework, shape and a ``metric``. :func:`predict_rows`
returns every input column plus

* ``predicted`` — the model's value in the row's ``unit`` (empty when it cannot answer),
* ``predicted_low``, ``predicted_high`` — its out-of-sample error band, same unit
  (:func:`planner.catalog.profile.error_band`: p10-p90 of measured/predicted speed for the
  provenance tier; a time's band is the inverse of a speed's; empty when no band is known),
* ``provenance`` — which efficiency parameters were used (``prior`` or a calibration fit),
* ``reason`` — why a row could not be predicted (empty when it was): unknown ids, a
  ``layout_unsupported: <why>`` tag in ``notes``, a framework that does not run on the
  GPU's vendor, missing fields,
* ``settings`` — the KV precision and, for throughput and serving rows, the scheduler
  settings simulated: a tuned run's ``notes`` tags (``max_num_seqs=N``,
  ``max_num_batched_tokens=N``, ``kv_cache_dtype=fp8``), else the framework's defaults.

Metrics are answered through the dispatch table :data:`METRICS` (metric -> function of
a :class:`RowContext` returning SI units). Step-level metrics live here:

* ``prefill_s`` — one prefill forward over ``batch`` prompts of ``isl`` tokens,
  logits for the last token of each prompt only;
* ``decode_step_s`` — one decode step of ``batch`` sequences, each holding
  ``context_len`` tokens in its KV cache.

Any other metric is passed to ``planner.benchmarks.serving_rows.predict_serving_row(row, catalog,
params)`` when that module exists (it returns ``(value_or_None, reason)`` in the row's
unit); otherwise the reason is ``metric X not supported yet``. A row never raises:
unknown ids, empty fields and unsupported combinations become a ``reason``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from planner.benchmarks.io import iter_rows, read_rows
from planner.benchmarks.layouts import assumed_layout, needs_layout
from planner.benchmarks.schema import (
    SERVING_MODES,
    TIME_UNITS_S,
    cell,
    engine_settings,
    row_kv_precision,
    row_parallel_layout,
    unexpressible_reason,
    whole,
)
from planner.benchmarks.serving_rows import SERVING_METRICS, predict_serving_row
from planner.benchmarks.step_rows import row_predictor
from planner.catalog.catalog import (
    Catalog,
    compute_dtype_for,
    default_kv_precision,
    load_catalog,
)
from planner.catalog.efficiency import EfficiencyParams
from planner.catalog.layout import Layout, check_for_model, check_framework_layout
from planner.catalog.profile import (
    Profile,
    error_band,
    load_profile,
    model_family,
    resolve_efficiency,
)
from planner.catalog.records import Accelerator, ModelArch, Precision
from planner.engine.phases import decode_time, prefill_time
from planner.engine.step import StepModel, step_model
from planner.errors import PlannerError, UnknownIdError, printable
from planner.files import Progress

_UNSEEN = object()
OUTPUT_COLUMNS = (
    "predicted",
    "predicted_low",
    "predicted_high",
    "provenance",
    "reason",
    "settings",
)


# --------------------------------------------------------------------------- row context
def _reason(err: BaseException) -> str:
    """One-line reason text for an error (short form for unknown ids)."""
    if isinstance(err, UnknownIdError):
        hint = f" (closest: {', '.join(err.suggestions)})" if err.suggestions else ""
        return f"unknown {err.kind} '{printable(err.value)}'{hint}"
    return " ".join(str(err).split())


def _framework_id(cat: Catalog, name: Any) -> str | None:
    """The catalog id of a row's framework, None when the row names none the catalog knows."""
    try:
        return cat.framework(str(name)).id if name else None
    except PlannerError:
        return None


@dataclass
class RowContext:
    """Everything resolved for one row; metric functions read from it.

    Attributes are catalog objects (model, gpu, precision) and parsed numbers; the
    step model is built on first use and shared between rows with the same setup.
    """

    row: Mapping[str, str]
    catalog: Catalog
    model: ModelArch
    gpu: Accelerator
    precision: Precision
    kv_precision: str
    tp: int
    pp: int
    layout: Layout | None  # None: a plain tp x pp group
    params: EfficiencyParams
    provenance: str
    _cache: dict[tuple, StepModel] = field(default_factory=dict, repr=False)

    def int_field(self, name: str) -> int:
        """A positive whole-number column of the row (raises PlannerError when absent)."""
        return whole(self.row, name)

    def step_model(self) -> StepModel:
        """The (cached) :class:`~planner.engine.step.StepModel` of this row's setup."""

        key = (
            id(self.model),
            self.gpu.id,
            self.precision.id,
            self.kv_precision,
            self.tp,
            self.pp,
            self.layout,
            id(self.params),  # the Predictor keeps each parameter set alive: ids are stable
        )
        sm = self._cache.get(key)
        if sm is None:
            sm = step_model(
                self.model,
                self.gpu,
                self.precision,
                self.kv_precision,
                self.tp,
                self.pp,
                self.params,
                self.catalog,
                layout=self.layout,
            )
            self._cache[key] = sm
        return sm


# --------------------------------------------------------------------------- metrics
def predict_prefill_s(ctx: RowContext) -> float:
    """``prefill_s``: one prefill of ``batch`` prompts of ``isl`` tokens [s]."""
    batch, isl = ctx.int_field("batch"), ctx.int_field("isl")
    return float(prefill_time(ctx.step_model(), batch, isl))


def predict_decode_step_s(ctx: RowContext) -> float:
    """``decode_step_s``: one decode step, ``batch`` sequences of ``context_len`` tokens [s]."""
    batch, ctx_len = ctx.int_field("batch"), ctx.int_field("context_len")
    return float(decode_time(ctx.step_model(), batch, ctx_len))


#: metric -> (function of a RowContext returning SI units, SI unit of that value)
METRICS: dict[str, tuple[Callable[[RowContext], float], str]] = {
    "prefill_s": (predict_prefill_s, "s"),
    "decode_step_s": (predict_decode_step_s, "s"),
}


def register_metric(name: str, fn: Callable[[RowContext], float], si_unit: str = "s") -> None:
    """Add (or replace) a metric in the dispatch table."""
    METRICS[name] = (fn, si_unit)


def _convert(value_si: float, si_unit: str, row_unit: str) -> float:
    unit = (row_unit or "").strip()
    if si_unit == "s":
        if unit not in TIME_UNITS_S:
            raise PlannerError(f"unit '{row_unit}' is not a time unit ({', '.join(TIME_UNITS_S)})")
        return value_si / TIME_UNITS_S[unit]
    if unit and unit != si_unit:
        raise PlannerError(f"unit '{row_unit}' cannot be converted from {si_unit}")
    return value_si


#: default most distinct serving setups one predict run simulates (~8 s of 8B rows on 2 cores)
MAX_SIMULATIONS = 2_000
#: the cells a serving simulation depends on (a superset of its cache key)
_SETUP_COLUMNS = (
    "hardware", "model", "precision", "kv_precision", "framework", "framework_version", "as_of",
    "n_gpus", "tp", "pp", "mode", "isl", "osl", "batch", "concurrency", "request_rate", "notes",
)  # fmt: skip


def _unit_reason(metric: str, row: Mapping[str, Any]) -> str:
    """Why a row's ``unit`` contradicts its metric (a ``*_ms_*`` metric answers in ms: a
    row in ``s`` would get a prediction 1000x off), or ``""``."""
    want = SERVING_METRICS.get(metric)
    unit = cell(row, "unit")
    if want is not None and unit != want:
        return f"unit {unit or '(empty)'!r} does not match metric {metric} (in {want})"
    return ""


# --------------------------------------------------------------------------- resolution
class Predictor:
    """Predicts rows, caching catalog lookups, efficiency parameters and step models.

    Parameters
    ----------
    catalog : the catalogs (default: :func:`~planner.catalog.load_catalog`)
    csv_dir : folder of the input CSV; relative ``model`` paths are tried against the
        current directory, then this folder, then the repository root
    profile_path : calibration profile passed to :func:`resolve_efficiency`
    """

    def __init__(
        self,
        catalog: Catalog | None = None,
        csv_dir: str | os.PathLike[str] | None = None,
        profile_path: str | os.PathLike[str] | None = None,
    ):
        self.catalog = catalog or load_catalog()
        self.csv_dir = Path(csv_dir) if csv_dir else None
        self.profile_path = profile_path
        if profile_path:  # a broken profile fails the command, not every row
            load_profile(profile_path)
        self._models: dict[str, ModelArch] = {}
        self._params: dict[tuple[str, str, str], tuple[EfficiencyParams, str]] = {}
        self._steps: dict[tuple, StepModel] = {}
        self._contexts: dict[tuple, Any] = {}
        self._serving = predict_serving_row
        self._kv_tags: dict[str, Any] = {}
        self._bands: dict[str, Any] = {}
        #: most distinct serving setups simulated (:meth:`_over_budget`; None: no limit)
        self.max_simulations: int | None = None
        self._setups: set[tuple] = set()
        self._profile: Profile | None = None

    def band(
        self,
        provenance: str,
        value: float,
        unit: str,
        vendor: str | None = None,
        framework: str | None = None,
    ) -> tuple[Any, Any]:
        """(low, high) of a predicted value from :func:`error_band` of its provenance, GPU
        vendor and framework: a speed scales by the band's ratios, a time (``unit``
        s/ms/us) by their inverses."""
        key = (provenance, vendor, framework)
        b = self._bands.get(key)
        if b is None:
            if self._profile is None and self.profile_path:
                self._profile = load_profile(self.profile_path)
            try:
                b = error_band(provenance, self._profile, vendor, framework)
            except PlannerError:
                b = False
            self._bands[key] = b
        if not b or not b.known:
            return "", ""
        lo, hi = b.time_interval(value) if unit.strip() in TIME_UNITS_S else b.speed_interval(value)
        return lo, hi

    # ---- model: catalog id or a config.json path
    def model(self, key: str) -> ModelArch:
        """Resolve a ``model`` cell: a catalog id/alias or a path to a config.json."""
        key = key.strip()
        if key in self._models:
            return self._models[key]
        m = self.catalog.model_ref(key, self.csv_dir)
        self._models[key] = m
        return m

    def params(
        self, gpu: str, framework: str, precision: str, family: str | None = None
    ) -> tuple[EfficiencyParams, str]:
        """Cached :func:`resolve_efficiency` for one (gpu, framework, precision) and model
        family (``dense``/``moe``)."""
        k = (gpu, framework, precision, family)
        if k not in self._params:
            self._params[k] = resolve_efficiency(
                gpu, framework, precision, self.profile_path, self.catalog, family
            )
        return self._params[k]

    def context(self, row: Mapping[str, str]) -> RowContext:
        """Resolve a row's ids and parallelism; raises PlannerError with the reason.

        Rows with the same setup (hardware, model, precision, KV, framework, layout) share
        one resolution, so a file of a million rows resolves each setup once."""
        get = row.get  # raw cells as the key: a stray space only costs one more resolution
        notes = get("notes") or ""
        kv_tag = self._kv_tags.get(notes, _UNSEEN)
        if kv_tag is _UNSEEN:  # parsed once per distinct notes text
            kv_tag = engine_settings(cell(row, "notes")).kv_cache_dtype  # raises on a bad tag
            if len(self._kv_tags) < 100_000:
                self._kv_tags[notes] = kv_tag
        key = (
            get("hardware"), get("model"), get("precision"), get("kv_precision"), kv_tag,
            get("framework"), get("tp"), get("pp"), get("n_gpus"),
            get("ep"), get("attention_dp"), get("moe_tp"),
        )  # fmt: skip
        hit = self._contexts.get(key)
        if hit is None:
            try:
                hit = self._resolve(row)
            except PlannerError as e:
                hit = e
            self._contexts[key] = hit
        if isinstance(hit, PlannerError):
            raise hit
        return RowContext(row, self.catalog, *hit, self._steps)

    def _resolve(self, row: Mapping[str, str]) -> tuple:
        cat = self.catalog
        hw = cell(row, "hardware")
        if not hw:
            raise PlannerError("hardware is empty")
        gpu = cat.gpu(hw)
        model_key = cell(row, "model")
        if not model_key:
            raise PlannerError("model is empty")
        model = self.model(model_key)
        prec_id = cell(row, "precision")
        if not prec_id:
            raise PlannerError(
                "precision is empty (the source does not say), so it cannot be modelled"
            )
        prec = cat.precision(prec_id)
        compute_dtype_for(prec, gpu)  # raises when the GPU cannot run this precision
        framework = cell(row, "framework")
        try:
            fw = cat.framework(framework) if framework else None
        except PlannerError:
            fw = None  # the parameters lookup below names the unknown framework
        why = unexpressible_reason(row, gpu.vendor, fw.vendors) if fw is not None else ""
        if why:  # a framework that does not run on this vendor
            raise PlannerError(why)
        # the row's KV precision (column, or a kv_cache_dtype tag), else the framework's default
        kv_id = row_kv_precision(row) or default_kv_precision(prec, fw, model).id
        kv = cat.kv_precision(kv_id).id
        lay = row_parallel_layout(row)  # tp, pp, ep, attention_dp under the width rule
        tp, pp = lay.tp, lay.pp
        plain = None
        if not lay.is_plain:
            check_for_model(model, lay)
            if fw is not None:
                check_framework_layout(fw, lay)
            plain = lay
        params, prov = self.params(gpu.id, framework, prec.id, model_family(model))
        return (model, gpu, prec, kv, tp, pp, plain, params, prov)

    def _calibrated(self, row: Mapping[str, str], ctx: RowContext) -> tuple[float | None, str]:
        """Static-batch, single-stream and offline-throughput rows: the same predictors the
        calibration fits (:func:`planner.benchmarks.step_rows.row_predictor`), so `planner predict`
        and `planner validate` report the same numbers. (None, reason) for serving rows."""
        r = dict(row)
        r["_dir"] = str(self.csv_dir or ".")
        fn, reason, kind = row_predictor(r, self.catalog)
        if fn is None or kind in ("", "serving", "step"):
            return None, reason
        return float(fn(ctx.params)), ""

    def _settings_note(self, row: Mapping[str, str], ctx: RowContext) -> str:
        """The ``settings`` column: the KV precision and, on throughput and serving rows, the
        scheduler settings used (the row's notes tags, else the framework's defaults)."""
        kv = f"kv {ctx.kv_precision} ({'row' if row_kv_precision(row) else 'default'})"
        if cell(row, "mode") not in ("offline", *SERVING_MODES):
            return kv
        try:
            fw = self.catalog.framework(cell(row, "framework"))
        except PlannerError:
            return kv
        st = engine_settings(cell(row, "notes"))
        seqs0, btok0 = fw.scheduler_defaults(
            ctx.gpu, cell(row, "framework_version"), cell(row, "as_of")
        )
        return kv + "; " + st.describe(seqs0, btok0, fw.id)

    def _over_budget(self, row: Mapping[str, Any]) -> str:
        """Why a serving row is not simulated: its setup is new and the file has already
        used :attr:`max_simulations` distinct ones (each costs a simulation, 4-50 ms; a
        million rows that each differ would take hours), or ``""``."""
        if self.max_simulations is None:
            return ""
        key = tuple(row.get(c) for c in _SETUP_COLUMNS)
        if key in self._setups:
            return ""
        if len(self._setups) >= self.max_simulations:
            return (
                f"not simulated: the file has more than {self.max_simulations:,} distinct "
                "serving setups (--max-simulations N raises the limit)"
            )
        self._setups.add(key)
        return ""

    # ---- one row
    def predict_row(self, row: Mapping[str, str], *, copy: bool = True) -> dict[str, Any]:
        """Return the row with ``predicted``, ``provenance`` and ``reason`` filled in
        (``copy=False``: filled into ``row`` itself, for rows read only once)."""
        out: dict[str, Any] = dict(row) if copy else row  # type: ignore[assignment]
        out.update(
            predicted="", predicted_low="", predicted_high="", provenance="", reason="", settings=""
        )
        metric = cell(row, "metric")
        entry = METRICS.get(metric)
        note = ""
        why = unexpressible_reason(row, None, None) or _unit_reason(metric, row)
        if why:  # before assumed_layout guesses one
            out["reason"] = why
            return out
        try:
            if needs_layout(row) and cell(row, "precision"):
                # n_gpus without tp: the layout a submitter would tune (benchmarks.layouts)
                gpu = self.catalog.gpu(cell(row, "hardware")).id
                prec = self.catalog.precision(cell(row, "precision") or "bf16").id
                try:
                    family = model_family(self.model(cell(row, "model")))
                except PlannerError:
                    family = None  # context() below names the unreadable model
                params, _ = self.params(gpu, cell(row, "framework"), prec, family)
                row, note = assumed_layout(
                    {**row, "_dir": str(self.csv_dir or ".")}, self.catalog, params
                )
            ctx = self.context(row)
            out["provenance"] = ctx.provenance + (f"; {note}" if note else "")
            out["settings"] = self._settings_note(row, ctx)
            if entry is not None:
                fn, si_unit = entry
                value = _convert(fn(ctx), si_unit, str(row.get("unit") or ""))
                reason = ""
            else:
                value, reason = self._calibrated(row, ctx)
                if value is None:
                    over = self._over_budget(row)
                    if over:
                        out["reason"] = over
                        return out
                    value, reason = self._serving(dict(row), self.catalog, ctx.params)
        except PlannerError as e:
            out["reason"] = _reason(e)
            return out
        except (ArithmeticError, ValueError) as e:  # a row never raises
            out["reason"] = f"cannot be predicted from these numbers ({type(e).__name__}: {e})"
            return out
        if value is None:
            out["reason"] = reason or f"metric {metric} could not be predicted"
        elif not math.isfinite(float(value)) or float(value) < 0:
            out["reason"] = (
                f"the prediction is not a finite number >= 0 ({float(value):g}); "
                "an input is out of range"
            )
        else:
            out["predicted"] = float(value)
            out["predicted_low"], out["predicted_high"] = self.band(
                ctx.provenance,
                float(value),
                str(row.get("unit") or ""),
                ctx.gpu.vendor,
                _framework_id(ctx.catalog, row.get("framework")),
            )
            out["reason"] = reason or ""
        return out

    def predict_rows(
        self, rows: Iterable[Mapping[str, str]], *, consume: bool = False
    ) -> list[dict[str, Any]]:
        """:meth:`predict_row` for every row, in order (numpy warnings silenced: a row's
        problem is its ``reason``). ``consume=True`` with a list drops each input row once
        predicted (large files: the input and output rows are not held at once)."""
        if not (consume and isinstance(rows, list)):
            rows = list(rows)
        out = []
        with (
            np.errstate(all="ignore"),
            Progress(
                "predict", total=len(rows), force=None if len(rows) > 10_000 else False
            ) as bar,
        ):
            for i, r in enumerate(rows):
                if not i % 2000:
                    bar.update(i)
                out.append(self.predict_row(r))
                if consume:
                    rows[i] = None  # type: ignore[call-overload]
        return out


# --------------------------------------------------------------------------- files
def predict_stream(
    path: str | os.PathLike[str],
    catalog: Catalog | None = None,
    profile_path: str | os.PathLike[str] | None = None,
    max_simulations: int | None = MAX_SIMULATIONS,
) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """Predict a benchmark CSV row by row: (output columns, predicted rows as they come).

    ``max_simulations``: most distinct serving setups simulated; a serving row with a new
    setup past it gets a ``reason`` instead (None: no limit).

    Memory stays flat in the number of rows (the input text is read once); a progress line
    goes to a terminal's stderr for files over 10,000 rows."""
    cols, n, rows = iter_rows(path, keep_text=True)
    pred = Predictor(catalog, Path(path).resolve().parent, profile_path)
    pred.max_simulations = max_simulations
    columns = [c for c in cols if c not in OUTPUT_COLUMNS] + list(OUTPUT_COLUMNS)

    def gen() -> Iterator[dict[str, Any]]:
        with (
            np.errstate(all="ignore"),
            Progress("predict", total=n, force=None if n > 10_000 else False) as bar,
        ):
            for i, r in enumerate(rows):
                if not i % 2000:
                    bar.update(i)
                yield pred.predict_row(r, copy=False)
            bar.update(n)

    return columns, gen()


def predict_file(
    path: str | os.PathLike[str],
    catalog: Catalog | None = None,
    profile_path: str | os.PathLike[str] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Predict every row of a benchmark CSV.

    Returns
    -------
    (rows, columns)
        rows with every input column plus ``predicted``, ``provenance``, ``reason``;
        columns in output order (input columns first).
    """
    rows, cols = read_rows(path)
    pred = Predictor(catalog, Path(path).resolve().parent, profile_path)
    out = pred.predict_rows(rows, consume=True)
    columns = [c for c in cols if c not in OUTPUT_COLUMNS] + list(OUTPUT_COLUMNS)
    return out, columns


class Summary:
    """Counts of predicted rows and of each reason a row was not predicted, accumulated
    while rows stream past (:meth:`count` passes each row through)."""

    def __init__(self) -> None:
        self.rows = 0
        self.predicted = 0
        self.reasons: dict[str, int] = {}

    def count(self, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for r in rows:
            self.rows += 1
            if r.get("predicted") in ("", None):
                why = r.get("reason") or "?"
                self.reasons[why] = self.reasons.get(why, 0) + 1
            else:
                self.predicted += 1
            yield r

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "predicted": self.predicted,
            "not_predicted": sum(self.reasons.values()),
            "reasons": dict(sorted(self.reasons.items(), key=lambda kv: -kv[1])),
        }


def summarize(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Counts of predicted rows and of each reason a row was not predicted."""
    s = Summary()
    for _ in s.count(rows):
        pass
    return s.as_dict()
