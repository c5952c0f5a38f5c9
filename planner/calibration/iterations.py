"""Serving overheads fitted on per-iteration logs of a serving engine (``fit_*`` of the
iteration model).

A step row measures one forward in isolation; a serving engine spends more per iteration:
it builds the step's inputs and books its tokens on the host while the GPU waits, dispatches
mixed prefill + decode iterations eagerly, and waits for the longest sequence of a batch of
mixed lengths. Those costs cannot be identified from step rows (equal lengths, replayed CUDA
graphs); an iteration log can (``bench/serve_ref.py`` writes one: the wall time of every
iteration of a serving run with its batch composition).

The iteration model (what :mod:`planner.serving` simulates), for an iteration of ``T`` tokens
of ``S`` sequences of which ``B`` decode::

    wall = gpu + straggler + sched_overhead_s + sched_seq_overhead_s * S
    gpu  = step time of the step model, its attention between prompt chunks and their cached
           context at prefix_attn_eff (eager iterations: the smooth maximum with the CPU
           dispatch time serving_eager_layer_s * layers)
    straggler = StepModel.straggler_time(B, longest context, summed contexts)
              (attn_seq_bw_bytes_s, attn_split_items)

:func:`fit_iterations` fits those six parameters by (plain) least squares on log(wall) with the
step model's other parameters fixed (fitted on step rows first); :func:`read_iteration_log`
reads and checks a log. The columns are ``ITERATION_COLUMNS`` (``bench/README.md`` describes
them).
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from planner.catalog.catalog import DATA_DIR, Catalog, load_catalog
from planner.catalog.efficiency import EfficiencyParams
from planner.engine import _scalar
from planner.engine.step import StepModel, step_model
from planner.errors import PlannerError

#: columns of an iteration log (provenance first; one row per iteration)
ITERATION_COLUMNS = (
    "source",
    "as_of",
    "hardware",
    "framework",
    "model",
    "precision",
    "kv_precision",
    "scenario",
    "rate",
    "sched_s",
    "prep_launch_s",
    "sync_wait_s",
    "book_s",
    "graph_batch",
    "n_decode",
    "n_prefill_seqs",
    "prefill_tokens",
    "decode_ctx_tokens",
    "prefill_cached_tokens",
    "logits",
    "decode_ctx_max",
    "prefill_pairs",
)
#: the parameters :func:`fit_iterations` fits, their bounds and start values
FIT = {
    "sched_overhead_s": (0.0, 0.05, 2e-4),
    "sched_seq_overhead_s": (0.0, 1e-3, 5e-6),
    "serving_eager_layer_s": (1e-6, 5e-3, 2e-4),
    "attn_seq_bw_bytes_s": (1e9, 1e12, 3e10),
    "attn_split_items": (1.0, 1e4, 528.0),
    "prefix_attn_eff": (0.02, 1.0, 0.3),
}
#: the fit needs this many iterations per fitted term (``FIT``): below, a log of a few
#: iterations would "fit" six numbers that it cannot determine
MIN_ITERATIONS_PER_TERM = 20
#: the columns whose sum is an iteration's wall time [s]
WALL_COLUMNS = ("sched_s", "prep_launch_s", "sync_wait_s", "book_s")
_SCALE = np.array([1e-3, 1e-6, 1e-3, 1e9, 1.0, 1.0])  # fit in ms, us, ms, GB/s, items, 1
MAX_LOG_BYTES = 256 * 1024**2  # uncompressed


#: iteration logs kept out of the fit: the reference engine on the H100 (no fit of its own;
#: its runs test the transfer from the H200, see planner.calibration.fit.HELD_OUT_FILES)
HELD_OUT_LOGS = (
    "reference_h100_iterations.csv.gz",
    "reference_h100_repeat_iterations.csv.gz",
)


def iteration_logs_default() -> list[Path]:
    """Iteration logs the bundled profile is fitted on (``data/benchmarks/serving_raw``),
    less the held-out ones (:data:`HELD_OUT_LOGS`)."""
    d = DATA_DIR / "benchmarks" / "serving_raw"
    return sorted(p for p in d.glob("*_iterations.csv*") if p.name not in HELD_OUT_LOGS)


def read_iteration_log(path: str | os.PathLike[str]) -> pd.DataFrame:
    """One iteration log (CSV, or gzip CSV when the name ends in ``.gz``), checked.

    Every column of ``ITERATION_COLUMNS`` must be present; counts and times must be finite
    and non-negative; each row must name its source and date. Errors name the file and the
    first bad row.
    """
    p = Path(path)
    if not p.is_file():
        raise PlannerError(f"iteration log not found or not a regular file: {p}")
    try:
        if p.suffix == ".gz":
            with gzip.open(p, "rb") as f:
                data = f.read(MAX_LOG_BYTES + 1)
        else:
            data = p.read_bytes()[: MAX_LOG_BYTES + 1]
    except (OSError, EOFError) as e:
        raise PlannerError(f"{p}: cannot read the iteration log ({e})") from None
    if len(data) > MAX_LOG_BYTES:
        raise PlannerError(f"{p}: larger than {MAX_LOG_BYTES // 1024**2} MiB uncompressed")
    try:
        df = pd.read_csv(io.BytesIO(data), dtype={"rate": str})
    except (ValueError, pd.errors.ParserError) as e:
        raise PlannerError(f"{p}: not a CSV file ({e})") from None
    missing = [c for c in ITERATION_COLUMNS if c not in df.columns]
    if missing:
        raise PlannerError(f"{p}: missing columns {missing} (expected {list(ITERATION_COLUMNS)})")
    if df.empty:
        raise PlannerError(f"{p}: no iterations")
    for c in ("source", "as_of"):
        bad = df[c].isna() | (df[c].astype(str).str.strip() == "")
        if bad.any():
            raise PlannerError(f"{p}: row {int(np.argmax(bad.values)) + 2}: empty {c}")
    num = ITERATION_COLUMNS[ITERATION_COLUMNS.index("sched_s") :]
    vals = df[list(num)].apply(pd.to_numeric, errors="coerce")
    bad = ~np.isfinite(vals.values) | (vals.values < 0)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise PlannerError(
            f"{p}: row {i + 2}: {num[j]} = {df[num[j]].iloc[i]!r} is not a non-negative number"
        )
    df[list(num)] = vals
    wall = df[list(WALL_COLUMNS)].sum(axis=1).to_numpy()
    if (wall <= 0).any():
        i = int(np.argmax(wall <= 0))
        raise PlannerError(
            f"{p}: row {i + 2}: the iteration's wall time ({' + '.join(WALL_COLUMNS)}) is 0; "
            "every logged iteration takes time"
        )
    df["path"] = str(p)
    return df


@dataclass(frozen=True)
class IterationFit:
    """Result of :func:`fit_iterations`."""

    params: dict[str, float]  # the fitted parameters (names of EfficiencyParams)
    n_iterations: int
    n_runs: int
    models: tuple[str, ...]
    mdape: float  # median absolute error of the iteration wall time, in-sample [fraction]
    mdape_before: float  # the same with the step model and its priors for these terms
    sources: tuple[str, ...]

    def describe(self) -> str:
        p = self.params
        return (
            f"serving terms fitted on {self.n_iterations:,} iterations of {self.n_runs} serving "
            f"runs ({', '.join(self.models)}): sched_overhead_s {p['sched_overhead_s']:.3g}, "
            f"sched_seq_overhead_s {p['sched_seq_overhead_s']:.3g}, serving_eager_layer_s "
            f"{p['serving_eager_layer_s']:.3g}, attn_seq_bw_bytes_s "
            f"{p['attn_seq_bw_bytes_s']:.3g}, "
            f"attn_split_items {p['attn_split_items']:.4g}, prefix_attn_eff "
            f"{p['prefix_attn_eff']:.3g}; iteration wall time MdAPE "
            f"{self.mdape:.1%} (step model alone {self.mdape_before:.1%})"
        )


def prefix_pairs(df: pd.DataFrame) -> np.ndarray:
    """Query-key pairs between prompt chunks and their cached context per iteration: the
    ``prefill_prefix_pairs`` column where the log has it, else ``prefill_tokens x
    prefill_cached_tokens`` (exact with one chunk per iteration) divided by the chunks."""
    n = np.maximum(df.n_prefill_seqs.to_numpy(float), 1.0)
    est = df.prefill_tokens.to_numpy(float) * df.prefill_cached_tokens.to_numpy(float) / n
    est = np.minimum(est, df.prefill_pairs.to_numpy(float))
    if "prefill_prefix_pairs" in df.columns:
        logged = pd.to_numeric(df.prefill_prefix_pairs, errors="coerce").to_numpy(float)
        return np.where(np.isfinite(logged), logged, est)
    return est


class _Parts:
    """One model's iterations: the step model's inputs and the parts of the predicted wall
    time that do not depend on the fitted parameters."""

    def __init__(self, df: pd.DataFrame, sm: StepModel):
        S = (df.n_decode + df.n_prefill_seqs).to_numpy(float)
        T = (df.n_decode + df.prefill_tokens).to_numpy(float)
        kv = df.decode_ctx_tokens + df.n_decode + df.prefill_cached_tokens + df.prefill_tokens
        pairs = df.decode_ctx_tokens + df.n_decode + df.prefill_pairs
        self.sm = sm
        self.args = (
            T,
            S,
            df.logits.to_numpy(float),
            kv.to_numpy(float),
            pairs.to_numpy(float),
            0.0,
            0.0,
            prefix_pairs(df),
        )
        self._gpu_at: tuple | None = None
        self.eager = T > S
        self.layers = float(sm.layers)
        self.S = S
        self.decoders = (
            df.n_decode.to_numpy(float),
            df.decode_ctx_max.to_numpy(float),
            df.decode_ctx_tokens.to_numpy(float),
        )
        self.wall = df[list(WALL_COLUMNS)].sum(axis=1).to_numpy(float)

    def gpu(self, prefix_attn_eff: float) -> tuple[np.ndarray, np.ndarray]:
        """(GPU time without overheads, overheads) of every iteration [s]."""
        if self._gpu_at is None or self._gpu_at[0] != prefix_attn_eff:
            params = self.sm.params.with_(prefix_attn_eff=prefix_attn_eff)
            b = dataclasses.replace(self.sm, params=params).step(*self.args)
            gpu = np.asarray(b.t_gemm_s + b.t_attn_s + b.t_comm_s, float)
            self._gpu_at = (prefix_attn_eff, gpu, np.asarray(b.t_overhead_s) + 0 * gpu)
        return self._gpu_at[1], self._gpu_at[2]

    def predict(self, p: dict[str, float]) -> np.ndarray:
        k = _scalar.EAGER_K
        raw, over = self.gpu(p["prefix_attn_eff"])
        gpu = np.where(
            self.eager,
            (raw**k + (p["serving_eager_layer_s"] * self.layers) ** k) ** (1 / k),
            raw,
        )
        params = self.sm.params.with_(
            attn_seq_bw_bytes_s=p["attn_seq_bw_bytes_s"], attn_split_items=p["attn_split_items"]
        )
        strag = dataclasses.replace(self.sm, params=params).straggler_time(*self.decoders)
        return gpu + over + strag + p["sched_overhead_s"] + p["sched_seq_overhead_s"] * self.S


def check_enough_iterations(df: pd.DataFrame, framework: str, gpu: str) -> None:
    """Raise unless ``df`` (the iterations of one framework on one GPU) has at least
    :data:`MIN_ITERATIONS_PER_TERM` rows per fitted term."""
    need = MIN_ITERATIONS_PER_TERM * len(FIT)
    if len(df) < need:
        files = ", ".join(sorted(df["path"].astype(str).unique())) if "path" in df else "the log"
        raise PlannerError(
            f"{files}: {len(df):,} iteration{'s' if len(df) != 1 else ''} of {framework} on "
            f"{gpu}; fitting the {len(FIT)} serving terms needs at least {need} "
            f"({MIN_ITERATIONS_PER_TERM} per term): log a longer serving run"
        )


def fit_iterations(
    logs: Sequence[pd.DataFrame] | pd.DataFrame,
    params_for: Callable[[str, str, str], EfficiencyParams],
    catalog: Catalog | None = None,
) -> IterationFit:
    """Fit the serving terms (``FIT``) on iteration logs of one framework on one GPU.

    Parameters
    ----------
    logs : iteration logs (:func:`read_iteration_log`); all rows must share framework and GPU
    params_for : ``(gpu, framework, precision) -> EfficiencyParams``, the step model's fitted
        parameters (the fit keeps them and replaces the ``FIT`` ones)
    catalog : ids are resolved against it
    """
    from scipy.optimize import least_squares

    cat = catalog or load_catalog()
    df = pd.concat(list(logs), ignore_index=True) if not isinstance(logs, pd.DataFrame) else logs
    keys = df[["framework", "hardware"]].drop_duplicates()
    if len(keys) != 1:
        raise PlannerError(
            "fit_iterations takes the logs of one framework on one GPU; got "
            + ", ".join(f"{a}/{b}" for a, b in keys.itertuples(index=False))
        )
    fw, hw = keys.iloc[0]
    check_enough_iterations(df, fw, hw)
    parts: list[_Parts] = []
    for (model, prec, kvp), g in df.groupby(["model", "precision", "kv_precision"], sort=True):
        base = params_for(hw, fw, prec)
        sm = step_model(
            model,
            hw,
            prec,
            kv_precision=kvp,
            params=base.with_(eager_layer_s=0.0),
            catalog=cat,
        )
        parts.append(_Parts(g, sm))
    names = list(FIT)
    lo = np.array([FIT[n][0] for n in names]) / _SCALE
    hi = np.array([FIT[n][1] for n in names]) / _SCALE
    x0 = np.array([FIT[n][2] for n in names]) / _SCALE

    def as_params(x):
        return dict(zip(names, (x * _SCALE).tolist(), strict=True))

    wall = np.concatenate([pt.wall for pt in parts])

    def resid(x):
        p = as_params(x)
        return np.log(np.concatenate([pt.predict(p) for pt in parts]) / wall)

    # plain least squares on log error (a geometric mean), not a robust loss: a request's
    # latency is a SUM of iteration times, so the slow tail of eager iterations (CPU dispatch
    # jitter) counts; soft_l1 (scale 0.05) fitted the median iteration and left TTFT p99 at
    # 15.8% out of sample against 13.9% with this loss (docs/calibration.md)
    r = least_squares(resid, x0, bounds=(lo, hi), loss="linear")
    fitted = as_params(r.x)
    before = as_params(x0)
    before.update(sched_overhead_s=0.0, sched_seq_overhead_s=0.0, attn_seq_bw_bytes_s=0.0)
    base0 = params_for(hw, fw, str(df.precision.iloc[0]))
    before["serving_eager_layer_s"] = float(base0.eager_layer_s)
    before["prefix_attn_eff"] = float(base0.prefix_attn_eff or base0.attn_eff)
    err = np.abs(np.expm1(resid(r.x)))
    err0 = np.abs(np.concatenate([pt.predict(before) for pt in parts]) / wall - 1)
    return IterationFit(
        params={k: float(f"{v:.5g}") for k, v in fitted.items()},
        n_iterations=len(df),
        n_runs=int(df.groupby(["model", "scenario", "rate"]).ngroups),
        models=tuple(sorted(df.model.unique())),
        mdape=float(np.median(err)),
        mdape_before=float(np.median(err0)),
        sources=tuple(sorted(df.source.unique())),
    )
