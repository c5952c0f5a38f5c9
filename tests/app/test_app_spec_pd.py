"""Issue 30 on the pages: What-if's acceptance-length (speculative decoding) and P:D knobs,
and the Plan page's disaggregated pools. Numbers on the page equal ``planner``'s, computed
here through the same functions the CLI uses."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

from app_pages import widgets as w  # noqa: E402
from planner import load_catalog  # noqa: E402
from planner.errors import PlannerError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 120
WHAT_IF = "app_pages/what_if.py"
SMALL = {"gpus": ["nvidia-h100-sxm", "nvidia-l40s"], "frameworks": ["vllm"], "precisions": ["fp8"]}


def _app(page: str | None, state: dict | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    for k, v in (state or {}).items():
        at.session_state[k] = v
    if page:
        at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _text(at: AppTest) -> str:
    """The text of the page's HTML blocks (tags dropped, entities unescaped)."""
    out = []
    for h in at.get("html"):
        body = (
            w.svg_of(h.proto.body)
            if h.proto.body.startswith('<div class="pl-chart">')
            else h.proto.body
        )
        out.append(html.unescape(re.sub(r"<[^>]+>", "", body)))
    return re.sub(r"\s+", " ", " ".join(out))


def _cards(at: AppTest) -> dict[str, str]:
    out: dict[str, str] = {}
    for h in at.get("html"):
        if h.proto.body.startswith('<div class="pl-chart">'):
            out.update(w.cards_of(w.svg_of(h.proto.body)))
    return out


def _replica_8b(**spec):
    """What-if's default deployment for llama-3.1-8b (H100, vLLM, fp8, TP2, KV fp8, 1,024
    sequences, 8,192 context) with ``spec`` (build_replica's speculative arguments)."""
    from planner.catalog import model_family
    from planner.catalog.release_profile import resolve_release_params
    from planner.serving import build_replica

    cat = load_catalog()
    # the newest vLLM release with a fit on Hopper at fp8, as the page and the CLI take it
    params, prov, _ = resolve_release_params(
        "nvidia-h100-sxm",
        "vllm",
        "fp8",
        None,
        catalog=cat,
        family=model_family(cat.model("llama-3.1-8b")),
    )
    return build_replica(
        "llama-3.1-8b", "nvidia-h100-sxm", "fp8", "vllm", tp=2, kv_precision="fp8",
        params=params, params_source=prov, catalog=cat, max_num_seqs=1024, context_len=8192,
        **spec,
    )  # fmt: skip


def _workload():
    from planner.workload import SLO, Workload

    wl = Workload.model_validate({"preset": "chat", "traffic": {"mean_rps": 10, "peak_rps": 10}})
    slo = SLO.model_validate(
        {
            "ttft": {"max_s": 1.0, "percentile": "p99"},
            "tpot": {"max_s": 0.05, "percentile": "p99"},
            "attainment": 0.99,
        }
    )
    return wl, slo


# --------------------------------------------------------------------------- AL knob
def test_what_if_acceptance_length_knob_bounds_default_and_answer():
    from planner.catalog.speculative import spec_decode
    from planner.serving.answer import answer_for_deployment

    at = _app(WHAT_IF, model="llama-3.1-8b")
    (sb,) = [s for s in at.selectbox if s.key == "wi_spec_vllm"]
    # vLLM runs EAGLE-3 for llama-3.1-8b with a published K = 7 (data/speculative.yaml)
    assert sb.value == "off" and "EAGLE-3 k=7 (published)" in sb.options
    sb.select("EAGLE-3 k=7 (published)").run()
    assert not at.exception, [e.value for e in at.exception]
    (al,) = [n for n in at.number_input if n.key == "wi_al_vllm_eagle3_7"]
    cat = load_catalog()
    pub = spec_decode(cat.model("llama-3.1-8b"), "eagle3", 7, framework=cat.framework("vllm"))
    # the acceptance length is bounded to [1, K + 1] = [1, 8] and starts at the published mean
    assert (al.proto.min, al.proto.max) == (1.0, 8.0)
    assert al.value == pytest.approx(round(pub.acceptance_length, 2))
    # the page's fleet is the deployment's answer with that speculative setting
    wl, slo = _workload()
    spec = {"spec_method": "eagle3", "spec_tokens": 7, "acceptance_length": al.value}
    ans = answer_for_deployment(_replica_8b(**spec), wl, slo, headroom=0.2, fit_percentile=None)
    cards = _cards(at)
    assert cards["GPUs needed"] == f"{ans.num_gpus:,.0f}"
    assert cards["TPOT P99 [ms]"] == f"{ans.at_planned['tpot_p99_s'] * 1e3:,.1f}"
    (cmd,) = [m.value for m in at.markdown if "planner capacity" in m.value]
    assert f"--spec-method eagle3 --spec-tokens 7 --acceptance-length {al.value:g}" in cmd
    # AL 1 (every draft token rejected) pays the K + 1 verify width and gains nothing: the
    # max rate per replica is no higher than with the published AL
    al.set_value(1.0).run()
    assert not at.exception, [e.value for e in at.exception]
    slow = answer_for_deployment(
        _replica_8b(spec_method="eagle3", spec_tokens=7, acceptance_length=1.0),
        wl, slo, headroom=0.2, fit_percentile=None,
    )  # fmt: skip
    assert slow.max_rate_rps <= ans.max_rate_rps
    assert _cards(at)["GPUs needed"] == f"{slow.num_gpus:,.0f}"


