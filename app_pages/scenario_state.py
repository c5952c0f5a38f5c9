"""The scenario shared by Plan, What-if and Compare: the form's defaults and option lists,
the values kept across pages (``session_state``), and a loaded scenario file (read as the CLI
reads it, copied into the form, merged with the form's changes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from app_pages.deployment import DEFAULTS
from planner import (
    Catalog,
    PlannerError,
)

# =========================================================================== scenario form
# The Plan, What-if and Compare pages share one scenario (model, traffic, lengths, SLOs,
# prices, search constraints) in the sidebar; every widget is bound to a URL query parameter
# and stashed in session_state so that it survives a page switch.
PLAN_GPUS = [
    "nvidia-h100-sxm",
    "nvidia-h200-sxm",
    "nvidia-b200",
    "amd-mi300x",
    "nvidia-a100-80gb-sxm",
    "nvidia-l40s",
]
PRESET_NAMES = ["chat", "rag", "code", "summarization", "batch"]
CUSTOM_LENGTHS = "custom (lognormal)"
BASES = ["on_demand", "reserved", "spot", "own", "serverless", "community"]
ANY_PROVIDER = "(median of all providers)"
# 24 hourly multipliers of the mean (00:00 ... 23:00); the shapes are inputs, not data
DAILY_SHAPES: dict[str, tuple[float, ...] | None] = {
    "flat (no daily profile)": None,
    "daytime peak (examples/chat-8b.yaml)": (
        0.3, 0.2, 0.2, 0.2, 0.3, 0.5, 0.8, 1.1, 1.4, 1.6, 1.7, 1.7,
        1.6, 1.7, 1.8, 1.8, 1.7, 1.5, 1.3, 1.1, 0.9, 0.7, 0.5, 0.4,
    ),
    "office hours (09:00-18:00)": (
        0.2, 0.2, 0.2, 0.2, 0.2, 0.3, 0.5, 0.9, 1.5, 2.0, 2.1, 2.1,
        1.8, 2.0, 2.1, 2.0, 1.8, 1.3, 0.8, 0.5, 0.4, 0.3, 0.2, 0.2,
    ),
    "evening peak (consumer)": (
        0.6, 0.4, 0.3, 0.2, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1,
        1.1, 1.1, 1.1, 1.2, 1.3, 1.5, 1.8, 2.1, 2.2, 2.0, 1.5, 1.0,
    ),
}  # fmt: skip
SCENARIO_DEFAULTS: dict[str, Any] = {
    "model": DEFAULTS["model"],
    "preset": "chat",
    "peak_rps": 10.0,
    "mean_rps": 10.0,  # = peak: `planner recommend --peak-rps` without --mean-rps (flat day)
    "daily": "flat (no daily profile)",
    "in_mean": 1000,
    "in_p90": 2000,
    "out_mean": 250,
    "out_p90": 500,
    "max_out": 0,  # the clients' max_tokens; 0: the answers' P99 (stated as an assumption)
    "ttft": 1.0,
    "tpot_ms": 50,
    "e2e": 0.0,
    "attainment": 0.99,
    "headroom": 0.2,
    "basis": "on_demand",
    "provider": ANY_PROVIDER,
    "objective": "cost",
    "gpus": PLAN_GPUS,
    "all_gpus": False,
    "frameworks": [],
    "precisions": [],
    "max_gpus": 0,
    "budget": 0,
    "top_n": 5,
}
_STASH = "_scenario_stash"
_LOADED = "_scenario_loaded_id"
_BASE = "_scenario_base"  # the uploaded file: name, JSON, the form values it set, notes
_UPLOAD_ERROR = "_scenario_upload_error"
#: session_state key: True once the user (or a link, or a loaded file) set the mean rate;
#: until then Mean follows Peak
MEAN_SET = "_mean_rps_set"
#: session_state key of a pending scenario upload, ``(file name, bytes)`` (the uploader's
#: file, or one a test puts there: AppTest has no file uploader)
UPLOAD = "scenario_upload"
RPS_MIN, RPS_MAX = 1e-6, 1e7


def _stash() -> dict[str, Any]:
    return st.session_state.setdefault(_STASH, {})


def _restore(key: str) -> None:
    """Put a value kept from another page back before its widget is created."""
    if key not in st.session_state and key in _stash() and key not in st.query_params:
        st.session_state[key] = _stash()[key]


def _keep(key: str, value: Any) -> Any:
    _stash()[key] = value
    return value


def _default(key: str, opts: list[Any] | None = None, **kw: Any) -> dict[str, Any]:
    """The widget's ``value`` / ``index`` / ``default`` keyword: the default, or the value it
    already holds (kept from another page). A URL-bound widget whose parameter is missing from
    the URL (a page link, a page switch) falls back to its default, so the default must be the
    value it holds, not the first option."""
    _restore(key)
    if key not in st.session_state:
        return kw
    cur = st.session_state[key]
    if "index" in kw:
        return {"index": opts.index(cur)} if opts is not None and cur in opts else kw
    name = next(iter(kw))
    return {name: cur}


@dataclass(frozen=True)
class ScenarioForm:
    """What the sidebar produced: the scenario (as the CLI's YAML dict, JSON text so it
    hashes), the objective, how many options to rank, and the first error of each section."""

    scenario_json: str
    objective: str
    top_n: int
    errors: tuple[tuple[str, str], ...]

    @property
    def data(self) -> dict[str, Any]:
        import json

        return json.loads(self.scenario_json)

    @property
    def ok(self) -> bool:
        return not self.errors


def _length_to_form(dist: Any) -> tuple[float, float]:
    """A length distribution's mean and p90 [tokens] for the form's lognormal fields (not
    rounded here: :func:`_within_form` clamps and rounds, a huge or infinite value included)."""
    return float(dist.mean_tokens()), float(dist.quantile_tokens(0.9))


#: the form's widgets' ranges (scenario_form.py): a file's value outside one is shown clamped
#: (with a note) and the file's own value is used, as the CLI uses it
FORM_LIMITS: dict[str, tuple[float, float]] = {
    "in_mean": (1, 2_000_000),
    "in_p90": (1, 2_000_000),
    "out_mean": (1, 2_000_000),
    "out_p90": (1, 2_000_000),
    "max_out": (0, 2_000_000),
    "ttft": (0.0, 3600.0),
    "tpot_ms": (0, 100_000),
    "e2e": (0.0, 86_400.0),
    "attainment": (0.5, 1.0),
    "headroom": (0.0, 1.0),
    "max_gpus": (0, 100_000),
    "budget": (0, 10**9),
}
_INT_FIELDS = {"in_mean", "in_p90", "out_mean", "out_p90", "max_out", "tpot_ms", "max_gpus"}
_INT_FIELDS |= {"budget"}


def _within_form(vals: dict[str, Any], notes: list[str]) -> None:
    """Clamp ``vals`` to :data:`FORM_LIMITS` (a widget refuses a value outside its range, and
    the page would stop with Streamlit's error), noting each field clamped."""
    import math

    for k, (lo, hi) in FORM_LIMITS.items():
        if k not in vals:
            continue
        v = float(vals[k])
        shown = min(max(v, lo), hi) if math.isfinite(v) else hi
        if shown != v:
            notes.append(
                f"{k} = {v:g} is outside the form's range ({lo:g} to {hi:g}): the form shows "
                f"{shown:g}; the file's value is used"
            )
        vals[k] = int(round(shown)) if k in _INT_FIELDS else shown


def _form_values(sc: Any, data: dict[str, Any], cat: Catalog) -> tuple[dict[str, Any], list[str]]:
    """The form's widget values for a validated scenario, and notes on what the widgets show
    only approximately (the file's own value is used until the widget is changed)."""
    notes: list[str] = []
    if sc.model not in [m.id for m in cat.models]:
        raise PlannerError(f"uploaded scenario: model '{sc.model}' is not in the catalog")
    vals: dict[str, Any] = {"model": cat.model(sc.model).id}
    if not sc.classes:
        raw_wl = data.get("workload", {}) or {}
        wl = sc.require_workload()
        preset = raw_wl.get("preset")
        if preset in PRESET_NAMES and not (
            raw_wl.get("input_tokens") or raw_wl.get("output_tokens")
        ):
            vals["preset"] = preset
        else:
            vals["preset"] = CUSTOM_LENGTHS
            vals["in_mean"], vals["in_p90"] = _length_to_form(wl.input_tokens)
            vals["out_mean"], vals["out_p90"] = _length_to_form(wl.output_tokens)
            if not (
                getattr(wl.input_tokens, "kind", "") == "lognormal"
                and getattr(wl.output_tokens, "kind", "") == "lognormal"
            ):
                notes.append("lengths: the form shows a lognormal with the file's mean and p90")
        vals["max_out"] = int(wl.max_output_tokens or 0)
        tr = wl.traffic
        vals["mean_rps"] = float(tr.base_mean_rps())
        vals["peak_rps"] = float(tr.peak_rps or tr.peak())
        shape = "flat (no daily profile)"
        if tr.daily_profile is not None:
            match = [k for k, v in DAILY_SHAPES.items() if v == tuple(tr.daily_profile)]
            if match:
                shape = match[0]
            else:
                notes.append("the file's daily profile is not one of the form's shapes")
        vals["daily"] = shape
        for k in ("ttft", "tpot", "e2e"):
            t = getattr(sc.slo, k)
            if t is not None and t.percentile != 99:
                notes.append(f"{k.upper()} target at p{t.percentile:g}: the form shows P99")
        vals["ttft"] = float(sc.slo.ttft.max_s) if sc.slo.ttft else 0.0
        vals["tpot_ms"] = int(round(sc.slo.tpot.max_s * 1e3)) if sc.slo.tpot else 0
        vals["e2e"] = float(sc.slo.e2e.max_s) if sc.slo.e2e else 0.0
        vals["attainment"] = float(sc.slo.attainment or 0.99)
    c = sc.constraints
    vals["headroom"] = float(c.headroom)
    vals["basis"] = c.price_basis
    vals["provider"] = c.providers[0] if c.providers else ANY_PROVIDER
    if len(c.providers) > 1:
        notes.append(f"providers {', '.join(c.providers)}: the form shows the first")
    vals["gpus"] = [cat.gpu(g).id for g in c.gpus] if c.gpus else list(PLAN_GPUS)
    vals["all_gpus"] = not c.gpus
    vals["frameworks"] = [cat.framework(f).id for f in c.frameworks]
    vals["precisions"] = [cat.precision(p).id for p in c.precisions]
    vals["max_gpus"] = int(c.max_total_gpus or 0)
    vals["budget"] = int(c.max_usd_per_month or 0)
    d = sc.deployment  # What-if's knobs start where `planner capacity FILE` starts
    if d.gpu and "deployment" in data:
        vals["wi_gpu"] = cat.gpu(d.gpu).id
    if d.framework and d.framework != "pytorch":
        vals["wi_fw"] = cat.framework(d.framework).id
    if d.precision:
        vals["wi_prec"] = cat.precision(d.precision).id
    if "deployment" in data and d.tp in (1, 2, 4, 8):
        vals["wi_tp"] = int(d.tp)
    if d.kv_precision and "wi_fw" in vals and "wi_prec" in vals:
        vals[f"wi_kv_{vals['wi_prec']}_{vals['wi_fw']}"] = d.kv_precision
    if "deployment" in data and (d.pp != 1 or d.tp not in (1, 2, 4, 8)):
        notes.append(f"deployment tp={d.tp} pp={d.pp}: What-if offers TP 1, 2, 4, 8 and PP 1")
    shown = {ck for _, ck in _CONSTRAINT_WIDGETS}
    hidden = [k for k in (data.get("constraints") or {}) if k not in shown]
    if "serving" in data:
        hidden.append("serving")
    if hidden:
        notes.append("used from the file (not in the form): " + ", ".join(hidden))
    _within_form(vals, notes)
    return vals, notes


def _set_form(vals: dict[str, Any]) -> None:
    for k, v in vals.items():
        st.session_state[k] = v
        _stash()[k] = v
    if "mean_rps" in vals:
        st.session_state[MEAN_SET] = True  # the file's mean, not the peak's


def apply_scenario(data: dict[str, Any], cat: Catalog) -> list[str]:
    """Copy a validated scenario (a loaded YAML) into the form's widgets; returns notes on
    what the form cannot show exactly."""
    from planner.scenario import scenario_from_dict

    sc = scenario_from_dict(data, where="uploaded scenario")
    vals, notes = _form_values(sc, data, cat)
    _set_form(vals)
    return notes


def read_uploaded_scenario(name: str, raw: bytes) -> tuple[dict[str, Any], Any]:
    """An uploaded scenario file read exactly as ``planner recommend FILE`` reads it
    (:func:`planner.scenario.load_scenario`: size and encoding checks, duplicate keys,
    validation); returns the raw mapping and the :class:`~planner.scenario.Scenario`.
    Errors are the CLI's one-line :class:`PlannerError`, naming the file."""
    import tempfile

    from planner.errors import read_text
    from planner.files import load_yaml
    from planner.scenario import scenario_from_dict

    fname = Path(name).name or "scenario.yaml"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / fname
        p.write_bytes(raw)
        try:
            data = load_yaml(read_text(p, "scenario file", "scenario file"), p)
            if data is None:
                raise PlannerError(f"{p}: empty scenario file")
            sc = scenario_from_dict(data, where=fname)
        except PlannerError as e:
            raise PlannerError(str(e).replace(f"{d}/", "")) from None
    return data, sc


def accept_scenario_upload(name: str, raw: bytes, cat: Catalog) -> str | None:
    """Read an uploaded scenario (the CLI's loader), keep it as the form's base and fill the
    widgets from it; returns the error message, or None."""
    import json

    try:
        data, sc = read_uploaded_scenario(name, raw)
        vals, notes = _form_values(sc, data, cat)
        text = json.dumps(data)
    except PlannerError as e:
        return str(e)
    except (TypeError, ValueError, OverflowError) as e:  # a YAML timestamp or set: not JSON
        return f"{name}: cannot use this scenario: {e}"
    _set_form(vals)
    st.session_state[_BASE] = {
        "name": Path(name).name,
        "json": text,
        "applied": vals,
        "notes": notes,
        "classes": [k.name for k in sc.classes] if sc.classes else [],
    }
    st.session_state.pop(_UPLOAD_ERROR, None)
    return None


def loaded_base() -> dict[str, Any] | None:
    """The uploaded scenario the form starts from (None: the form's defaults)."""
    return st.session_state.get(_BASE)


def forget_scenario() -> None:
    st.session_state.pop(_BASE, None)
    st.session_state.pop(_UPLOAD_ERROR, None)


#: URL query parameters that carry a loaded scenario file in a shared link: its name and its
#: text (:func:`encode_scenario`); the widgets' own parameters carry the changes made to it
SHARED_FILE, SHARED_NAME = "scenario", "scenario_name"
#: session_state key: the link's scenario was read (once a session)
SHARED_READ = "_scenario_link_read"
#: the most bytes a link's scenario may expand to (the scenario file limit of the CLI is
#: larger; a link is not the place for a trace)
SHARED_MAX_BYTES = 64_000


def encode_scenario(text: str) -> str:
    """A scenario's text for a URL: zlib-compressed, URL-safe base64 without padding."""
    import base64
    import zlib

    return base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode().rstrip("=")


def decode_scenario(blob: str) -> bytes:
    """The text of :func:`encode_scenario`; a damaged or oversized parameter is a one-line
    :class:`PlannerError` (never more than :data:`SHARED_MAX_BYTES` decompressed)."""
    import base64
    import zlib

    try:
        raw = base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))
        z = zlib.decompressobj()
        out = z.decompress(raw, SHARED_MAX_BYTES + 1)
    except (ValueError, zlib.error) as e:  # binascii.Error is a ValueError
        raise PlannerError(f"the link's '{SHARED_FILE}' parameter cannot be read: {e}") from None
    if len(out) > SHARED_MAX_BYTES or z.unconsumed_tail:
        raise PlannerError(
            f"the link's '{SHARED_FILE}' parameter expands past {SHARED_MAX_BYTES:,} bytes"
        )
    if not z.eof:
        raise PlannerError(f"the link's '{SHARED_FILE}' parameter is cut short")
    return out


