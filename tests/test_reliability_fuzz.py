"""Fuzzing the parsers: any input ends in a result or a one-line PlannerError, nothing else.

Each test keeps to ~100-200 examples so the file runs in a few seconds.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.benchmarks.io import load_measurements, read_rows
from planner.benchmarks.predict import Predictor
from planner.catalog import ModelArch, load_catalog, model_from_hf_config
from planner.catalog.catalog import _validate_list
from planner.engine.memory import kv_bytes_per_token, weight_memory
from planner.engine.params import param_counts
from planner.errors import PlannerError
from planner.files import load_json, load_yaml
from planner.scenario import scenario_from_dict
from planner.workload.lengths import _read_hist_csv
from planner.workload.traffic import load_trace

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CONFIGS = {
    p.stem: json.loads(p.read_text()) for p in FIXTURES.glob("*.json") if p.stem != "unknown_arch"
}
CAT = load_catalog(ROOT / "data")
SCENARIO = yaml.safe_load((ROOT / "examples" / "chat-8b.yaml").read_text())
MODELS = yaml.safe_load((ROOT / "data" / "models.yaml").read_text())["models"]
FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
TMP = Path(tempfile.mkdtemp(prefix="planner-fuzz-"))

# values a hostile or broken file may hold
hostile = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, -1, 3, 7, 2**31, 10**18]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.booleans(),
    st.none(),
    st.lists(st.integers(-3, 100), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


def _one_line(e: PlannerError) -> None:
    text = str(e)
    assert text and "\n" not in text and len(text) < 2000


def _mutate(base: dict, draw_keys, values) -> dict:
    d = dict(base)
    for k, v in zip(draw_keys, values, strict=False):
        if v == "<drop>":
            d.pop(k, None)
        else:
            d[k] = v
    return d


@st.composite
def mutated_config(draw):
    name = draw(st.sampled_from(sorted(CONFIGS)))
    base = CONFIGS[name]
    keys = draw(st.lists(st.sampled_from(sorted(base)), min_size=1, max_size=4))
    vals = [draw(st.one_of(hostile, st.just("<drop>"))) for _ in keys]
    return _mutate(base, keys, vals)


def _use_model(m: ModelArch) -> None:
    pc = param_counts(m)
    assert 0 < pc.active <= pc.total
    for tp in (1, 2, 8):
        w = weight_memory(m, CAT.precision("bf16"), tp=tp)
        assert 0 <= w.per_gpu_bytes < float("inf") and 0 <= w.total_bytes < float("inf")
        kv = kv_bytes_per_token(m, 16, tp)
        assert 0 <= kv < float("inf")


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(mutated_config())
def test_config_json_fuzz(cfg):
    p = TMP / "config.json"
    p.write_text(json.dumps(cfg, allow_nan=True))
    try:
        m = model_from_hf_config(p)
    except PlannerError as e:
        _one_line(e)
        return
    try:
        _use_model(m)
    except PlannerError as e:
        _one_line(e)


@FAST
@given(st.text(max_size=300))
def test_config_json_text_fuzz(text):
    p = TMP / "config_text.json"
    p.write_text(text)
    try:
        model_from_hf_config(p)
    except PlannerError as e:
        _one_line(e)


@st.composite
def mutated_model_entry(draw):
    base = draw(st.sampled_from(MODELS))
    keys = draw(st.lists(st.sampled_from(sorted(base)), min_size=1, max_size=3))
    vals = [draw(st.one_of(hostile, st.just("<drop>"))) for _ in keys]
    return _mutate(base, keys, vals)


@FAST
@given(mutated_model_entry())
def test_catalog_entry_fuzz(entry):
    text = yaml.safe_dump({"models": [entry]}, allow_unicode=True)
    try:
        raw = load_yaml(text, "models.yaml")
        (m,) = _validate_list(Path("models.yaml"), "models", ModelArch, raw)
        _use_model(m)
    except PlannerError as e:
        _one_line(e)


@FAST
@given(st.text(alphabet=st.sampled_from("ab:-[]{}&*!|>'\"#\n \t1.~<%@`,?"), max_size=120))
def test_yaml_text_fuzz(text):
    try:
        load_yaml(text, "x.yaml")
    except PlannerError as e:
        _one_line(e)


@FAST
@given(st.text(alphabet=st.sampled_from('[]{}":,01e.-tfnul \n\\'), max_size=120))
def test_json_text_fuzz(text):
    try:
        load_json(text, "x.json")
    except PlannerError as e:
        _one_line(e)


@st.composite
def mutated_scenario(draw):
    d = json.loads(json.dumps(SCENARIO))
    for _ in range(draw(st.integers(1, 3))):
        sections = [d] + [
            x for x in (d.get("workload"), d.get("slo"), d.get("deployment")) if isinstance(x, dict)
        ]
        if isinstance(d.get("workload"), dict) and isinstance(d["workload"].get("traffic"), dict):
            sections.append(d["workload"]["traffic"])
        target = draw(st.sampled_from(sections))
        keys = st.text(max_size=6)
        if target:  # a section may be empty (or emptied by an earlier mutation)
            keys = st.one_of(st.sampled_from(sorted(map(str, target))), keys)
        key = draw(keys)
        target[key] = draw(hostile)
    return d


@FAST
@given(mutated_scenario())
def test_scenario_fuzz(d):
    try:
        sc = scenario_from_dict(d, where="s.yaml")
    except PlannerError as e:
        _one_line(e)
        return
    assert sc is not None


csv_cell = st.one_of(
    st.sampled_from(["", "0", "-1", "1e300", "nan", "inf", "1.5", "abc", "llama-3.1-8b"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6),
)


@st.composite
def csv_text(draw, header):
    cols = list(header)
    if draw(st.booleans()):
        cols = draw(st.permutations(cols))
    rows = draw(st.lists(st.lists(csv_cell, min_size=0, max_size=len(cols) + 1), max_size=5))
    lines = [",".join(cols)] + [",".join(c.replace(",", " ") for c in r) for r in rows]
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    if draw(st.booleans()):
        text = "\ufeff" + text
    return text


BENCH_HEADER = (ROOT / "data/benchmarks/pytorch_h200.csv").read_text().splitlines()[0].split(",")


@FAST
@given(csv_text(BENCH_HEADER))
def test_predict_csv_fuzz(text):
    p = TMP / "bench.csv"
    p.write_text(text, encoding="utf-8")
    try:
        rows, _ = read_rows(p)
    except PlannerError as e:
        _one_line(e)
        return
    for out in Predictor(CAT).predict_rows(rows):  # a row never raises
        assert out["predicted"] == "" or 0 <= out["predicted"] < float("inf")


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(csv_text(BENCH_HEADER))
def test_calibration_csv_fuzz(text):
    p = TMP / "calib.csv"
    p.write_text(text, encoding="utf-8")
    try:
        load_measurements(p, CAT)
    except PlannerError as e:
        _one_line(e)


@FAST
@given(csv_text(("timestamp", "input_tokens", "output_tokens")))
def test_trace_csv_fuzz(text):
    p = TMP / "trace.csv"
    p.write_text(text, encoding="utf-8")
    try:
        load_trace(str(p))
    except PlannerError as e:
        _one_line(e)


@FAST
@given(csv_text(("tokens", "weight")))
def test_histogram_csv_fuzz(text):
    p = TMP / "hist.csv"
    p.write_text(text, encoding="utf-8")
    try:
        _read_hist_csv(str(p))
    except PlannerError as e:
        _one_line(e)
