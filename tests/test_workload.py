"""Workload: length distributions, traffic, traces, prefix reuse, SLOs, presets, scenario files."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from planner.errors import PlannerError
from planner.scenario import load_scenario, scenario_from_dict
from planner.workload import (
    PRESETS,
    SLO,
    FixedLength,
    HistogramLength,
    LognormalLength,
    NormalLength,
    QuantileLength,
    Traffic,
    UniformLength,
    Workload,
    load_trace,
    make_requests,
    openorca_lengths,
    preset,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RNG = np.random.default_rng


# --------------------------------------------------------------------------- lengths
def test_fixed_and_uniform():
    assert FixedLength(tokens=7).sample(5, RNG(0)).tolist() == [7] * 5
    u = UniformLength(min_tokens=10, max_tokens=20).sample(20000, RNG(0))
    assert u.min() >= 10 and u.max() <= 20
    assert u.mean() == pytest.approx(15, rel=0.01)


def test_normal_is_clipped_at_min_tokens():
    x = NormalLength(mean=20, std=30, min_tokens=4).sample(20000, RNG(0))
    assert x.min() == 4


def test_lognormal_from_mean_and_p90():
    """sigma solves ln(p90/mean) = z*sigma - sigma^2/2: mean 500, p90 1000 ->
    ln 2 = 0.6931 = 1.2816 s - s^2/2 -> s = 1.2816 - sqrt(1.6424 - 1.3863) = 0.7756."""
    d = LognormalLength(mean=500, p90=1000)
    mu, s = d.params()
    assert s == pytest.approx(1.2816 - math.sqrt(1.2816**2 - 2 * math.log(2)), abs=1e-3)
    assert mu == pytest.approx(math.log(500) - s * s / 2)
    x = d.sample(200000, RNG(1))
    assert x.mean() == pytest.approx(500, rel=0.02)
    assert np.percentile(x, 90) == pytest.approx(1000, rel=0.02)


def test_lognormal_from_median_and_p99():
    d = LognormalLength(median=100, p99=1000)
    x = d.sample(200000, RNG(2))
    assert np.median(x) == pytest.approx(100, rel=0.02)
    assert np.percentile(x, 99) == pytest.approx(1000, rel=0.05)


def test_lognormal_cap_is_in_the_mean():
    d = LognormalLength(mean=500, p90=1100, max_tokens=800)
    x = d.sample(200000, RNG(3))
    assert x.max() == 800
    assert d.mean_tokens() == pytest.approx(x.mean(), rel=0.01)


@pytest.mark.parametrize(
    "kw,msg",
    [
        ({"mean": 500, "p90": 400}, "must exceed the mean"),
        ({"mean": 100, "p90": 1000}, "too large for a lognormal"),
        ({"mean": 100}, "exactly one of p90, p99 or sigma"),
        ({"mean": 100, "median": 90, "sigma": 1}, "exactly one of mean or median"),
    ],
)
def test_lognormal_impossible_inputs(kw, msg):
    with pytest.raises(ValidationError, match=msg):
        LognormalLength(**kw)


@pytest.mark.parametrize(
    "cls,kw",
    [
        (FixedLength, {"tokens": 0}),
        (FixedLength, {"tokens": -3}),
        (NormalLength, {"mean": -5, "std": 1}),
        (NormalLength, {"mean": 5, "std": -1}),
        (UniformLength, {"min_tokens": 10, "max_tokens": 5}),
        (HistogramLength, {"tokens": [], "weights": []}),
        (HistogramLength, {"tokens": [10, -2], "weights": [1, 1]}),
        (HistogramLength, {"tokens": [10, 20], "weights": [0, 0]}),
        (QuantileLength, {"values": [10]}),
        (QuantileLength, {"values": [20, 10]}),
    ],
)
def test_empty_or_negative_distributions_are_rejected(cls, kw):
    with pytest.raises(ValidationError):
        cls(**kw)


def test_histogram_inline_and_csv(tmp_path):
    h = HistogramLength(tokens=[100, 200], weights=[3, 1])
    x = h.sample(40000, RNG(0))
    assert set(np.unique(x)) == {100, 200}
    assert (x == 100).mean() == pytest.approx(0.75, abs=0.01)
    assert h.mean_tokens() == pytest.approx(125)
    f = tmp_path / "h.csv"
    f.write_text("tokens,count\n50,1\n150,1\n")
    assert HistogramLength(path=str(f)).mean_tokens() == pytest.approx(100)
    with pytest.raises(PlannerError, match="not found"):
        HistogramLength(path=str(tmp_path / "nope.csv")).mean_tokens()


def test_quantile_table_reproduces_its_quantiles():
    q = QuantileLength(values=[10, 20, 40, 80, 160])
    x = q.sample(100000, RNG(0))
    assert np.percentile(x, 50) == pytest.approx(40, rel=0.03)
    assert x.min() >= 10 and x.max() <= 160


def test_openorca_dataset_lengths():
    i, o = openorca_lengths()
    # prompts: all 24,576 samples, mean 5,463,976 / 24,576 = 222.3 tokens (the quantile table's
    # piecewise-linear mean 222.6); p90 519 is a table value
    assert i.mean_tokens() == pytest.approx(5_463_976 / 24_576, rel=0.01)
    assert i.quantile_tokens(0.9) == pytest.approx(519)
    # answers: the generated lengths, whose mean is the ~290 completed tokens per completed
    # sample of the performance logs (v5.1 Cisco H200 Interactive: 19,621.88 / 67.01 = 292.8)
    assert o.mean_tokens() == pytest.approx(19_621.88 / 67.01, rel=0.02)
    # 5 % of the generated answers are under 56 tokens (the GPT-4 reference scaled to the same
    # mean: under 20); a short answer's TPOT averages few steps, so the tail sets TPOT P99
    assert o.quantile_tokens(0.05) == pytest.approx(56)
    assert o.quantile_tokens(1.0) == 1024  # MLPerf's generation limit (token_count 1,025 capped)


# --------------------------------------------------------------------------- traffic
def test_poisson_and_gamma_arrivals():
    p = Traffic(mean_rps=5).unit_arrivals(50000, RNG(0)) / 5.0
    gaps = np.diff(p)
    assert 1 / gaps.mean() == pytest.approx(5, rel=0.02)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.03)
    g = np.diff(Traffic(mean_rps=5, arrival="gamma", cv=3).unit_arrivals(50000, RNG(1)))
    assert g.std() / g.mean() == pytest.approx(3.0, rel=0.08)
    assert g.mean() == pytest.approx(1.0, rel=0.05)
    with pytest.raises(ValidationError, match="needs cv"):
        Traffic(mean_rps=5, arrival="gamma")


def test_daily_profile_keeps_the_mean_and_sets_the_peak():
    prof = [1.0] * 12 + [3.0] * 12
    t = Traffic(mean_rps=10, daily_profile=prof)
    h = t.hourly_rps()
    assert h.mean() == pytest.approx(10)
    assert t.peak() == pytest.approx(15)  # 10 * 3 / 2
    assert Traffic(mean_rps=10, peak_rps=40, daily_profile=prof).peak() == 40
    with pytest.raises(ValidationError, match="24 hourly"):
        Traffic(mean_rps=10, daily_profile=[1, 2])
    with pytest.raises(ValidationError, match="below mean_rps"):
        Traffic(mean_rps=10, peak_rps=5)


def test_trace_file_drives_arrivals_and_lengths(tmp_path):
    f = tmp_path / "trace.csv"
    f.write_text("timestamp,input_tokens,output_tokens\n100.0,10,5\n100.5,20,6\n101.0,30,7\n")
    tr = load_trace(str(f))
    assert tr.arrival_s.tolist() == [0.0, 0.5, 1.0]
    wl = Workload.model_validate(
        {
            "traffic": {"arrival": "trace", "trace_path": str(f)},
            "input_tokens": {"kind": "trace"},
            "output_tokens": {"kind": "trace"},
        }
    )
    r = wl.sample_requests(5, RNG(0), None)
    assert r.input_tokens.tolist() == [10, 20, 30, 10, 20]
    assert r.arrival_s[:3].tolist() == [0.0, 0.5, 1.0]
    assert wl.traffic.peak() == pytest.approx(2.0)
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,input_tokens,output_tokens\n1,0,5\n")
    with pytest.raises(PlannerError, match="must be > 0"):
        load_trace(str(bad))


# --------------------------------------------------------------------------- requests
def test_truncation_at_the_context_limit():
    r = make_requests([0, 1, 2], [100, 5000, 9000], [100, 5000, 10], context_limit=4096)
    assert r.input_tokens.tolist() == [100, 4095, 4095]
    assert (r.input_tokens + r.output_tokens).max() <= 4096
    assert r.truncated == 2


def test_prefix_reuse_cached_tokens():
    r = make_requests([0, 0], [1000, 100], [10, 10], shared_prefix_tokens=200, cache_hit_rate=0.5)
    # 200 shared + 0.5 x 800 = 600; a 100-token prompt: 99 shared (one token is always computed)
    assert r.cached_tokens.tolist() == [600, 99]
    r = make_requests([0], [1000], [10], shared_prefix_tokens=200, prefix_caching=False)
    assert r.cached_tokens.tolist() == [0] and r.shared_prefix_tokens == 0


# --------------------------------------------------------------------------- SLOs
def test_slo_attainment_and_percentiles():
    slo = SLO.model_validate(
        {"ttft": {"max_s": 1.0, "percentile": "p90"}, "tpot": {"max_s": 0.1}, "attainment": 0.8}
    )
    assert slo.ttft.percentile == 90 and slo.tpot.percentile == 99
    ttft = np.array([0.1] * 9 + [2.0])
    tpot = np.array([0.05] * 8 + [np.nan, 0.5])
    ev = slo.evaluate(ttft, tpot, ttft)
    # request 10 misses both; request 9 has one token (no TPOT) and meets everything
    assert ev["attainment"] == pytest.approx(0.9)
    assert ev["ttft_p90_s"] == pytest.approx(np.percentile(ttft, 90))
    assert ev["tpot_ok"] is False  # p99 of TPOT is ~0.5 s
    assert ev["ok"] is False
    assert slo.scaled(10).evaluate(ttft, tpot, ttft)["ok"] is True
    with pytest.raises(ValidationError):
        SLO.model_validate({"ttft": {"max_s": 1, "percentile": "p1000x"}})
    with pytest.raises(ValidationError):
        SLO.model_validate({"ttft": {"max_s": -1}})


# --------------------------------------------------------------------------- presets
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_validate_and_cite_a_source(name):
    w = preset(name, traffic={"mean_rps": 3})
    assert w.source and len(w.source) > 40
    assert w.mean_input_tokens() > 0 and w.mean_output_tokens() > 0
    assert w.traffic.mean_rps == 3
    r = w.sample_requests(100, RNG(0), 1.0)
    assert len(r) == 100


def test_preset_overrides_replace_a_distribution():
    w = preset("chat", output_tokens={"kind": "fixed", "tokens": 50})
    assert w.mean_output_tokens() == 50
    assert w.prefix.shared_prefix_tokens == 200  # the rest of the preset stays
    with pytest.raises(ValidationError, match="unknown preset"):
        preset("nope")


# --------------------------------------------------------------------------- scenarios
def test_examples_cover_the_required_scenarios():
    names = [p.name for p in EXAMPLES.glob("*.yaml")]
    for word in ("chat", "rag", "batch", "code"):
        assert any(word in n for n in names), word
    for p in EXAMPLES.glob("*.yaml"):
        s = load_scenario(p)
        assert s.model and s.deployment.gpu and s.deployment.framework and s.deployment.precision


def test_scenario_example_shapes():
    chat = load_scenario(EXAMPLES / "chat-8b.yaml")
    assert chat.model == "llama-3.1-8b" and chat.workload.preset == "chat"
    assert chat.workload.traffic.daily_profile is not None
    rag = load_scenario(EXAMPLES / "rag-70b.yaml")
    assert "70b" in rag.model and rag.workload.mean_input_tokens() > 3000
    batch = load_scenario(EXAMPLES / "batch-offline.yaml")
    assert batch.workload.offline


BASE = {
    "model": "llama-3.1-8b",
    "workload": {"preset": "chat", "traffic": {"mean_rps": 5}},
    "slo": {"ttft": {"max_s": 1}},
}


def _with(path: str, value):
    import copy

    d = copy.deepcopy(BASE)
    keys = path.split(".")
    cur = d
    for k in keys[:-1]:
        cur = cur.setdefault(k, {})
    cur[keys[-1]] = value
    return d


@pytest.mark.parametrize(
    "path,value,msg",
    [
        (
            "workload.traffic.peak_rsp",
            10,
            r"workload\.traffic\.peak_rsp: unknown field; did you mean peak_rps\?",
        ),
        ("slo.tfft", {"max_s": 1}, r"slo\.tfft: unknown field; did you mean ttft\?"),
        ("bogus", 1, r"bogus: unknown field"),
        # a misspelt required key: the typo is named, not the field it meant ("required field
        # missing" for slo.ttft.max_s, which pydantic lists first)
        ("slo.ttft", {"max_secs": 1}, r"slo\.ttft\.max_secs: unknown field; did you mean max_s\?"),
        (
            "workload.input_tokens",
            {"kind": "lognormal", "mean": 100, "p91": 3},
            r"workload\.input_tokens.*p91: unknown field",
        ),
        ("workload.input_tokens", {"kind": "gaussian", "mean": 100}, r"unknown kind 'gaussian'"),
        (
            "workload.output_tokens",
            {"kind": "fixed", "tokens": -4},
            r"workload\.output_tokens.*greater than 0",
        ),
        ("constraints.headroom", -0.5, r"constraints\.headroom"),
        # a known field in a section that does not take it: the section that does is named
        (
            "deployment.speculative",
            "auto",
            r"deployment\.speculative: unknown field; speculative is a field of constraints, "
            r"not of deployment$",
        ),
        (
            "workload.headroom",
            0.3,
            r"workload\.headroom: unknown field; headroom is a field of constraints, not of "
            r"workload$",
        ),
    ],
)
def test_scenario_errors_name_the_field_path(path, value, msg):
    with pytest.raises(PlannerError, match=msg):
        scenario_from_dict(_with(path, value))


def test_scenario_file_errors(tmp_path):
    with pytest.raises(PlannerError, match="not found"):
        load_scenario(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(PlannerError, match="not valid YAML"):
        load_scenario(bad)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(PlannerError, match="empty"):
        load_scenario(empty)
    nomodel = tmp_path / "nomodel.yaml"
    nomodel.write_text("workload: {preset: chat, traffic: {mean_rps: 1}}\n")
    with pytest.raises(PlannerError, match="model: required field missing"):
        load_scenario(nomodel)


def test_scenario_relative_trace_path(tmp_path):
    (tmp_path / "t.csv").write_text("timestamp,input_tokens,output_tokens\n0,10,5\n1,20,5\n")
    f = tmp_path / "s.yaml"
    f.write_text(
        "model: llama-3.1-8b\nworkload:\n  traffic: {arrival: trace, trace_path: t.csv}\n"
        "  input_tokens: {kind: trace}\n  output_tokens: {kind: trace}\n"
    )
    s = load_scenario(f)
    assert Path(s.workload.traffic.trace_path) == tmp_path / "t.csv"


def test_missing_deployment_is_a_clear_error():
    s = scenario_from_dict(BASE)
    with pytest.raises(PlannerError, match="no gpu, framework, precision given"):
        s.resolve_deployment()
    d = s.resolve_deployment(gpu="nvidia-h100-sxm", framework="vllm", precision="bf16", tp=2)
    assert d.tp == 2


# --------------------------------------------------------------------------- review fixes
def _scenario_file(tmp_path, workload: str, name: str = "s.yaml") -> Path:
    f = tmp_path / name
    f.write_text(
        "model: llama-3.1-8b\n"
        "deployment: {gpu: nvidia-h100-sxm, framework: vllm, precision: bf16}\n"
        f"workload: {workload}\n"
    )
    return f


def test_unreadable_scenario_trace_and_histogram_files_are_one_line_errors(tmp_path):
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(PlannerError, match="not a UTF-8 text file"):
        load_scenario(binary)
    with pytest.raises(PlannerError, match="is a folder"):
        load_scenario(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe,\n")
    for path in ("sub", "bin.csv"):
        sc = load_scenario(
            _scenario_file(
                tmp_path,
                f"{{traffic: {{arrival: trace, trace_path: {path}}}, "
                "input_tokens: {kind: trace}, output_tokens: {kind: trace}}",
            )
        )
        with pytest.raises(PlannerError, match="folder, not a CSV file|not UTF-8 text"):
            sc.workload.sample_requests(10, RNG(0))
        hist = HistogramLength(path=str(tmp_path / path))
        with pytest.raises(PlannerError, match="folder, not a CSV file|not UTF-8 text"):
            hist.mean_tokens()


@pytest.mark.parametrize(
    "text,msg",
    [
        (
            "timestamp,input_tokens,output_tokens\n0,100,50\n1,200\n",
            r"line 3: output_tokens .*missing",
        ),
        (
            "timestamp,input_tokens,output_tokens\n0,100,50\n1,inf,50\n",
            r"line 3: input_tokens .*finite",
        ),
        (
            "timestamp,input_tokens,output_tokens\n0,100,50\nnan,10,50\n",
            r"line 3: timestamp .*finite",
        ),
        ("timestamp,input_tokens,output_tokens\n0,1e400,50\n1,10,5\n", r"line 2: input_tokens"),
        ("timestamp,input_tokens,output_tokens\n0,100,50\n", "two distinct timestamps"),
        (
            "timestamp,input_tokens,output_tokens\n5,100,50\n5,10,5\n5,1,1\n",
            "two distinct timestamps",
        ),
    ],
)
def test_bad_trace_rows_name_the_line(tmp_path, text, msg):
    f = tmp_path / "t.csv"
    f.write_text(text)
    with pytest.raises(PlannerError, match=msg):
        load_trace(str(f))


@pytest.mark.parametrize(
    "text,msg",
    [
        ("tokens,weight\n100,1\n200\n", r"line 3: weight .*missing"),
        ("tokens,weight\n100,1\n200,nan\n", r"line 3: weight .*finite"),
        ("tokens,weight\n100,1\ninf,2\n", r"line 3: tokens .*finite"),
    ],
)
def test_bad_histogram_rows_name_the_line(tmp_path, text, msg):
    f = tmp_path / "h.csv"
    f.write_text(text)
    with pytest.raises(PlannerError, match=msg):
        HistogramLength(path=str(f)).table()


@pytest.mark.parametrize(
    "path,value,msg",
    [
        ("workload.traffic.peak_rps", math.inf, r"workload\.traffic\.peak_rps: .*finite"),
        ("workload.traffic.mean_rps", math.nan, r"workload\.traffic\.mean_rps: .*finite"),
        ("workload.traffic.daily_profile", [math.nan] + [1.0] * 23, r"daily_profile\[0\]"),
        ("workload.traffic.daily_profile", [1e308] * 24, "daily_profile"),
        ("constraints.headroom", math.inf, r"constraints\.headroom: .*finite"),
        ("slo.ttft", {"max_s": math.inf}, r"slo\.ttft\.max_s: .*finite"),
        ("workload.traffic", {"mean_rps": 5, "arrival": "gamma", "cv": 1e200}, "cv"),
        ("workload.traffic", {"mean_rps": 5, "arrival": "gamma", "cv": 1e-200}, "cv"),
        ("workload.traffic", {"mean_rps": 5, "arrival": "gamma", "cv": math.inf}, "cv"),
    ],
)
def test_infinite_or_nan_inputs_are_rejected(path, value, msg):
    with pytest.raises(PlannerError, match=msg):
        scenario_from_dict(_with(path, value))


def test_trace_without_a_time_span_is_an_error_not_an_infinite_rate(tmp_path):
    (tmp_path / "one.csv").write_text("timestamp,input_tokens,output_tokens\n0,100,50\n")
    sc = load_scenario(
        _scenario_file(
            tmp_path,
            "{traffic: {arrival: trace, trace_path: one.csv}, "
            "input_tokens: {kind: trace}, output_tokens: {kind: trace}}",
        )
    )
    with pytest.raises(PlannerError, match="two distinct timestamps"):
        sc.workload.traffic.peak()


def test_burstiness_is_the_squared_cv_of_the_gaps(tmp_path):
    assert Traffic(mean_rps=1).burstiness() == 1.0
    assert Traffic(mean_rps=1, arrival="gamma", cv=2.0).burstiness() == 4.0
    assert Traffic(mean_rps=1, arrival="uniform").burstiness() == 0.0
    f = tmp_path / "t.csv"
    f.write_text("timestamp,input_tokens,output_tokens\n0,1,1\n1,1,1\n2,1,1\n3,1,1\n")
    assert Traffic(arrival="trace", trace_path=str(f)).burstiness() == 0.0


@pytest.mark.parametrize(
    "kw",
    [
        {"mean": 100, "std": 100, "max_tokens": 100},
        {"mean": 10, "std": 50},
        {"mean": 128, "std": 32, "min_tokens": 8},
        {"mean": 5, "std": 3, "min_tokens": 4, "max_tokens": 7},
        {"mean": 3, "std": 0.4, "max_tokens": 4},
        {"mean": 2048, "std": 1500, "min_tokens": 64, "max_tokens": 3000},
    ],
)
def test_normal_mean_accounts_for_clipping_at_both_bounds(kw):
    """Clipping puts the tails' mass AT min_tokens and max_tokens, which moves the mean."""
    d = NormalLength(**kw)
    x = d.sample(400_000, RNG(1))
    se = x.std() / math.sqrt(len(x))
    assert abs(d.mean_tokens() - x.mean()) <= 5 * se + 1e-3


