"""What-if's cached evaluation (:func:`app_pages.what_if_eval.evaluate`) returns the numbers
of uncached calls: its curve and its answer equal ``planner``'s (``throughput_latency_curve``
and ``answer_for_deployment`` with the same seeds, as ``planner capacity`` calls them), on
the first call and on the cache hit after it."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("streamlit")

from app_pages import pools  # noqa: E402
from app_pages.runs import default_scenario_json  # noqa: E402
from app_pages.what_if_eval import Knobs, evaluate  # noqa: E402
from planner import PlannerError, load_catalog  # noqa: E402

NO_CUSTOM = ((), (), ())  # widgets.custom_key() of a session without custom entries


def _scenario_json(model: str) -> str:
    d = json.loads(default_scenario_json())
    d["model"] = model
    return json.dumps(d, sort_keys=True)


def _uncached(sj: str, k) -> tuple[list[dict], dict | str]:
    """The curve and the answer's fields (or the answer's error) of the knobs ``k``, through
    planner one after the other: the calls ``planner capacity`` makes."""
    from planner.catalog import model_family
    from planner.catalog.release_profile import resolve_release_params
    from planner.scenario import scenario_from_dict
    from planner.serving import throughput_latency_curve
    from planner.serving.answer import CURVE_REQUESTS, answer_for_deployment

    cat = load_catalog()
    sc = scenario_from_dict(json.loads(sj), where="scenario")
    params, prov, _ = resolve_release_params(
        k.gpu, k.framework, k.precision, None, catalog=cat,
        family=model_family(cat.model(sc.model)), model=cat.model(sc.model),
    )  # fmt: skip
    rep = sc.build_replica(
        k.gpu, k.framework, k.precision, k.tp, 1, k.kv_precision, params=params,
        params_source=prov, catalog=cat, max_num_seqs=k.max_num_seqs, context_len=k.context,
    )  # fmt: skip
    wl, slo = sc.workload, sc.slo
    curve = throughput_latency_curve(
        rep, wl, slo=slo, rng=np.random.default_rng(0), **CURVE_REQUESTS
    )
    try:
        ans = answer_for_deployment(
            rep, wl, slo, headroom=sc.constraints.headroom, seed=0, fit_percentile=None
        )
    except PlannerError as e:
        return curve, str(e)
    return curve, ans.fields()


@pytest.mark.parametrize(
    "model, gpu, tp, seqs",
    [
        ("llama-3.1-8b", "nvidia-h100-sxm", 1, 1024),  # the SLO met: an answer
        # another model, GPU, TP and engine cap (16 sequences: more replicas)
        ("llama-3.1-70b", "nvidia-a100-80gb-sxm", 4, 16),
    ],
)
def test_cached_evaluate_equals_uncached_planner_calls(model, gpu, tp, seqs):
    sj = _scenario_json(model)
    k = Knobs(gpu, "vllm", "fp8", "fp8", tp, 8192, seqs)
    first = evaluate(NO_CUSTOM, sj, k)
    again = evaluate(NO_CUSTOM, sj, k)  # the cache's copy
    curve, ans = _uncached(sj, k)
    for res in (first, again):
        assert "error" not in res, res
        assert res["curve"] == curve  # every point, bit for bit
        if isinstance(ans, str):
            assert res["no_capacity"] == ans
        else:
            assert res["answer"] == ans
            assert res["num_gpus"] == ans["num_gpus"]
            assert res["tok_s_per_gpu"] == ans["output_tok_s_per_gpu"]


def test_cached_evaluate_keeps_the_answers_error():
    """A deployment whose answer fails still has its curve and says why it has no answer, in
    planner's words. TPOT target 1 ms: one decode step of 70B at fp8 on TP 2 reads ~35 GB of
    weights per H100 (70e9 parameters x 1 byte / 2), ~10 ms at 3.35 TB/s, so no rate meets it."""
    d = json.loads(_scenario_json("llama-3.1-70b"))
    d["slo"]["tpot"]["max_s"] = 0.001
    sj = json.dumps(d, sort_keys=True)
    k = Knobs("nvidia-h100-sxm", "vllm", "fp8", "fp8", 2, 8192, 1024)
    res = evaluate(NO_CUSTOM, sj, k)
    curve, ans = _uncached(sj, k)
    assert isinstance(ans, str) and ans  # planner's answer fails ...
    assert res["no_capacity"] == ans  # ... and the page says the same
    assert res["curve"] == curve and "answer" not in res


def test_the_aggregated_numbers_do_not_depend_on_the_pd_knob():
    """The page asks ``evaluate`` with the P:D knob set to aggregated whatever its value (the
    pools are ``evaluate_disagg``'s), so a P:D change simulates nothing again: sound only
    because ``evaluate`` reads no ``pd``. Checked by calling it with a ratio set."""
    sj = _scenario_json("llama-3.1-8b")
    agg = Knobs("nvidia-h100-sxm", "vllm", "fp8", "fp8", 1, 8192, 1024)
    assert agg.pd == pools.AGGREGATED
    with_ratio = replace(agg, pd="1:2")
    assert evaluate(NO_CUSTOM, sj, with_ratio) == evaluate(NO_CUSTOM, sj, agg)


def test_what_if_takes_the_model_release_floor_as_the_cli():
    # gpt-oss on TensorRT-LLM: the newest release with a fit on H100 is older than the first
    # release serving gpt-oss (data/model_support.yaml: 1.0.0), so What-if, like `planner
    # capacity` (cli._common passes model=), predicts for the floor release, never for 0.17
    from planner.catalog.release_profile import release_floor, resolve_release_params

    cat = load_catalog()
    m = cat.model("gpt-oss-120b")
    floor = release_floor("trtllm", None, m, cat)[0]
    sj = _scenario_json("gpt-oss-120b")
    k = Knobs("nvidia-h100-sxm", "trtllm", "fp8", "fp8", 2, 8192, 256)
    res = evaluate(NO_CUSTOM, sj, k)
    _, cli_prov, ch = resolve_release_params(
        k.gpu, k.framework, k.precision, None, catalog=cat, family="moe", model=m
    )
    assert "error" not in res, res
    assert res["provenance"] == cli_prov
    # the release note says the floor: "trtllm 0.17, the newest release with a fit, cannot
    # serve gpt-oss-120b (...from trtllm 1.0.0...): predicted from trtllm 0.17 rows; 1.0.0
    # requested ..."; without model= it read "trtllm 0.17: the newest release with a fit"
    assert ch is not None and res["release_note"] == ch.note
    assert ch.requested == floor and "cannot serve gpt-oss-120b" in res["release_note"]
