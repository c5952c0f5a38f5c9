"""Cached runs of the planner for the pages (recommend, classes, compare, length histogram),
the Plan page's precomputed default answer and the warm-up that loads the simulator."""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from app_pages.catalogs import base_catalog, catalog_for
from app_pages.scenario_state import SCENARIO_DEFAULTS, ScenarioForm, loaded_base
from planner import (
    PlannerError,
)


# --------------------------------------------------------------------------- warm-up
def warm_up() -> float:
    """Load the simulator's compiled kernel (compile it on a fresh install, 20-60 s; load it
    from numba's cache otherwise, ~0.5-3 s), compute the Plan page's default answer
    (:func:`default_plan`), kept on disk for later server processes; returns the seconds
    taken.

    ``scripts/warm_up.py`` runs it once at install; the app runs it in a background thread
    when a server process starts (:func:`warm_up_in_background`)."""
    import time

    from planner.recommend import recommend
    from planner.workload import SLO, Workload

    t0 = time.perf_counter()
    default_plan()
    wl = Workload.model_validate({"preset": "chat", "traffic": {"mean_rps": 1.0, "peak_rps": 1.0}})
    slo = SLO.model_validate({"tpot": {"max_s": 0.1}})
    recommend(
        "llama-3.1-8b",
        wl,
        slo,
        catalog=base_catalog(),
        gpus=("nvidia-h100-sxm",),
        frameworks=("vllm",),
        precisions=("fp8",),
        top_n=1,
    )  # fmt: skip  (the kernel, when the default answer came from disk)
    return time.perf_counter() - t0


#: what a page says while the simulator compiles (a fresh install without the warm-up)
COMPILE_NOTE = (
    "Compiling the simulator once (20-60 s after installing or upgrading; later searches "
    "take about a second). The README's first line does it at install: "
    "`python scripts/warm_up.py`."
)


def kernel_cached() -> bool:
    """Whether numba's on-disk cache holds the simulator's compiled event loop
    (``planner/serving/_kernel.py``, next to the package or under ``NUMBA_CACHE_DIR``): a
    page then says nothing about compiling. By its file names only (an entry for an older
    kernel compiles again, ~20 s, without the note)."""
    import os

    import planner.serving

    roots = [Path(planner.serving.__file__).resolve().parent / "__pycache__"]
    if os.environ.get("NUMBA_CACHE_DIR"):
        roots.append(Path(os.environ["NUMBA_CACHE_DIR"]))
    return any(next(r.rglob("_kernel._loop-*.nbi"), None) is not None for r in roots if r.is_dir())


#: seconds between the end of a server's first script run and its warm-up: the browser is
#: still drawing that page (loading the code of charts and tables), and on a 2-core machine
#: the warm-up's kernel load would take a core from it
WARM_UP_DELAY_S = 3.0


@st.cache_resource(show_spinner=False)
def warm_up_in_background() -> Any:
    """Start :func:`warm_up` in a daemon thread, once per server process, after
    :data:`WARM_UP_DELAY_S` (a page that needs a simulation sooner loads the kernel itself)."""

    t = threading.Timer(WARM_UP_DELAY_S, warm_up)
    t.name, t.daemon = "planner-warm-up", True
    t.start()
    return t


def canonical(scenario_json: str) -> str:
    """The scenario's JSON with sorted keys: one cache entry per scenario, whatever the order
    in which the form or a file wrote its fields."""
    import json

    return json.dumps(json.loads(scenario_json), sort_keys=True)


