"""Calibration: fit the engine's efficiencies and overheads to measured data.

Pipeline (pvlib style: every model has its ``fit_*``):

1. :func:`~planner.benchmarks.io.load_measurements` reads rows in the benchmark schema
   (``planner/benchmarks/README.md``) or the JSON that ``vllm bench serve`` writes.
2. :func:`prepare_rows` turns each row into a predictor ``params -> value`` or a reason.
3. :func:`fit_profile` fits :class:`~planner.catalog.efficiency.EfficiencyParams` top-down
   over ``global -> vendor -> vendor x framework -> x arch -> x gpu -> x precision`` (and
   ``global -> framework`` across vendors).
4. :func:`resolve_params` (in :mod:`planner.catalog.profile`, below every predictor) picks the
   deepest node for a deployment.
5. :func:`cross_validate` / :func:`run_validation` (:mod:`planner.calibration.accuracy`) refit
   without each source or fold and write ``docs/accuracy.md``.
6. :func:`with_error_bands` (:mod:`planner.calibration.bands`) stores each provenance tier's and
   vendor / framework group's leave-one-source-out band in the profile;
   :func:`planner.catalog.profile.error_band`
   reads it for every prediction.
"""

from planner.benchmarks.io import load_measurements, read_vllm_bench_json
from planner.calibration.accuracy import (
    cross_validate,
    error_table,
    oos_record,
    run_validation,
    with_error_bands,
    write_report,
)
from planner.calibration.bands import band_coverage, fit_error_bands
from planner.calibration.fit import (
    FIT_BOUNDS,
    FIT_FIELDS,
    PreparedRow,
    calibrate,
    data_files_default,
    fit_profile,
    fit_serving_terms,
    poor_fits,
    predict_rows,
    prepare_rows,
)
from planner.calibration.iterations import (
    IterationFit,
    fit_iterations,
    iteration_logs_default,
    read_iteration_log,
)
from planner.catalog.profile import (
    DEFAULT_PROFILE,
    Profile,
    ProfileNode,
    load_profile,
    resolve_params,
    save_profile,
)

__all__ = [
    "DEFAULT_PROFILE",
    "FIT_BOUNDS",
    "FIT_FIELDS",
    "IterationFit",
    "band_coverage",
    "fit_error_bands",
    "with_error_bands",
    "PreparedRow",
    "Profile",
    "ProfileNode",
    "calibrate",
    "cross_validate",
    "data_files_default",
    "error_table",
    "fit_iterations",
    "fit_profile",
    "fit_serving_terms",
    "load_measurements",
    "iteration_logs_default",
    "load_profile",
    "oos_record",
    "predict_rows",
    "prepare_rows",
    "read_iteration_log",
    "read_vllm_bench_json",
    "resolve_params",
    "run_validation",
    "poor_fits",
    "save_profile",
    "write_report",
]