def test_shared_prefix_longer_than_the_prompts_is_clipped():
    r = make_requests([0, 0], [100, 50], [10, 10], shared_prefix_tokens=5000)
    assert r.cached_tokens.tolist() == [99, 49]
    assert r.shared_prefix_tokens == 99  # the longest part of the prefix any prompt holds


def test_a_peak_above_the_daily_curve_is_said():
    """--peak-rps above a file's curve keeps its mean (the peak is a burst); the answer says
    so (s13 user test: chat-8b at --peak-rps 1e6 sized the fleet for 1e6 while the
    autoscaled GPU-hours followed the file's mean of 25, silently)."""
    from planner.workload.traffic import Traffic

    prof = (1.0,) * 12 + (3.0,) * 12  # multipliers' mean 2: the busiest hour is 10 x 3 / 2 = 15
    above = Traffic(mean_rps=10, peak_rps=20, daily_profile=prof)
    assert "busiest hour (15 req/s)" in above.peak_above_curve_note()
    assert "mean 10 req/s" in above.peak_above_curve_note()
    assert Traffic(mean_rps=10, peak_rps=15, daily_profile=prof).peak_above_curve_note() == ""
    assert Traffic(mean_rps=10, peak_rps=20).peak_above_curve_note() == ""  # no curve