def default_scenario_json() -> str:
    """The scenario the sidebar form holds before any change (:data:`SCENARIO_DEFAULTS`), in
    :func:`canonical` form; ``tests/app`` checks that the form produces exactly this."""
    import json

    D = SCENARIO_DEFAULTS
    slo: dict[str, Any] = {"attainment": D["attainment"]}
    if D["ttft"]:
        slo["ttft"] = {"max_s": float(D["ttft"]), "percentile": "p99"}
    if D["tpot_ms"]:
        slo["tpot"] = {"max_s": D["tpot_ms"] / 1e3, "percentile": "p99"}
    data = {
        "name": "app-scenario",
        "description": "saved from the planner app",
        "model": D["model"],
        "workload": {
            "preset": D["preset"],
            "traffic": {"mean_rps": float(D["mean_rps"]), "peak_rps": float(D["peak_rps"])},
        },
        "slo": slo,
        "constraints": {
            "price_basis": D["basis"],
            "gpus": list(D["gpus"]),
            "headroom": float(D["headroom"]),
        },
    }
    return json.dumps(data, sort_keys=True)


_NO_CUSTOM: tuple[tuple[str, ...], ...] = ((), (), ())
_DEFAULT_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _fingerprint() -> str:
    """Hash of everything a recommendation depends on: planner's code and data files,
    app_pages/runs.py (the shape of the cached dict) and the default scenario itself (the
    form's defaults live in app_pages/scenario_state.py)."""
    import hashlib

    import planner
    from planner.catalog.catalog import DATA_DIR  # PLANNER_DATA_DIR or the bundled data/

    code = Path(planner.__file__).resolve().parent
    h = hashlib.sha256()
    for base, pattern in ((code, "*.py"), (DATA_DIR, "*"), (Path(__file__).parent, "runs.py")):
        for f in sorted(Path(base).rglob(pattern)):
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(base)).encode())
                h.update(f.read_bytes())
    h.update(default_scenario_json().encode())
    return h.hexdigest()[:16]


def default_plan() -> dict[str, Any]:
    """The Plan page's answer for the default scenario (:func:`default_scenario_json`, cost,
    top 5), computed once per install: kept as a pickle in ``app_pages/__pycache__`` under a
    fingerprint of planner's code and data (:func:`_fingerprint`), so a new server process
    shows it without a search and a changed catalog or planner never reuses an old answer."""
    import pickle

    path = Path(__file__).resolve().parent / "__pycache__" / f"default-plan-{_fingerprint()}.pkl"
    with _DEFAULT_LOCK:  # the warm-up thread and the first page: one search, not two
        try:
            res = pickle.loads(path.read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError):
            res = _store_default(
                path, _recommend_dict(_NO_CUSTOM, default_scenario_json(), "cost", 5)
            )
    # its search time is that of the install's or the warm-up's search, not this page's wait
    if "summary" in res:
        res = {**res, "summary": {**res["summary"], "precomputed": True}}
    return res


