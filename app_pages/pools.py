"""Speculative decoding and disaggregated prefill/decode on the pages (issue 30): What-if's
acceptance-length and P:D knobs, and the xPyD pools as the Plan and What-if pages show them.

Every number comes from ``planner`` (:func:`planner.catalog.speculative.spec_decode`'s
published acceptance lengths, :func:`planner.serving.answer.disagg_answer`,
:func:`planner.recommend.disagg.compare_disagg`); this module draws widgets and HTML only.
"""

from __future__ import annotations

import html
from typing import Any

import streamlit as st

from app_pages import widgets as w

#: What-if's P:D choices: "auto" (the sizing's ratio, the fewest GPUs) and x:y ratios
PD_RATIOS = ["auto", "4:1", "3:1", "2:1", "3:2", "1:1", "2:3", "1:2", "1:3", "1:4", "1:6", "1:8"]
AGGREGATED = "aggregated"
METHOD_NAMES = {"mtp": "MTP", "eagle3": "EAGLE-3", "ngram": "n-gram", "draft": "draft model"}


def spec_choices(cat: Any, model: Any, framework: str) -> dict[str, tuple[str, int, Any]]:
    """label -> (method, K, the published :class:`SpecDecode` or None) of the speculative
    settings What-if offers: every published method x K that ``framework`` runs for
    ``model`` (acceptance length from data/speculative.yaml), then each other method the
    engine runs (no draft model here) with K = 3 and the acceptance length left to the user."""
    from planner.catalog.speculative import engine_support, published_specs

    out: dict[str, tuple[str, int, Any]] = {}
    fw = cat.framework(framework)
    for s in published_specs(model, fw):
        out[f"{METHOD_NAMES[s.method]} k={s.spec_tokens} (published)"] = (
            s.method,
            s.spec_tokens,
            s,
        )
    for m in engine_support().get(framework, ()):
        if m == "draft" or (m == "mtp" and not model.num_nextn_predict_layers):
            continue
        if not any(v[0] == m for v in out.values()):
            out[f"{METHOD_NAMES[m]} (your acceptance length)"] = (m, 3, None)
    return out


def spec_knobs(
    row: Any, cat: Any, model: Any, framework: str
) -> tuple[str | None, int | None, float | None]:
    """The speculative decoding knobs in the container ``row``: method x K, K, and the
    acceptance length AL [tokens per verify step] bounded to [1, K + 1] (the published mean
    by default; empty, to be given, where no source publishes one). (None, None, None): off."""
    choices = spec_choices(cat, model, framework)
    labels = ["off", *choices]
    key = f"wi_spec_{framework}"
    pick = row.selectbox(
        "Speculative decoding", labels, key=key,
        help="published method x K for this model and engine (data/speculative.yaml); "
        "the acceptance length is the mean tokens each verify step gives",
        **w._default(key, opts=labels, index=0),
    )  # fmt: skip
    if pick == "off":
        return None, None, None
    method, k, pub = choices[pick]
    if pub is None:
        k = int(row.select_slider("Draft tokens per step (K)", [1, 2, 3, 4, 5, 6, 7, 8], value=3,
                                  key=f"wi_k_{framework}_{method}"))  # fmt: skip
    al_key = f"wi_al_{framework}_{method}_{k}"
    al = row.number_input(
        "Acceptance length [tokens/step]", min_value=1.0, max_value=float(k + 1),
        step=0.05, format="%.2f", key=al_key,
        help=(f"1 to K + 1 = {k + 1}; published {pub.label()} ({pub.basis})" if pub is not None
              else f"1 to K + 1 = {k + 1}; no source publishes one for {model.id} with this "
              "method: give yours"),
        **w._default(al_key, value=round(pub.acceptance_length, 2) if pub is not None else None),
    )  # fmt: skip
    return method, int(k), (None if al is None else float(al))


def pd_knob(row: Any) -> str:
    """The prefill:decode knob: ``aggregated``, ``auto`` or ``x:y``."""
    mode = row.select_slider(
        "Prefill : decode (P:D)", [AGGREGATED, *PD_RATIOS], key="wi_pd",
        help="aggregated: one pool; else disaggregated prefill and decode pools of this "
        "deployment, x prefill to y decode replicas a group (auto: the ratio needing the "
        "fewest GPUs), the KV cache sent between them",
        **w._default("wi_pd", value=AGGREGATED),
    )  # fmt: skip
    return str(mode)


def ratio_of(mode: str) -> tuple[int, int] | None:
    """(x, y) of a P:D choice; None for ``auto``."""
    if mode in ("auto", AGGREGATED):
        return None
    x, y = mode.split(":")
    return int(x), int(y)


