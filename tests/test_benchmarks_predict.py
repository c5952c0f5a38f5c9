"""Batch prediction of benchmark rows: values, unit conversion, path resolution, reasons."""

from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import DATA_DIR, REPO_ROOT

import planner
import planner.benchmarks.predict as predict_mod
import planner.catalog.profile as profile_mod
from planner.benchmarks import (
    Predictor,
    predict_file,
    read_rows,
    register_metric,
    summarize,
    write_rows,
)
from planner.benchmarks.predict import METRICS, OUTPUT_COLUMNS
from planner.catalog import PRIOR
from planner.engine import decode_step, prefill, step_model

SCHEMA = [
    "id", "source", "source_detail", "as_of", "hardware", "n_gpus", "tp", "pp", "model",
    "precision", "kv_precision", "framework", "framework_version", "mode", "isl", "osl", "batch",
    "concurrency", "request_rate", "context_len", "metric", "value", "unit", "notes",
]  # fmt: skip


def _row(**kw) -> dict[str, str]:
    base = dict.fromkeys(SCHEMA, "")
    base.update(
        id="t-0001", source="test", hardware="nvidia-h100-sxm", n_gpus="1", tp="1", pp="1",
        model="llama-3.1-8b", precision="bf16", framework="pytorch", mode="static_batch",
        batch="4", isl="512", context_len="512", metric="prefill_s", value="0.05", unit="s",
    )  # fmt: skip
    base.update({k: str(v) for k, v in kw.items()})
    return base


def _write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


@pytest.fixture
def prior_only(monkeypatch, tmp_path):
    """No calibration profile: parameters are the priors."""
    monkeypatch.setattr(profile_mod, "DEFAULT_PROFILE", tmp_path / "no_profile.yaml")


@pytest.fixture
def no_simulator(monkeypatch):
    """A serving predictor that declines every row (keeps whole-file tests fast)."""

    def decline(row, cat, params):
        return None, f"metric {row['metric']} not supported yet"

    monkeypatch.setattr(predict_mod, "predict_serving_row", decline)


def test_prefill_and_decode_values(catalog, prior_only):
    sm = step_model("llama-3.1-8b", "nvidia-h100-sxm", "bf16", params=PRIOR, catalog=catalog)
    pred = Predictor(catalog)
    r = pred.predict_row(_row(metric="prefill_s", batch=4, isl=512))
    assert r["reason"] == "" and r["provenance"] == "prior"
    assert r["predicted"] == pytest.approx(float(prefill(sm, 4, 512).time_s), rel=1e-12)
    r = pred.predict_row(_row(metric="decode_step_s", batch=16, context_len=2048, isl=""))
    assert r["predicted"] == pytest.approx(float(decode_step(sm, 16, 2048).time_s), rel=1e-12)


def test_unit_conversion_to_row_unit(catalog, prior_only):
    pred = Predictor(catalog)
    s = pred.predict_row(_row(metric="decode_step_s", unit="s"))["predicted"]
    ms = pred.predict_row(_row(metric="decode_step_s", unit="ms"))["predicted"]
    assert ms == pytest.approx(1000 * s, rel=1e-12)
    r = pred.predict_row(_row(metric="decode_step_s", unit="tok/s"))
    assert r["predicted"] == "" and "unit 'tok/s'" in r["reason"]


def test_kv_precision_and_tp_of_the_row_are_used(catalog, prior_only):
    pred = Predictor(catalog)
    base = pred.predict_row(_row(model="llama-3.1-70b", metric="decode_step_s", tp=4,
                                 batch=64, context_len=8192))["predicted"]  # fmt: skip
    fp8kv = pred.predict_row(_row(model="llama-3.1-70b", metric="decode_step_s", tp=4, batch=64,
                                  context_len=8192, kv_precision="fp8"))["predicted"]  # fmt: skip
    tp8 = pred.predict_row(_row(model="llama-3.1-70b", metric="decode_step_s", tp=8, batch=64,
                                context_len=8192))["predicted"]  # fmt: skip
    assert fp8kv < base  # half the KV bytes to read
    assert tp8 < base