def _store_default(path: Path, res: dict[str, Any]) -> dict[str, Any]:
    import pickle

    try:
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(f".{id(res)}.tmp")
        tmp.write_bytes(pickle.dumps(res))
        tmp.replace(path)  # atomic: a concurrent reader sees the old file or the new one
        for old in path.parent.glob("default-plan-*.pkl"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only install: computed again by each server process
    return res


def build_scenario(key: tuple, scenario_json: str):
    """The validated :class:`planner.scenario.Scenario` (raises PlannerError)."""
    import json

    from planner.scenario import scenario_from_dict

    return scenario_from_dict(json.loads(scenario_json), where="scenario")


def recommend_kwargs(sc: Any) -> dict[str, Any]:
    """``recommend``'s keywords for a scenario as ``planner recommend FILE`` passes them: the
    scenario's constraints whole (every field, ``latency_cost_cap`` and ``fit_percentile``
    included, so none falls back to a default on the way) and its ``serving`` section."""
    return {"constraints": sc.constraints, "engine": sc.serving.kwargs()}


#: rejected options kept per stage for the Plan page's table (the CLI's CSV has all)
REJECTED_SHOWN = 500
REJECTED_COLUMNS = ("gpu", "framework", "precision", "kv_precision", "tp", "pp", "reason")


def _recommend_dict(key: tuple, scenario_json: str, objective: str, top_n: int) -> dict[str, Any]:
    """``planner.recommend.recommend`` for a scenario as the CLI calls it, as a dict, or
    ``{"error"}``; the rejected options are grouped by stage (``rejected_by_stage``: count,
    first :data:`REJECTED_SHOWN` rows), which keeps the cached dict small (a search rejects
    ~2,000 options; their dicts were most of its size)."""
    from planner.recommend import recommend

    cat = catalog_for(key)
    try:
        sc = build_scenario(key, scenario_json)
        res = recommend(
            sc.model,
            sc.workload,
            sc.slo,
            catalog=cat,
            objective=objective,
            top_n=int(top_n),
            **recommend_kwargs(sc),
        )
    except PlannerError as e:
        return {"error": str(e)}
    out = res.as_dict()
    by_stage: dict[str, dict[str, Any]] = {}
    for r in out.pop("rejected"):
        g = by_stage.setdefault(r["stage"], {"n": 0, "rows": []})
        g["n"] += 1
        if len(g["rows"]) < REJECTED_SHOWN:
            g["rows"].append({c: r.get(c) for c in REJECTED_COLUMNS})
    out["rejected_by_stage"] = by_stage
    out["n_rejected"] = sum(g["n"] for g in by_stage.values())
    return out


@st.cache_data(show_spinner=False, max_entries=64)
def _run_recommend(key: tuple, scenario_json: str, objective: str, top_n: int) -> dict[str, Any]:
    if key == _NO_CUSTOM and (scenario_json, objective, int(top_n)) == (
        default_scenario_json(),
        "cost",
        5,
    ):
        return default_plan()  # computed at install or by this server's warm-up
    return _recommend_dict(key, scenario_json, objective, top_n)


def run_recommend(key: tuple, scenario_json: str, objective: str, top_n: int) -> dict[str, Any]:
    """``planner.recommend.recommend`` for the form's scenario as a dict (rejected options
    grouped by stage: :func:`_recommend_dict`), or ``{"error"}``; cached per scenario."""
    return _run_recommend(key, canonical(scenario_json), objective, int(top_n))


@st.cache_data(show_spinner=False, max_entries=16)
def run_classes(key: tuple, scenario_json: str, objective: str, top_n: int) -> dict[str, Any]:
    """``planner.recommend.classes.recommend_classes`` for a request-class scenario (a pool
    per class against one shared pool), with the CLI's arguments; or ``{"error"}``."""
    from planner.recommend.classes import recommend_classes
    from planner.serving import RequestClass

    cat = catalog_for(key)
    try:
        sc = build_scenario(key, scenario_json)
        return recommend_classes(
            sc.model,
            [RequestClass(k.name, k.workload, k.slo) for k in sc.classes],
            catalog=cat,
            constraints=sc.constraints,
            objective=objective,
            top_n=int(top_n),
            engine=sc.serving.kwargs(),
        )
    except PlannerError as e:
        return {"error": str(e)}


def cli_command(form: ScenarioForm, *, per_gpu: bool = False) -> str:
    """The ``planner recommend`` command that answers what the page shows: the loaded file
    when the form is unchanged, else the scenario downloaded from the sidebar."""
    import json

    base = loaded_base()
    same = base is not None and json.loads(base["json"]) == form.data
    path = base["name"] if same else "scenario.yaml"
    cmd = f"planner recommend {path}"
    if form.data.get("classes"):
        return cmd + f" --objective {form.objective} --top {form.top_n}"
    if per_gpu:
        return cmd + f" --per-gpu --objective {form.objective}"
    return cmd + f" --objective {form.objective} --top {form.top_n}"


def command_line(cmd: str) -> None:
    """Show the equivalent CLI command ``cmd`` as inline code (select it to copy).

    Not ``st.code``: a code block makes the browser load and run Streamlit's 1.5 MB syntax
    highlighter on a page's first visit, 0.2-0.5 s of a new server's first Plan page on the
    2-core machine (issue 18, cold first load), for one line of shell."""
    st.markdown(f"`` {cmd} ``" if "`" in cmd else f"`{cmd}`")  # a file name may hold a `


@st.cache_data(show_spinner=False, max_entries=64)
def run_compare(key: tuple, scenario_json: str, objective: str) -> dict[str, Any]:
    """``planner.recommend.compare_gpus`` for the form's scenario, or ``{"error"}``."""
    from planner.recommend import compare_gpus

    cat = catalog_for(key)
    try:
        sc = build_scenario(key, scenario_json)
        return compare_gpus(
            sc.model,
            sc.workload,
            sc.slo,
            catalog=cat,
            gpus=sc.constraints.gpus,
            objective=objective,
            **recommend_kwargs(sc),
        )
    except PlannerError as e:
        return {"error": str(e)}


def nice_bins(lo: float, hi: float, maxbins: int = 40) -> tuple[float, float, float]:
    """Vega-Lite's bins for values from ``lo`` to ``hi`` with at most ``maxbins`` bins
    (``bin: {maxbins}``): (start, stop, step), as vega-statistics ``bin`` chooses them (base
    10, steps divided by 5 or 2 where that stays within ``maxbins``, start and stop on
    multiples of the step), so a histogram binned here looks as one Vega-Lite would bin."""
    import math

    span = hi - lo
    if not span > 0:
        span = abs(lo) or 1.0
    level = math.ceil(math.log10(maxbins))
    step = 10.0 ** (round(math.log10(span)) - level)
    while math.ceil(span / step) > maxbins:
        step *= 10
    for div in (5, 2):
        if span / (step / div) <= maxbins:
            step /= div
    v = math.log10(step)
    eps = 10.0 ** (-(0 if v >= 0 else int(-v) + 1) - 1)
    start = math.floor(lo / step + eps) * step
    start = start - step if lo < start else start
    stop = math.ceil(hi / step) * step
    return start, (stop if stop > start else start + step), step


@st.cache_data(show_spinner=False, max_entries=64)
def length_histogram(key: tuple, scenario_json: str, n: int = 2000) -> pd.DataFrame:
    """Prompt and answer lengths of ``n`` requests drawn from the workload, binned as
    Vega-Lite would (:func:`nice_bins`, at most 40 bins each): columns ``which`` (prompt /
    answer), ``bin_start`` and ``bin_end`` [tokens], ``count`` [requests]. Binned here, the
    browser draws ~80 bars instead of binning 2 x ``n`` rows itself."""
    sc = build_scenario(key, scenario_json)
    parts = []
    drawn = sc.workload.sample_lengths(n, np.random.default_rng(0))
    for which, x in zip(("prompt", "answer"), drawn, strict=True):
        x = np.asarray(x, dtype=float)
        start, stop, step = nice_bins(float(x.min()), float(x.max()))
        edges = start + step * np.arange(round((stop - start) / step) + 1)
        counts, _ = np.histogram(x, bins=edges)
        parts.append(
            pd.DataFrame(
                {"which": which, "bin_start": edges[:-1], "bin_end": edges[1:], "count": counts}
            )
        )
    return pd.concat(parts, ignore_index=True)


def deploy_zip(res: dict[str, Any], sc: Any, cat: Any) -> bytes:
    """The ``--emit`` folders of the ranked options as one zip; a text file saying why when
    an option cannot be written (the CLI's one-line error)."""
    import io
    import zipfile
    from types import SimpleNamespace

    from planner.deploy import emit_zip

    result = SimpleNamespace(recommendations=res["recommendations"], summary=res.get("summary"))
    try:
        return emit_zip(result, sc, cat)
    except PlannerError as e:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("planner-deploy/NOT-WRITTEN.txt", f"{e}\n")
        return buf.getvalue()