def share_loaded_scenario() -> None:
    """Keep the loaded file (or its absence) in the URL, so a copied link carries it."""
    base = loaded_base()
    if base is None:
        for k in (SHARED_FILE, SHARED_NAME):
            if k in st.query_params:
                del st.query_params[k]
        return
    blob = encode_scenario(base["json"])
    if st.query_params.get(SHARED_FILE) != blob:
        st.query_params[SHARED_FILE] = blob
    if st.query_params.get(SHARED_NAME) != base["name"]:
        st.query_params[SHARED_NAME] = base["name"]


def scenario_from_link() -> tuple[str, bytes] | None:
    """The scenario file a shared link carries, ``(name, bytes)``, read once a session and
    only when no file is loaded yet; None otherwise. A damaged parameter becomes the upload
    error (shown where the answer would be)."""
    if st.session_state.get(SHARED_READ):
        return None
    st.session_state[SHARED_READ] = True
    if SHARED_FILE not in st.query_params or loaded_base() is not None:
        return None
    name = Path(st.query_params.get(SHARED_NAME) or "shared-scenario.yaml").name
    try:
        return name, decode_scenario(st.query_params[SHARED_FILE])
    except PlannerError as e:
        st.session_state[_UPLOAD_ERROR] = f"{name}: {e}"
        return None