def test_model_path_resolution(tmp_path, monkeypatch, catalog, fixtures_dir, prior_only):
    # relative to the CSV's folder
    sub = tmp_path / "runs"
    (sub / "cfg").mkdir(parents=True)
    (sub / "cfg" / "config.json").write_text((fixtures_dir / "llama.json").read_text())
    csv_path = _write(sub / "m.csv", [_row(model="cfg/config.json")])
    monkeypatch.chdir(tmp_path)  # CWD does not contain cfg/
    rows, _ = predict_file(csv_path, catalog)
    by_id = rows[0]
    assert by_id["reason"] == ""
    same = Predictor(catalog).predict_row(_row(model="llama-3.1-8b"))["predicted"]
    assert by_id["predicted"] == pytest.approx(same, rel=1e-12)  # identical architecture
    # relative to the repository root (as bench rows write data/benchmarks/configs/...)
    cfg = DATA_DIR / "benchmarks" / "configs" / "llama-3.1-70b-20l" / "config.json"
    rel = cfg.relative_to(REPO_ROOT).as_posix()
    r = Predictor(catalog, csv_dir=tmp_path).predict_row(_row(model=rel, metric="decode_step_s"))
    assert r["reason"] == "" and r["predicted"] > 0
    # relative to the CWD first
    monkeypatch.chdir(sub)
    r = Predictor(catalog).predict_row(_row(model="cfg/config.json"))
    assert r["reason"] == ""
    # not found anywhere
    r = Predictor(catalog, csv_dir=sub).predict_row(_row(model="nowhere/config.json"))
    assert r["predicted"] == "" and "model config not found" in r["reason"]


@pytest.mark.parametrize(
    ("change", "reason_part"),
    [
        ({"hardware": "nvidia-h100-sx"}, "unknown gpu 'nvidia-h100-sx' (closest: nvidia-h100-sxm"),
        ({"hardware": ""}, "hardware is empty"),
        ({"model": "llama-3.1-7b"}, "unknown model 'llama-3.1-7b'"),
        ({"precision": ""}, "precision is empty"),
        ({"precision": "int3"}, "unknown precision 'int3'"),
        ({"hardware": "amd-mi250x", "precision": "fp8"}, "not supported on amd-mi250x"),
        # the harness framework 'pytorch' lists nvidia only: no silent guess on AMD
        ({"hardware": "amd-mi300x"}, "framework pytorch does not run on amd GPUs"),
        ({"framework": "trtllm", "hardware": "amd-mi300x"}, "unknown vendor stack"),
        (
            {"notes": "MLPerf; layout_unsupported: expert parallel EP=8; DP attention"},
            "layout not expressible by the planner: expert parallel EP=8",
        ),
        ({"kv_precision": "fp5"}, "unknown kv precision 'fp5'"),
        ({"batch": "0"}, "batch must be a positive whole number"),
        ({"batch": "-2"}, "batch must be a positive whole number"),
        ({"isl": ""}, "isl is empty"),
        ({"isl": "abc"}, "isl must be a number"),
        ({"tp": "", "n_gpus": "3", "model": "llama-3.1-405b"}, "no TP size in (1, 2, 4, 8) works"),
        ({"tp": "3"}, "does not divide"),
        ({"metric": "decode_step_s", "context_len": ""}, "context_len is empty"),
    ],
)
def test_rows_that_cannot_be_predicted_get_a_reason(catalog, prior_only, change, reason_part):
    r = Predictor(catalog).predict_row(_row(**change))
    assert r["predicted"] == ""
    assert reason_part in r["reason"]
    assert "\n" not in r["reason"]


