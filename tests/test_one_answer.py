"""One answer per deployment (issue 32): ``planner recommend``, ``planner capacity``,
``planner simulate`` and the app's What-if page give the same replicas, max rate per replica,
P99 TTFT / TPOT at that rate (and at the planned rate) and print the same engine knobs.

Two deployments of the issue's examples (70B chat, peak 10 req/s, TTFT P99 <= 1 s, TPOT P99
<= 50 ms, headroom 0.2): H100 vLLM fp8 TP2 (the What-if said 48 GPUs where capacity said 36)
and H200 TensorRT-LLM bf16 TP2 with max_num_seqs 64 (52 vs 32). Every path goes through
:func:`planner.serving.answer.answer_for_deployment` (recommend through
:func:`~planner.serving.answer.answer_from_probe` on its search's probe), so the numbers must
be equal, not merely close; the issue's bar (max rate within 2 %) is asserted on top.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from planner.cli.main import main as cli_main
from planner.serving.answer import (
    CURVE_NOISE_REL,
    REL_TOL,
    curve_noise,
    engine_knobs,
)

SCENARIO = """\
name: one-answer-{name}
model: llama-3.1-70b
workload:
  preset: chat
  traffic: {{mean_rps: 10, peak_rps: 10}}
slo:
  ttft: {{max_s: 1.0, percentile: p99}}
  tpot: {{max_s: 0.05, percentile: p99}}
  attainment: 0.99
constraints:
  headroom: 0.2
  gpus: [{gpu}]
  frameworks: [{fw}]
  precisions: [{prec}]
  kv_precisions: [{kv}]
  tps: [2]