def pools_html(r: dict[str, Any]) -> str:
    """An xPyD deployment's pools as HTML: the groups, each pool's replicas (sub-deployment,
    count, GPUs), the KV transfer and the verdict. ``r``: a row of
    :func:`planner.recommend.disagg.compare_disagg` or :func:`disagg_row`."""
    pre, dec = r["prefill"], r["decode"]

    def pool(name: str, p: dict[str, Any], rps: float | None) -> str:
        lay = f"TP{p.get('tp', 1)}" + (f" EP{p['ep']}" if p.get("ep", 1) > 1 else "")
        if p.get("attention_dp", 1) > 1:
            lay = f"DEP{p['attention_dp']}"
        rate = f", {rps:.3g} req/s per replica" if rps else ""
        return (
            f"<li><b>{name}</b>: {p['count']:,} x {html.escape(p['gpu'])} {lay} "
            f"({html.escape(str(p.get('framework') or '-'))}, {html.escape(p.get('precision', ''))}"
            f"{rate})</li>"
        )

    xfer = r.get("transfer_s")
    link = f" over {html.escape(r['link_kind'])}" if r.get("link_kind") else ""
    ok = r.get("check_slo_ok")
    return (
        f'<div class="pl-pools"><p><b>{html.escape(r.get("option", ""))}</b>: '
        f"{r.get('groups', 0):,} group(s), {r.get('num_gpus', 0):,} GPUs</p><ul>"
        + pool("Prefill pool", pre, r.get("prefill_rps_per_replica"))
        + pool("Decode pool", dec, r.get("decode_rps_per_replica"))
        + (
            f"<li><b>KV transfer</b>: {xfer * 1e3:,.1f} ms for the TTFT percentile's prompt{link}</li>"
            if xfer is not None
            else ""
        )
        + (
            f"<li><b>One group simulated</b>: {'meets' if ok else 'misses'} the SLO</li>"
            if ok is not None
            else ""
        )
        + "</ul></div>"
    )


def disagg_row(a: Any, pool: dict[str, Any]) -> dict[str, Any]:
    """A :class:`planner.serving.answer.DisaggAnswer` as a row :func:`pools_html` draws;
    ``pool``: the sub-deployment (gpu, framework, precision, tp) of both pools."""
    c = a.pools()
    return {
        "option": a.label,
        "groups": a.groups,
        "num_gpus": a.num_gpus,
        "prefill": {**pool, "count": c["prefill_count"]},
        "decode": {**pool, "count": c["decode_count"]},
        "prefill_rps_per_replica": a.prefill_rps,
        "decode_rps_per_replica": a.decode_rps,
        "transfer_s": a.transfer_s,
        "link_kind": a.link_kind,
        "check_slo_ok": a.check.get("slo_ok"),
    }


@st.cache_data(show_spinner=False, max_entries=64)
def run_disagg(key: tuple, scenario_json: str, recs_json: str) -> list[dict[str, Any]]:
    """:func:`planner.recommend.disagg.compare_disagg` of the Plan page's recommendations
    (JSON), as ``planner recommend`` (``--disagg auto``) runs it: [{"error"}] on a failure."""
    import json

    from planner.errors import PlannerError
    from planner.recommend.disagg import compare_disagg

    cat = w.catalog_for(key)
    sc = w.build_scenario(key, scenario_json)
    need = sc.workload.traffic.peak() * (1 + sc.constraints.headroom)
    try:
        return compare_disagg(
            sc.model, sc.workload, sc.slo, json.loads(recs_json), need, catalog=cat,
            engine=sc.serving.kwargs(),
        )  # fmt: skip
    except PlannerError as e:
        return [{"error": str(e)}]


def plan_pools(key: tuple, scenario_json: str, recs: list[dict[str, Any]]) -> None:
    """The Plan page's xPyD section: aggregated vs disaggregated for the top options' GPUs
    (``planner recommend``'s ``--disagg auto`` comparison, a few dozen short simulations per
    GPU), each xPyD answer's pools (prefill and decode sub-deployments with their counts,
    the KV transfer) drawn; whether it pays (fewer GPUs: the cheaper deployment) and why."""
    import json

    if not recs:
        return
    st.caption(
        "The same GPUs, framework and precision in a prefill pool and a decode pool, the KV "
        "cache sent between them (planner recommend --disagg only)."
    )
    keep = [{k: v for k, v in r.items() if not isinstance(v, float) or v == v} for r in recs]
    rows = run_disagg(key, scenario_json, json.dumps(keep, default=str))
    for r in rows:
        if "error" in r:
            st.error(w.md(f"Cannot size the disaggregated deployment: {r['error']}"))
            continue
        head = f"{r['gpu']}: aggregated {r['aggregated']} ({r['aggregated_gpus']} GPUs)"
        if r.get("pays"):
            st.success(w.md(f"{head}; disaggregated pays: " + "; ".join(r["why"])))
            w.html_block(pools_html(r))
        else:
            st.info(w.md(f"{head}; disaggregated does not pay: " + "; ".join(r["why"])))
            if "option" in r:
                w.html_block(pools_html(r))