def test_serving_metrics_dispatch_to_simulator(catalog, monkeypatch, prior_only):
    calls = []

    def fake(row, cat, params):
        calls.append((row["metric"], cat is catalog, params == PRIOR))
        return (123.0, "") if row["metric"] == "req_s" else (None, "no SLO given")

    monkeypatch.setattr(predict_mod, "predict_serving_row", fake)
    pred = Predictor(catalog)
    ok = pred.predict_row(_row(metric="req_s", unit="req/s"))
    no = pred.predict_row(_row(metric="ttft_ms_p99", unit="ms"))
    assert (ok["predicted"], ok["reason"], ok["provenance"]) == (123.0, "", "prior")
    assert (no["predicted"], no["reason"]) == ("", "no SLO given")
    assert calls == [("req_s", True, True), ("ttft_ms_p99", True, True)]


def test_dispatch_table_is_extensible(catalog, prior_only):
    register_metric("two_s", lambda ctx: 2.0 * ctx.int_field("batch"), "s")
    try:
        r = Predictor(catalog).predict_row(_row(metric="two_s", unit="ms", batch=3))
    finally:
        METRICS.pop("two_s")
    assert r["predicted"] == pytest.approx(6000.0)  # 2 s x batch 3, stated in ms


def test_output_keeps_every_input_column(tmp_path, catalog, prior_only, no_simulator):
    rows = [
        _row(id="a"),
        _row(id="b", metric="decode_step_s"),
        _row(id="c", metric="req_s", unit="req/s"),  # its own unit: refused for the metric
    ]
    path = _write(tmp_path / "in.csv", rows)
    out, cols = predict_file(path, catalog)
    assert cols == SCHEMA + list(OUTPUT_COLUMNS)
    for src, dst in zip(rows, out, strict=True):
        assert {k: dst[k] for k in SCHEMA} == src
    buf = io.StringIO()
    write_rows(out, cols, buf)
    back = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert [r["id"] for r in back] == ["a", "b", "c"]
    assert float(back[0]["predicted"]) > 0 and back[2]["predicted"] == ""
    assert back[2]["reason"] == "metric req_s not supported yet"
    s = summarize(out)
    assert (s["rows"], s["predicted"], s["not_predicted"]) == (3, 2, 1)


def test_existing_output_columns_are_replaced(tmp_path, catalog, prior_only):
    row = {**_row(), "predicted": "999", "reason": "old"}
    out, cols = predict_file(_write(tmp_path / "in.csv", [row]), catalog)
    assert cols.count("predicted") == 1 and out[0]["reason"] == "" and out[0]["predicted"] != "999"


