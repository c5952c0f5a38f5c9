"""The scenario form in the sidebar (Plan, What-if, Compare): model, traffic, lengths, SLOs,
prices and search constraints, each bound to a URL query parameter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st
from pydantic import ValidationError

from app_pages.catalogs import CUSTOM_MODELS, catalog_for, custom_key, validation_message
from app_pages.deployment import _index
from app_pages.scenario_state import (
    _LOADED,
    _UPLOAD_ERROR,
    ANY_PROVIDER,
    BASES,
    CUSTOM_LENGTHS,
    DAILY_SHAPES,
    MEAN_SET,
    PLAN_GPUS,
    PRESET_NAMES,
    RPS_MAX,
    RPS_MIN,
    SCENARIO_DEFAULTS,
    SHARED_READ,
    UPLOAD,
    ScenarioForm,
    _default,
    _keep,
    _merged,
    _stash,
    accept_scenario_upload,
    forget_scenario,
    form_changed,
    loaded_base,
    scenario_from_link,
    share_loaded_scenario,
)
from planner import (
    Catalog,
    ModelArch,
    PlannerError,
    fmt,
)


def _providers(cat: Catalog) -> list[str]:
    return sorted({p.provider for p in cat.rental_prices if p.provider})


def model_upload(cat: Catalog) -> None:
    """A config.json uploader that adds the model to this session's catalog."""
    import tempfile

    from planner.catalog import model_from_hf_config

    up = st.file_uploader(
        "Model from a HuggingFace config.json",
        type=["json"],
        key="config_json",
        help="adds the model to this session's catalog (it appears at the end of the list)",
    )
    if up is None:
        return
    name = Path(up.name).stem
    model_id = f"uploaded-{name}" if name != "config" else "uploaded-model"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "config.json"
        p.write_bytes(up.getvalue())
        try:
            arch = model_from_hf_config(p, model_id=model_id)
        except PlannerError as e:
            st.error(str(e).replace(str(p), up.name))
            return
    js = arch.model_dump_json()
    have = list(st.session_state.get(CUSTOM_MODELS, []))
    if js not in have:
        have = [h for h in have if ModelArch.model_validate_json(h).id != arch.id] + [js]
        try:
            catalog_for((custom_key()[0], custom_key()[1], tuple(have)))
        except (ValidationError, PlannerError) as e:
            st.error(f"{up.name}: {e}")
            return
        st.session_state[CUSTOM_MODELS] = have
        st.session_state["model"] = arch.id
        _stash()["model"] = arch.id
        st.rerun()
    st.caption(f"uploaded: `{arch.id}`")


def _mean_set() -> None:
    st.session_state[MEAN_SET] = True