serving:
  context_len: 8192
{serving}deployment: {{gpu: {gpu}, framework: {fw}, precision: {prec}, tp: 2}}
"""
DEPLOYMENTS = {
    "h100-vllm-fp8": dict(gpu="nvidia-h100-sxm", fw="vllm", prec="fp8", kv="fp8", serving=""),
    "h200-trtllm-bf16-64": dict(
        gpu="nvidia-h200-sxm",
        fw="tensorrt-llm",
        prec="bf16",
        kv="bf16",
        serving="  max_num_seqs: 64\n",
    ),
}
KNOBS = (
    "max_num_seqs",
    "max_num_batched_tokens",
    "gpu_memory_utilization",
    "kv_cache_dtype",
    "prefill_chunk_tokens",
    "max_model_len",
)
AT = ("ttft_p99_at_max_rate_s", "tpot_p99_at_max_rate_s", "ttft_p99_at_planned_s")
AT = (*AT, "tpot_p99_at_planned_s")


def _file(tmp_path: Path, name: str) -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text(SCENARIO.format(name=name, **DEPLOYMENTS[name]), encoding="utf-8")
    return p


def _cli(*argv: str) -> dict:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli_main([*argv, "--format", "json"])
    assert rc == 0, argv
    return json.loads(buf.getvalue())


def _paths(path: Path) -> dict[str, dict]:
    """The JSON of capacity, simulate (its default fleet) and recommend (the winner: the one
    option the scenario's constraints allow), with recommend's planned-rate P99s under the
    names the others use."""
    cap = _cli("capacity", str(path), "--no-curve")
    sim = _cli("simulate", str(path))
    (rec,) = _cli("recommend", str(path), "--top", "1")["recommendations"]
    assert rec["ttft_p99_s"] == rec["ttft_p99_at_planned_s"]
    assert rec["tpot_p99_s"] == rec["tpot_p99_at_planned_s"]
    return {"capacity": cap, "simulate": sim, "recommend": rec}


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_capacity_simulate_and_recommend_give_one_answer(tmp_path, name):
    got = _paths(_file(tmp_path, name))
    cap = got["capacity"]
    # the fleet meets the need: replicas x max rate >= peak x (1 + headroom) = 10 x 1.2 = 12
    assert cap["replicas"] * cap["max_rate_per_replica"] >= 12.0 - 1e-9
    # the planned rate is need / replicas, and the max rate is at least that
    assert cap["planned_rate_per_replica"] == pytest.approx(12.0 / cap["replicas"], rel=1e-12)
    assert cap["max_rate_per_replica"] >= cap["planned_rate_per_replica"]
    # both P99s at the max rate meet the SLO (TTFT <= 1 s, TPOT <= 50 ms)
    assert cap["ttft_p99_at_max_rate_s"] <= 1.0 and cap["tpot_p99_at_max_rate_s"] <= 0.05
    for path, d in got.items():
        # the bar: the same max rate within 2 % (here: the same bisection, exactly)
        assert d["max_rate_per_replica"] == pytest.approx(cap["max_rate_per_replica"], rel=REL_TOL)
        assert d["max_rate_per_replica"] == cap["max_rate_per_replica"], path
        assert (d["replicas"], d["num_gpus"]) == (cap["replicas"], cap["num_gpus"]), path
        for k in AT:
            assert d[k] == cap[k], (path, k)
        for k in KNOBS:
            assert d[k] == cap[k], (path, k)
    # simulate's own run splits the peak over the answer's replicas: 10 / k req/s each
    assert got["simulate"]["rate_rps"] == pytest.approx(10.0 / cap["replicas"], rel=1e-12)


def test_the_knobs_are_the_deployments_own(tmp_path):
    """The printed knobs are the scenario's and the engine's: max_num_seqs 64 as the scenario
    sets it, the context 8192 as ``serving.context_len`` sets it, KV bf16 for a bf16
    checkpoint, the chunk = the token budget (chunked prefill on)."""
    d = _paths(_file(tmp_path, "h200-trtllm-bf16-64"))["capacity"]
    assert d["max_num_seqs"] == 64 and d["max_model_len"] == 8192
    assert d["kv_cache_dtype"] == "bf16"
    assert d["prefill_chunk_tokens"] == d["max_num_batched_tokens"]
    assert 0 < d["gpu_memory_utilization"] <= 1


# --------------------------------------------------------------------------- What-if
def _what_if(path: Path, monkeypatch) -> tuple[dict[str, str], str]:
    """The What-if page's cards and the text of its outputs for the scenario file ``path``
    (uploaded on Plan, then What-if opened with the file's deployment as its knobs)."""
    pytest.importorskip("streamlit.testing.v1")
    from streamlit.testing.v1 import AppTest

    from app_pages import widgets as w

    monkeypatch.chdir(path.parent)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=600)
    at.session_state[w.UPLOAD] = (path.name, path.read_bytes())
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("app_pages/what_if.py").run()
    assert not at.exception, [e.value for e in at.exception]
    cards: dict[str, str] = {}
    text = ""
    for h in at.get("html"):
        if h.proto.body.startswith('<div class="pl-chart">'):
            body = w.svg_of(h.proto.body)
            cards.update(w.cards_of(body))
            text += " " + html.unescape(re.sub(r"<[^>]+>", "", body))
    return cards, re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_what_if_gives_the_answer_of_the_three_commands(tmp_path, name, monkeypatch):
    path = _file(tmp_path, name)
    cap = _cli("capacity", str(path), "--no-curve")
    cards, text = _what_if(path, monkeypatch)
    assert cards["GPUs needed"] == f"{cap['num_gpus']:,.0f}"
    # the page's P99s are at the planned rate (need / replicas), as recommend's are
    assert cards["TTFT P99 [ms]"] == f"{cap['ttft_p99_at_planned_s'] * 1e3:,.0f}"
    assert cards["TPOT P99 [ms]"] == f"{cap['tpot_p99_at_planned_s'] * 1e3:,.1f}"
    assert cards["Output tok/s per GPU"] == f"{cap['output_tok_s_per_gpu']:,.0f}"
    # the max rate and the P99s at it, and the knobs, in the latency note
    assert (
        f"Max rate per replica within the SLO: {cap['max_rate_per_replica']:.3g} req/s "
        f"(TTFT P99 {cap['ttft_p99_at_max_rate_s'] * 1e3:,.0f} ms, TPOT P99 "
        f"{cap['tpot_p99_at_max_rate_s'] * 1e3:,.1f} ms there)"
    ) in text
    chunk = cap["prefill_chunk_tokens"]
    assert (
        f"Engine: max_num_seqs {cap['max_num_seqs']:,}, max_num_batched_tokens "
        f"{cap['max_num_batched_tokens']:,}, gpu_memory_utilization "
        f"{cap['gpu_memory_utilization']:g}, KV {cap['kv_cache_dtype']}, prefill chunk "
        f"{chunk:,}, max_model_len {cap['max_model_len']:,}"
    ) in text


# --------------------------------------------------------------------------- the curve
def _row(c: int, ttft_ms: float) -> dict:
    return {"concurrency": c, "ttft_p99_s": ttft_ms / 1e3}


def test_curve_noise_names_each_fall_below_the_running_maximum():
    # the zigzag: 130 -> 550 -> 120 ms; 120 is 78 % below 550 (> 5 %): noisy
    msg = curve_noise([_row(1, 130), _row(2, 550), _row(4, 120)], "ttft_p99_s")
    assert "550 ms at 2 clients to 120 ms at 4" in msg and msg.startswith("TTFT P99 is noisy")
    # a fall of 4 % (100 -> 96) is within CURVE_NOISE_REL = 5 %: not called noisy
    assert CURVE_NOISE_REL == 0.05
    assert curve_noise([_row(1, 100), _row(2, 96), _row(4, 130)], "ttft_p99_s") == ""
    # a fall of 6 % is (100 -> 94), and the order of the rows does not matter
    assert curve_noise([_row(4, 94), _row(1, 100)], "ttft_p99_s") != ""
    # a monotone curve is not
    assert curve_noise([_row(c, 100 + c) for c in (1, 2, 4, 8)], "ttft_p99_s") == ""


def test_more_requests_a_point_shrink_the_zigzag_and_the_rest_is_named():
    """The H100 vLLM fp8 TP2 curve on 150 requests a point (the issue's zigzag) has a TTFT
    P99 that falls steeply with more clients (747 ms at 32 clients to 404 ms at 128 when
    measured); on 2,000 a point (``CURVE_REQUESTS``, what capacity and What-if draw) the
    largest fall is smaller (337 to 313 ms, 7 %), and the page names any fall over 5 %."""
    import tempfile

    from planner.catalog import load_catalog, model_family, resolve_params
    from planner.scenario import load_scenario
    from planner.serving import throughput_latency_curve
    from planner.serving.answer import CURVE_REQUESTS

    with tempfile.TemporaryDirectory() as d:
        sc = load_scenario(str(_file(Path(d), "h100-vllm-fp8")))
    cat = load_catalog()
    params, prov = resolve_params(
        "nvidia-h100-sxm", "vllm", "fp8", catalog=cat, family=model_family(cat.model(sc.model))
    )
    rep = sc.build_replica(
        "nvidia-h100-sxm", "vllm", "fp8", 2, 1, None, params=params, params_source=prov, catalog=cat
    )
    assert engine_knobs(rep).max_model_len == 8192
    old = throughput_latency_curve(
        rep, sc.workload, slo=sc.slo, rng=np.random.default_rng(0), min_requests=150
    )
    new = throughput_latency_curve(
        rep, sc.workload, slo=sc.slo, rng=np.random.default_rng(0), **CURVE_REQUESTS
    )
    assert curve_noise(old, "ttft_p99_s") != ""  # 150 requests a point: it zigzags

    def falls(rows: list[dict]) -> float:
        """The largest relative fall of TTFT P99 below its running maximum."""
        top, worst = -math.inf, 0.0
        for r in sorted(rows, key=lambda r: r["concurrency"]):
            worst = max(worst, 1 - r["ttft_p99_s"] / top) if top > 0 else worst
            top = max(top, r["ttft_p99_s"])
        return worst

    assert falls(new) < falls(old)
    # what the page says follows what the curve shows
    assert (curve_noise(new, "ttft_p99_s") == "") == (falls(new) <= CURVE_NOISE_REL)