def test_an_acceptance_length_outside_1_to_k_plus_1_is_a_one_line_error():
    from planner.catalog.speculative import spec_decode

    cat = load_catalog()
    m, fw = cat.model("llama-3.1-8b"), cat.framework("vllm")
    for bad in (0.5, 8.5):  # K = 7: AL must lie in [1, 8]
        with pytest.raises(PlannerError, match=r"acceptance_length must be in \[1, K \+ 1\]"):
            spec_decode(m, "eagle3", 7, bad, framework=fw)


# --------------------------------------------------------------------------- P:D knob
def test_what_if_pd_knob_shows_the_pools_of_the_disaggregated_answer():
    from planner.serving.answer import disagg_answer
    from planner.serving.disagg import Disaggregated, Pool, build_disagg

    at = _app(WHAT_IF, model="llama-3.1-8b")
    assert "Disaggregated prefill/decode" not in _text(at)  # aggregated by default
    at.select_slider(key="wi_pd").set_value("1:2").run()
    assert not at.exception, [e.value for e in at.exception]
    cat = load_catalog()
    p = Pool(gpu="nvidia-h100-sxm", framework="vllm", precision="fp8", tp=2, kv_precision="fp8",
             max_num_seqs=1024)  # fmt: skip
    d = build_disagg(
        "llama-3.1-8b", Disaggregated(prefill=p, decode=p), catalog=cat, context_len=8192
    )
    wl, slo = _workload()
    a = disagg_answer(d, wl, slo, 10 * 1.2, (1, 2))
    text = _text(at)
    assert "disagg 1P(TP2)+2D(TP2)" in text
    assert f"{a.groups:,} group(s), {a.num_gpus:,} GPUs" in text
    # each pool: its replicas over the whole fleet (1 and 2 per group), GPU and layout
    assert f"Prefill pool: {a.groups:,} x nvidia-h100-sxm TP2" in text
    assert f"Decode pool: {2 * a.groups:,} x nvidia-h100-sxm TP2" in text
    assert f"KV transfer: {a.transfer_s * 1e3:,.1f} ms" in text
    # GPUs: groups x (1 + 2) replicas x 2 GPUs each
    assert a.num_gpus == a.groups * 3 * 2
    # auto: the sizing's own ratio, said on the page
    assert f"fewest GPUs is {a.balanced[0]}:{a.balanced[1]}" in text


def test_a_pd_ratio_outside_1_to_64_is_a_one_line_error():
    from planner.serving.answer import disagg_answer
    from planner.serving.disagg import Disaggregated, Pool, build_disagg

    p = Pool(gpu="nvidia-h100-sxm", framework="vllm", precision="fp8", tp=2)
    d = build_disagg("llama-3.1-8b", Disaggregated(prefill=p, decode=p), catalog=load_catalog())
    wl, slo = _workload()
    with pytest.raises(PlannerError, match=r"prefill replicas \(P of P:D\) must be a whole"):
        disagg_answer(d, wl, slo, 12.0, (0, 1))
    with pytest.raises(PlannerError, match=r"decode replicas \(D of P:D\) must be a whole"):
        disagg_answer(d, wl, slo, 12.0, (1, 65))


# --------------------------------------------------------------------------- Plan
def test_plan_shows_the_xpyd_pools_of_recommends_comparison():
    from planner.recommend import recommend
    from planner.recommend.disagg import compare_disagg

    at = _app(None, state=dict(SMALL), model="llama-3.1-8b")
    (exp,) = [e for e in at.expander if e.label.startswith("Disaggregated prefill/decode")]
    assert "Prefill pool" not in _text(at)  # sized only once opened
    at.session_state["xpyd_open"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    cat = load_catalog()
    wl, slo = _workload()
    res = recommend(
        "llama-3.1-8b", wl, slo, catalog=cat, headroom=0.2, gpus=tuple(SMALL["gpus"]),
        frameworks=("vllm",), precisions=("fp8",),
    )  # fmt: skip
    rows = compare_disagg("llama-3.1-8b", wl, slo, res.recommendations, 12.0, catalog=cat)
    text = _text(at)
    alerts = " ".join(x.value for x in [*at.success, *at.info])
    assert rows
    for r in rows:
        assert f"{r['gpu']}: aggregated {r['aggregated']} ({r['aggregated_gpus']} GPUs)" in alerts
        assert ("disaggregated pays" if r["pays"] else "disaggregated does not pay") in alerts
        if "option" in r:
            assert f"{r['option']}: {r['groups']:,} group(s), {r['num_gpus']:,} GPUs" in text
            pre, dec = r["prefill"], r["decode"]
            assert f"Prefill pool: {pre['count']:,} x {pre['gpu']}" in text
            assert f"Decode pool: {dec['count']:,} x {dec['gpu']}" in text
            assert f"KV transfer: {r['transfer_s'] * 1e3:,.1f} ms" in text