def scenario_sidebar(cat: Catalog, *, search: bool = True) -> ScenarioForm:
    """The scenario form (sidebar). ``search``: show the objective and constraints."""
    D = SCENARIO_DEFAULTS
    errors: list[tuple[str, str]] = []
    model_ids = [m.id for m in cat.models]
    gpu_ids = [g.id for g in cat.accelerators]
    with st.sidebar:
        st.header("Scenario")
        with st.expander("Load / save scenario (YAML)", expanded=bool(loaded_base())):
            up = st.file_uploader(
                "Load a scenario file (the CLI's YAML, e.g. examples/chat-8b.yaml)",
                type=["yaml", "yml"],
                key="scenario_file",
            )
            pending = st.session_state.pop(UPLOAD, None)  # (name, bytes); tests put it here
            first = not st.session_state.get(SHARED_READ)
            pending = pending or scenario_from_link()  # a shared link's file, once a session
            if up is None and pending is None and not first:
                st.session_state.pop(_UPLOAD_ERROR, None)  # the broken file was removed
            if up is not None and st.session_state.get(_LOADED) != up.file_id:
                st.session_state[_LOADED] = up.file_id
                pending = (up.name, up.getvalue())
            if pending is not None:
                err = accept_scenario_upload(pending[0], pending[1], cat)
                if err is None:
                    st.rerun()
                st.session_state[_UPLOAD_ERROR] = err
            if st.session_state.get(_UPLOAD_ERROR):
                st.error(st.session_state[_UPLOAD_ERROR])
                # the page shows it where its answer would be, and no answer of the old form
                errors.append(("upload", st.session_state[_UPLOAD_ERROR]))
            base = loaded_base()
            if base:
                st.caption(
                    f"loaded **{base['name']}**: every field is used as `planner recommend` "
                    "reads it; a field changed below overrides the file's"
                )
                for n in base["notes"]:
                    st.caption(n)
                if st.button("Forget the loaded file", key="forget_scenario"):
                    forget_scenario()
                    st.rerun()
            save_slot = st.empty()
        share_loaded_scenario()
        model_id = st.selectbox(
            "Model",
            model_ids,
            key="model",
            bind="query-params",
            **_default("model", opts=model_ids, index=_index(model_ids, D["model"])),
        )
        _keep("model", model_id)
        with st.expander("Upload a model (config.json)"):
            model_upload(cat)

        base = loaded_base()
        classes = bool(base and base.get("classes"))
        wl: dict[str, Any] | None = None
        slo: dict[str, Any] | None = None
        if classes:
            with st.expander("Request classes", expanded=True):
                st.markdown(
                    f"**{base['name']}** has request classes "
                    + ", ".join(f"`{n}`" for n in base["classes"])
                    + "; their traffic, lengths and SLOs come from the file (edit it to "
                    "change them). Plan compares one shared pool with a pool per class."
                )
        else:
            with st.expander("Traffic", expanded=True):
                c1, c2 = st.columns(2)
                peak = c1.number_input(
                    "Peak [req/s]",
                    min_value=0.0,
                    step=1.0,
                    key="peak_rps",
                    bind="query-params",
                    help="the busiest rate to plan for (the planning peak is the larger of this "
                    "and the busiest hour of the daily profile)",
                    **_default("peak_rps", value=D["peak_rps"]),
                )
                # Mean follows Peak until the user sets it, as `planner recommend --peak-rps`
                # without `--mean-rps` plans a flat day at the peak
                if MEAN_SET not in st.session_state:  # once a session: a link's own mean
                    st.session_state[MEAN_SET] = "mean_rps" in st.query_params
                if not st.session_state[MEAN_SET]:
                    st.session_state["mean_rps"] = _keep("mean_rps", float(peak))
                mean = c2.number_input(
                    "Mean [req/s]" if st.session_state[MEAN_SET] else "Mean [req/s] (= Peak)",
                    min_value=0.0,
                    step=1.0,
                    key="mean_rps",
                    bind="query-params",
                    on_change=_mean_set,
                    help="the day's average (autoscaled cost, kWh per day); it follows Peak "
                    "until you set it, as `planner recommend --peak-rps R` without "
                    "`--mean-rps` plans a flat day at the peak",
                    # value= also while following (the value set above): without it the
                    # widget's default is 0, the URL carries the mean, and in the browser a
                    # Peak change lost peak_rps from the URL (e2e plan test); Streamlit logs
                    # a warning for a key set both ways, as it does for "model"
                    **_default("mean_rps", value=D["mean_rps"]),
                )
                shapes = list(DAILY_SHAPES)
                daily = st.selectbox(
                    "Daily profile",
                    shapes,
                    key="daily",
                    bind="query-params",
                    help="24 hourly multipliers of the mean; the autoscaled cost follows it",
                    **_default("daily", opts=shapes, index=0),
                )
                for name, v in (("Peak", peak), ("Mean", mean)):
                    if not RPS_MIN <= v <= RPS_MAX:  # the CLI's range for --peak-rps/--mean-rps
                        msg = (
                            f"{name} [req/s] must be above 0 and at most {RPS_MAX:,.0f}; "
                            f"got {fmt.num(v)}"
                        )
                        st.error(msg)
                        errors.append(("traffic", msg))
                traffic = {"mean_rps": float(mean), "peak_rps": float(peak)}
                if DAILY_SHAPES[daily] is not None:
                    traffic["daily_profile"] = list(DAILY_SHAPES[daily])
                try:
                    from planner.workload import Traffic

                    if not errors:
                        Traffic.model_validate(traffic)
                except ValidationError as e:
                    st.error(validation_message(e))
                    errors.append(("traffic", validation_message(e)))
                _keep("peak_rps", peak), _keep("mean_rps", mean), _keep("daily", daily)

            with st.expander("Prompt and answer lengths", expanded=True):
                opts = [*PRESET_NAMES, CUSTOM_LENGTHS]
                preset = st.selectbox(
                    "Length preset",
                    opts,
                    key="preset",
                    bind="query-params",
                    help="presets with their sources: docs/workloads; custom: lognormal from the "
                    "mean and the 90th percentile",
                    **_default("preset", opts=opts, index=0),
                )
                _keep("preset", preset)
                wl: dict[str, Any] = {"traffic": traffic}
                if preset == CUSTOM_LENGTHS:
                    c1, c2 = st.columns(2)
                    vals = {}
                    for col, k, label in (
                        (c1, "in_mean", "Prompt mean [tokens]"),
                        (c2, "in_p90", "Prompt p90 [tokens]"),
                        (c1, "out_mean", "Answer mean [tokens]"),
                        (c2, "out_p90", "Answer p90 [tokens]"),
                    ):
                        vals[k] = col.number_input(
                            label,
                            min_value=1,
                            max_value=2_000_000,
                            step=50,
                            key=k,
                            bind="query-params",
                            **_default(k, value=D[k]),
                        )
                        _keep(k, vals[k])
                    wl["input_tokens"] = {
                        "kind": "lognormal",
                        "mean": float(vals["in_mean"]),
                        "p90": float(vals["in_p90"]),
                    }
                    wl["output_tokens"] = {
                        "kind": "lognormal",
                        "mean": float(vals["out_mean"]),
                        "p90": float(vals["out_p90"]),
                    }
                    wl["traffic"] = {**traffic, "arrival": "poisson"}
                else:
                    wl = {"preset": preset, "traffic": traffic}
                max_out = st.number_input(
                    "Clients' max_tokens [tokens]",
                    min_value=0,
                    max_value=2_000_000,
                    step=256,
                    key="max_out",
                    bind="query-params",
                    help="what each request sends as max_tokens; TensorRT-LLM reserves it in the "
                    "KV cache at admission. 0: the answers' P99 (stated among the assumptions)",
                    **_default("max_out", value=D["max_out"]),
                )
                _keep("max_out", max_out)
                if max_out:
                    wl["max_output_tokens"] = int(max_out)
                try:
                    from planner.workload import Workload

                    Workload.model_validate(wl)
                except ValidationError as e:
                    msg = validation_message(e)
                    # a loaded file's own lengths are used while these widgets are untouched
                    # (they may show them clamped to their ranges)
                    mine = base is None or form_changed(
                        base, "preset", "in_mean", "in_p90", "out_mean", "out_p90", "max_out"
                    )
                    if mine and not any(k == "traffic" for k, _ in errors):
                        st.error(msg)
                        errors.append(("lengths", msg))

            with st.expander("Latency targets (SLO)", expanded=True):
                c1, c2 = st.columns(2)
                ttft = c1.number_input(
                    "TTFT P99 [s]",
                    min_value=0.0,
                    max_value=3600.0,
                    step=0.1,
                    key="ttft",
                    bind="query-params",
                    help="time to first token, queueing included; 0 = no target",
                    **_default("ttft", value=D["ttft"]),
                )
                tpot = c2.number_input(
                    "TPOT P99 [ms]",
                    min_value=0,
                    max_value=100_000,
                    step=5,
                    key="tpot_ms",
                    bind="query-params",
                    help="time per output token after the first; 0 = no target",
                    **_default("tpot_ms", value=D["tpot_ms"]),
                )
                e2e = c1.number_input(
                    "E2E P99 [s]",
                    min_value=0.0,
                    max_value=86_400.0,
                    step=1.0,
                    key="e2e",
                    bind="query-params",
                    help="end-to-end latency target; 0 = none",
                    **_default("e2e", value=D["e2e"]),
                )
                att = c2.number_input(
                    "Attainment",
                    min_value=0.5,
                    max_value=1.0,
                    step=0.005,
                    format="%.3f",
                    key="attainment",
                    bind="query-params",
                    help="share of requests that must meet every target at once",
                    **_default("attainment", value=D["attainment"]),
                )
                for k, v in (("ttft", ttft), ("tpot_ms", tpot), ("e2e", e2e), ("attainment", att)):
                    _keep(k, v)
                slo: dict[str, Any] = {"attainment": float(att)}
                if ttft > 0:
                    slo["ttft"] = {"max_s": float(ttft), "percentile": "p99"}
                if tpot > 0:
                    slo["tpot"] = {"max_s": float(tpot) / 1e3, "percentile": "p99"}
                if e2e > 0:
                    slo["e2e"] = {"max_s": float(e2e), "percentile": "p99"}
                if not any(k in slo for k in ("ttft", "tpot", "e2e")):
                    msg = "give at least one latency target (TTFT, TPOT or E2E)"
                    st.error(msg)
                    errors.append(("slo", msg))

        with st.expander("Prices", expanded=search):
            basis = st.selectbox(
                "Price basis",
                BASES,
                key="basis",
                bind="query-params",
                format_func=lambda b: b.replace("_", "-"),
                help="rental kind from data/prices.yaml (median-priced row), or own: the "
                "purchase price amortised with data/ownership.yaml",
                **_default("basis", opts=BASES, index=0),
            )
            provs = [ANY_PROVIDER, *_providers(cat)]
            provider = st.selectbox(
                "Provider",
                provs,
                key="provider",
                bind="query-params",
                **_default("provider", opts=provs, index=0),
            )
            _keep("basis", basis), _keep("provider", provider)
        constraints: dict[str, Any] = {"price_basis": basis}
        if provider != ANY_PROVIDER:
            constraints["providers"] = [provider]

        objective, top_n = D["objective"], D["top_n"]
        headroom = st.session_state.get("headroom", _stash().get("headroom", D["headroom"]))
        if search:
            from planner.recommend import OBJECTIVES
            from planner.recommend.objective import OBJECTIVE_TABLE

            OBJECTIVE_TEXT = {k: v.text for k, v in OBJECTIVE_TABLE.items()}

            with st.expander("Search and constraints", expanded=True):
                objs = list(OBJECTIVES)
                objective = st.selectbox(
                    "Objective",
                    objs,
                    key="objective",
                    bind="query-params",
                    format_func=lambda o: f"{o}: {OBJECTIVE_TEXT.get(o, '')}",
                    **_default("objective", opts=objs, index=_index(objs, D["objective"])),
                )
                all_gpus = st.checkbox(
                    "Whole GPU catalog (slower)",
                    key="all_gpus",
                    bind="query-params",
                    help=f"all {len(gpu_ids)} GPUs instead of the list below",
                    **_default("all_gpus", value=False),
                )
                gpus = st.multiselect(
                    "GPUs",
                    gpu_ids,
                    key="gpus",
                    bind="query-params",
                    disabled=all_gpus,
                    **_default("gpus", default=[g for g in PLAN_GPUS if g in gpu_ids]),
                )
                fws = st.multiselect(
                    "Frameworks (empty: all)",
                    [f.id for f in cat.frameworks],
                    key="frameworks",
                    bind="query-params",
                    **_default("frameworks", default=[]),
                )
                precs = st.multiselect(
                    "Weight precisions (empty: all)",
                    [p.id for p in cat.precisions],
                    key="precisions",
                    bind="query-params",
                    **_default("precisions", default=[]),
                )
                c1, c2 = st.columns(2)
                max_gpus = c1.number_input(
                    "Max GPUs (0: any)",
                    min_value=0,
                    max_value=100_000,
                    step=1,
                    key="max_gpus",
                    bind="query-params",
                    **_default("max_gpus", value=D["max_gpus"]),
                )
                budget = c2.number_input(
                    "Budget [$/month] (0: any)",
                    min_value=0,
                    max_value=10**9,
                    step=1000,
                    key="budget",
                    bind="query-params",
                    **_default("budget", value=D["budget"]),
                )
                headroom = st.slider(
                    "Headroom above the peak",
                    0.0,
                    1.0,
                    step=0.05,
                    key="headroom",
                    bind="query-params",
                    help="spare capacity: the fleet is sized for peak x (1 + headroom)",
                    **_default("headroom", value=D["headroom"]),
                )
                top_n = st.number_input(
                    "Options to rank",
                    min_value=1,
                    max_value=20,
                    step=1,
                    key="top_n",
                    bind="query-params",
                    **_default("top_n", value=D["top_n"]),
                )
                for k, v in (
                    ("objective", objective),
                    ("all_gpus", all_gpus),
                    ("gpus", gpus),
                    ("frameworks", fws),
                    ("precisions", precs),
                    ("max_gpus", max_gpus),
                    ("budget", budget),
                    ("headroom", headroom),
                    ("top_n", top_n),
                ):
                    _keep(k, v)
                if not all_gpus:
                    if not gpus:
                        st.error("choose at least one GPU (or the whole catalog)")
                        errors.append(("gpus", "no GPU chosen"))
                    constraints["gpus"] = list(gpus)
                if fws:
                    constraints["frameworks"] = list(fws)
                if precs:
                    constraints["precisions"] = list(precs)
                if max_gpus:
                    constraints["max_total_gpus"] = int(max_gpus)
                if budget:
                    constraints["max_usd_per_month"] = float(budget)
        constraints["headroom"] = float(headroom)
    import json

    data = {
        "name": "app-scenario",
        "description": "saved from the planner app",
        "model": model_id,
        "workload": wl,
        "slo": slo,
        "constraints": constraints,
    }
    if base:
        data = _merged(base, data, search)
    form = ScenarioForm(json.dumps(data), str(objective), int(top_n), tuple(errors))
    with save_slot:
        st.download_button(
            "Download this scenario (YAML)",
            scenario_yaml(form),
            file_name="scenario.yaml",
            mime="application/x-yaml",
            disabled=not form.ok,
            help="the same format as examples/*.yaml: planner recommend scenario.yaml",
        )
    return form


def scenario_yaml(form: ScenarioForm) -> str:
    import yaml

    head = (
        "# Scenario saved from the planner app; run it with\n"
        f"#   planner recommend scenario.yaml --objective {form.objective} --top {form.top_n}\n"
    )
    return head + yaml.safe_dump(form.data, sort_keys=False)