def test_read_rows_errors(tmp_path):
    with pytest.raises(planner.PlannerError, match="not found"):
        read_rows(tmp_path / "missing.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(planner.PlannerError, match="empty"):
        read_rows(tmp_path / "empty.csv")
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(planner.PlannerError, match="no 'metric' column"):
        read_rows(tmp_path / "other.csv")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00metric\n")
    with pytest.raises(planner.PlannerError, match="UTF-8"):
        read_rows(tmp_path / "bin.csv")


def test_whole_public_dataset_never_crashes(catalog, no_simulator):
    out, _ = predict_file(DATA_DIR / "benchmarks" / "public.csv", catalog)
    assert len(out) > 1000
    for r in out:
        assert (r["predicted"] != "") or r["reason"], f"row {r['id']}: no value and no reason"
        if r["predicted"] != "":
            assert r["predicted"] > 0
    json.dumps(out)  # plain values only


def test_own_step_measurements_are_all_predicted(catalog):
    path = DATA_DIR / "benchmarks" / "pytorch_h200.csv"
    if not path.exists():
        pytest.skip("no own step measurements")
    out, _ = predict_file(path, catalog)
    step_rows = [r for r in out if r["metric"] in ("prefill_s", "decode_step_s")]
    assert step_rows
    bad = [(r["id"], r["reason"]) for r in step_rows if r["predicted"] == ""]
    assert not bad, bad[:5]
    assert all(r["predicted"] > 0 and r["provenance"] for r in step_rows)


def test_serving_rows_with_the_real_simulator_never_crash(catalog):
    rows, _ = read_rows(DATA_DIR / "benchmarks" / "public.csv")
    sample, seen = [], set()
    for r in rows:  # one row per (metric, mode), at most 8
        key = (r["metric"], r["mode"])
        if key not in seen and len(sample) < 8:
            seen.add(key)
            sample.append(r)
    for r in Predictor(catalog).predict_rows(sample):
        assert (r["predicted"] != "") or r["reason"], r["id"]


def test_predict_matches_the_fitted_predictors_on_public_rows():
    """`planner predict` and `planner validate` must report the same numbers: static,
    single-stream and offline rows go through the calibration's own predictors."""
    from planner.benchmarks import Predictor, load_measurements, read_rows
    from planner.calibration import predict_rows, prepare_rows
    from planner.catalog import DATA_DIR, load_catalog, load_profile

    cat = load_catalog()
    path = DATA_DIR / "benchmarks" / "public.csv"
    raw, _ = read_rows(path)
    wanted = {"trt012-0001", "trt017-0001", "lmd-0001", "lmd-0002", "trtperf-0001"}
    rows = [r for r in raw if r["id"] in wanted]
    assert len(rows) >= 3
    prepared = [r for r in prepare_rows(load_measurements(path, cat), cat) if r.id in wanted]
    expected = {r.id: v for r, v, _ in predict_rows(prepared, load_profile(), cat) if v}
    got = {r["id"]: r["predicted"] for r in Predictor(cat).predict_rows(rows)}
    assert expected, "no row of the sample is predictable"
    for rid, v in expected.items():
        assert got[rid] == pytest.approx(v, rel=1e-12), rid


def test_rows_with_n_gpus_but_no_tp_get_the_layout_a_submitter_would_tune():
    from planner.benchmarks import Predictor
    from planner.benchmarks.layouts import assumed_layout
    from planner.catalog import PRIOR, load_catalog
    from planner.serving import build_replica, steady_state

    cat = load_catalog()
    row = {
        "id": "t1", "source": "test", "hardware": "nvidia-h200-sxm", "n_gpus": "8", "tp": "",
        "pp": "", "model": "llama-2-70b", "precision": "fp8", "kv_precision": "",
        "framework": "trtllm", "mode": "offline", "isl": "128", "osl": "128", "batch": "",
        "concurrency": "", "request_rate": "", "context_len": "", "metric": "output_tok_s_total",
        "value": "1000", "unit": "tok/s", "notes": "",
    }  # fmt: skip
    filled, note = assumed_layout(row, cat, PRIOR)
    # the choice: most analytic saturation throughput of (8 / tp) replicas of tp GPUs
    best = max(
        (1, 2, 4, 8),
        key=lambda tp: (
            steady_state(
                build_replica(
                    "llama-2-70b", "nvidia-h200-sxm", "fp8", "trtllm", tp=tp, catalog=cat
                ),
                (128.0, 128.0),
                1e18,
            ).saturation_output_tok_s
            * (8 // tp)
        ),
    )
    assert filled["tp"] == str(best) and filled["pp"] == "1"
    assert note.startswith(f"assumed layout tp={best} dp={8 // best}")
    out = Predictor(cat).predict_row(row)
    assert out["predicted"] and "assumed layout tp=" in out["provenance"]
    assert out["tp"] == ""  # the input row is returned unchanged


# --------------------------------------------------------------------------- tuned submissions
def test_engine_settings_tags_are_parsed_once_with_clear_errors():
    from planner.benchmarks.schema import EngineSettings, engine_settings
    from planner.errors import PlannerError

    notes = "MLPerf v5.0 Offline; max_num_seqs=1,024, max_num_batched_tokens=16384; kv_cache_dtype=fp8_e4m3."
    assert engine_settings(notes) == EngineSettings(1024, 16384, "fp8")
    assert engine_settings("kv_cache_dtype=auto") == EngineSettings()  # the default
    assert engine_settings("") == EngineSettings()
    for bad, why in (
        ("max_num_seqs=0", "whole number between 1"),
        ("max_num_seqs=many", "whole number between 1"),
        ("kv_cache_dtype=fp6", "not a known KV dtype"),
        ("max_num_seqs=8 max_num_seqs=16", "given twice"),
    ):
        with pytest.raises(PlannerError, match=why):
            engine_settings(bad)


def test_offline_rows_simulate_the_submitters_settings(catalog, prior_only):
    from planner.benchmarks.step_rows import row_predictor
    from planner.engine import plan_memory
    from planner.serving.steady_state import offline_throughput

    row = _row(
        hardware="nvidia-h200-sxm", model="llama-3.1-8b", precision="bf16", framework="vllm",
        mode="offline", batch="", isl="128", osl="128", context_len="", metric="output_tok_s_total",
        value="1000", unit="tok/s",
    )  # fmt: skip
    tuned = {**row, "notes": "max_num_seqs=2048 max_num_batched_tokens=16384 kv_cache_dtype=fp8"}
    f_default, _, kind = row_predictor(row, catalog)
    f_tuned, _, _ = row_predictor(tuned, catalog)
    assert kind == "offline"
    # by hand: the tuned run's batch is min(sequences that fit in fp8 KV, 2048) with a
    # 16,384-token budget; the default run's min(fit in bf16 KV, vLLM's 1024 on a >= 70 GiB
    # GPU) with 8,192
    sm = step_model("llama-3.1-8b", "nvidia-h200-sxm", "bf16", "fp8", params=PRIOR, catalog=catalog)
    mp = plan_memory(
        "llama-3.1-8b", "nvidia-h200-sxm", "bf16", "fp8", context_len=256, framework="vllm",
        max_num_seqs=2048, max_batched_tokens=16384, catalog=catalog,
    )  # fmt: skip
    b = float(min(mp.max_concurrent_sequences, 2048))
    assert b > 1024  # the tuned batch is larger than the default cap
    assert f_tuned(PRIOR) == pytest.approx(offline_throughput(sm, 128, 128, b, 16384.0)[0])
    assert f_tuned(PRIOR) > f_default(PRIOR)
    # predict says which settings it simulated
    pred = Predictor(catalog)
    out = pred.predict_row(tuned)
    assert out["predicted"] == pytest.approx(f_tuned(PRIOR))
    assert out["settings"] == (
        "kv fp8 (row); engine: max_num_seqs=2048 (row), max_num_batched_tokens=16384 (row)"
    )
    d = pred.predict_row(row)
    assert d["settings"] == (
        "kv bf16 (default); engine: max_num_seqs=1024 (vllm default), "
        "max_num_batched_tokens=8192 (vllm default)"
    )
    bad = pred.predict_row({**row, "notes": "max_num_seqs=-3"})
    assert bad["predicted"] == "" and "max_num_seqs" in bad["reason"]


def test_kv_cache_dtype_tag_is_the_rows_kv_precision(catalog, prior_only):
    pred = Predictor(catalog)
    kw = dict(model="llama-3.1-70b", metric="decode_step_s", tp=4, batch=64, context_len=8192)
    col = pred.predict_row(_row(kv_precision="fp8", **kw))
    tag = pred.predict_row(_row(notes="tuned: kv_cache_dtype=fp8", **kw))
    assert tag["predicted"] == col["predicted"] and tag["settings"] == "kv fp8 (row)"
    # with vLLM and an fp8 checkpoint the default is fp8 KV too, and says so
    dflt = pred.predict_row(_row(precision="fp8", framework="vllm", **kw))
    assert dflt["settings"] == "kv fp8 (default)"


def test_serving_rows_run_the_engine_with_the_rows_settings(catalog, prior_only):
    from planner.benchmarks.serving_rows import serving_row_details

    row = _row(
        hardware="nvidia-h200-sxm", model="llama-3.2-1b", precision="bf16", framework="vllm",
        mode="concurrency", concurrency="8", batch="", isl="64", osl="32", context_len="",
        metric="output_tok_s_total", value="1000", unit="tok/s", notes="64 requests",
    )  # fmt: skip
    free = serving_row_details(row, catalog, PRIOR)
    capped = serving_row_details({**row, "notes": "64 requests; max_num_seqs=2"}, catalog, PRIOR)
    assert "max_num_seqs=1024 (vllm default)" in free["note"]
    assert "max_num_seqs=2 (row)" in capped["note"]
    # 8 clients through 2 running sequences: slower than through vLLM's default 1024
    assert capped["output_tok_s_total"] < 0.5 * free["output_tok_s_total"]


def test_vllm_defaults_follow_the_gpu_and_the_release(catalog, prior_only):
    """vLLM's V1 engine picks max_num_seqs 1024 / max_num_batched_tokens 8192 on GPUs with
    >= 70 GiB that are not A100s, 256 / 2048 elsewhere and in V0 releases (< 0.8); its
    gpu_memory_utilization was 0.9 through 0.11.0 and is 0.92 now (data/frameworks.yaml
    cites vllm/engine/arg_utils.py and vllm/config/cache.py of the 0.11.0 wheel)."""
    vllm = catalog.framework("vllm")
    h100, a100, l40s = (
        catalog.gpu(g) for g in ("nvidia-h100-sxm", "nvidia-a100-80gb-sxm", "nvidia-l40s")
    )
    # H100 SXM: 80 GiB of HBM >= 70 GiB; A100 80GB: excluded by name; L40S: 48 GB < 70 GiB
    assert vllm.scheduler_defaults(h100) == (1024, 8192)
    assert vllm.scheduler_defaults(a100) == (256, 2048)
    assert vllm.scheduler_defaults(l40s) == (256, 2048)
    assert vllm.scheduler_defaults(h100, "vLLM 0.7.3.dev138+g21f6ca217") == (256, 2048)
    assert vllm.scheduler_defaults(h100, "v0.10.2 | vllm serve") == (1024, 8192)
    assert vllm.scheduler_defaults(None) == (256, 2048)
    # no release stated: a run dated before vLLM 0.8.0 (V1 by default, posted 2025-03-19) ran
    # V0; VLLM_USE_V1=0 forces V0 in any release
    assert vllm.scheduler_defaults(h100, "vLLM (version not stated)", "2024-10-10") == (256, 2048)
    assert vllm.scheduler_defaults(h100, "vLLM (version not stated)", "2025-06-01") == (1024, 8192)
    assert vllm.scheduler_defaults(h100, "harness, VLLM_USE_V1=0, AITER kernels") == (256, 2048)
    # `planner frameworks` lists the rule (column defaults_by_gpu)
    assert vllm.scheduler_tiers[0].describe() == (
        ">= 70 GiB, not a100, from 0.8.0: 1024 seqs / 8192 tokens"
    )
    # engines without tiers keep their one default
    sgl = catalog.framework("sglang")
    assert sgl.scheduler_defaults(h100) == (
        sgl.default_max_num_seqs,
        sgl.default_max_num_batched_tokens,
    )
    assert vllm.memory_utilization_default("v0.11.0") == 0.9
    assert vllm.memory_utilization_default("vLLM 0.6.0") == 0.9
    assert vllm.memory_utilization_default(None) == 0.92
    assert vllm.memory_utilization_default("not stated") == 0.92

    # a row of vLLM 0.10.2 on one H100 runs with 0.9 of the memory: Qwen3-32B bf16 (65.5 GB of
    # weights) then holds fewer sequences than under today's 0.92, and the offline prediction
    # is the steady-state throughput at that smaller batch
    from planner.benchmarks.step_rows import row_predictor
    from planner.engine import plan_memory

    row = _row(
        hardware="nvidia-h100-sxm", model="qwen3-32b", precision="bf16", framework="vllm",
        framework_version="v0.11.0 | vllm server", mode="offline", batch="", isl="2000",
        osl="100", context_len="", metric="output_tok_s_total", value="152.42", unit="tok/s",
        notes="500 requests",
    )  # fmt: skip
    now = {**row, "framework_version": ""}
    kw = dict(
        context_len=2100,
        framework="vllm",
        catalog=catalog,
        max_num_seqs=1024,
        max_batched_tokens=8192,
    )
    old_mp = plan_memory("qwen3-32b", "nvidia-h100-sxm", "bf16", None, memory_utilization=0.9, **kw)
    new_mp = plan_memory(
        "qwen3-32b", "nvidia-h100-sxm", "bf16", None, memory_utilization=0.92, **kw
    )
    # 2 % of 85.5e9 B = 1.7e9 B less KV budget, at 262,144 B per token (64 layers x 8 KV heads
    # x 128 x 2 (K, V) x 2 B): about 6,500 tokens, 3 sequences of 2,100 tokens fewer
    assert 2 <= new_mp.max_concurrent_sequences - old_mp.max_concurrent_sequences <= 4
    f_old, _, _ = row_predictor(row, catalog)
    f_now, _, _ = row_predictor(now, catalog)
    assert f_old(PRIOR) < f_now(PRIOR)


def test_memory_fraction_tags_are_read(catalog, prior_only):
    """A tuned run's memory fraction tag (``gpu_memory_utilization=0.99`` in the MLPerf v4.1
    MI300X rows, from AMD's --gpu-memory-utilization 0.99) sets the engine's fraction."""
    from planner.benchmarks.schema import memory_fraction_from_notes
    from planner.benchmarks.step_rows import row_predictor
    from planner.engine import plan_memory
    from planner.errors import PlannerError

    assert memory_fraction_from_notes("x; gpu_memory_utilization=0.99") == 0.99
    assert memory_fraction_from_notes("mem_fraction_static=0.8; --tp 8") == 0.8
    assert memory_fraction_from_notes("kv_cache_free_gpu_mem_fraction 0.95 (table)") == 0.95
    assert memory_fraction_from_notes("no tag") is None
    for bad, why in (
        ("gpu_memory_utilization=1.5", "outside"),
        ("gpu_memory_utilization=0.9 mem_fraction_static=0.8", "given twice"),
    ):
        with pytest.raises(PlannerError, match=why):
            memory_fraction_from_notes(bad)
    row = _row(
        hardware="amd-mi300x", model="llama-3.1-70b", precision="fp8", framework="vllm",
        framework_version="vLLM 0.4.3+rocm614", mode="offline", batch="", isl="1024",
        osl="1024", context_len="", metric="output_tok_s_total", value="3000", unit="tok/s",
        notes="max_num_seqs=2048 max_num_batched_tokens=65536 kv_cache_dtype=fp8",
    )  # fmt: skip
    tagged = {**row, "notes": row["notes"] + " gpu_memory_utilization=0.99"}
    # by hand: 70B fp8 (~70.6e9 B of weights) on one MI300X (192 GiB = 206.2e9 B): the KV
    # budget grows from 0.9 x 206.2e9 - weights - activations (~114e9 B) to 0.99 x 206.2e9 -
    # the same (~133e9 B), about 16 % more sequences of 2,048 tokens
    kw = dict(
        context_len=2048,
        framework="vllm",
        catalog=catalog,
        max_num_seqs=2048,
        max_batched_tokens=65536,
    )
    lo = plan_memory("llama-3.1-70b", "amd-mi300x", "fp8", "fp8", memory_utilization=0.9, **kw)
    hi = plan_memory("llama-3.1-70b", "amd-mi300x", "fp8", "fp8", memory_utilization=0.99, **kw)
    assert 1.12 < hi.max_concurrent_sequences / lo.max_concurrent_sequences < 1.20
    f_plain, _, _ = row_predictor(row, catalog)
    f_tag, _, _ = row_predictor(tagged, catalog)
    assert f_tag(PRIOR) > f_plain(PRIOR)
    bad, why, _ = row_predictor({**row, "notes": "gpu_memory_utilization=2"}, catalog)
    assert bad is None and "outside" in why