# form keys -> the scenario's constraint keys they set
_CONSTRAINT_WIDGETS = (
    (("basis",), "price_basis"),
    (("provider",), "providers"),
    (("gpus", "all_gpus"), "gpus"),
    (("frameworks",), "frameworks"),
    (("precisions",), "precisions"),
    (("max_gpus",), "max_total_gpus"),
    (("budget",), "max_usd_per_month"),
    (("headroom",), "headroom"),
)


def form_changed(base: dict[str, Any], *keys: str) -> bool:
    """Whether any of the form's widgets ``keys`` differs from what the loaded file set."""
    cur, applied = _stash(), base["applied"]
    return any(k in cur and cur[k] != applied.get(k) for k in keys)


def _merged(base: dict[str, Any], form: dict[str, Any], search: bool) -> dict[str, Any]:
    """The loaded file with the sections whose widgets were changed taken from the form: an
    unchanged form is the file exactly as the CLI reads it (serving, TP sizes, price
    overrides, fit percentile, request classes, ... included)."""
    import json

    d = json.loads(base["json"])

    def changed(*keys: str) -> bool:
        return form_changed(base, *keys)

    if changed("model"):
        d["model"] = form["model"]
    if not base.get("classes"):
        wl = dict(d.get("workload") or {})
        fwl = form["workload"]
        if changed("peak_rps", "mean_rps", "daily"):
            tr = {**(wl.get("traffic") or {}), **fwl["traffic"]}
            if "daily_profile" not in fwl["traffic"]:
                tr.pop("daily_profile", None)
            wl["traffic"] = tr
        if changed("preset", "in_mean", "in_p90", "out_mean", "out_p90", "max_out"):
            for k in ("preset", "input_tokens", "output_tokens", "max_output_tokens"):
                wl.pop(k, None)
            wl.update({k: v for k, v in fwl.items() if k != "traffic"})
        d["workload"] = wl
        if changed("ttft", "tpot_ms", "e2e", "attainment"):
            keep = {
                k: v
                for k, v in (d.get("slo") or {}).items()
                if k not in ("ttft", "tpot", "e2e", "attainment")
            }
            d["slo"] = {**keep, **form["slo"]}
    c, fc = dict(d.get("constraints") or {}), form["constraints"]
    for keys, ck in _CONSTRAINT_WIDGETS:
        if (search or ck == "headroom" or ck in fc) and changed(*keys):
            if ck in fc:
                c[ck] = fc[ck]
            else:
                c.pop(ck, None)
    d["constraints"] = c
    return d
