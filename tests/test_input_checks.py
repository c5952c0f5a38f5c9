"""Regression tests for input checks found in review: every command agrees on what a valid
deployment is, bad measurement rows never reach a fit, and a bad row never stops `predict`."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from conftest import DATA_DIR, FIXTURES

from planner.benchmarks import Predictor, load_measurements
from planner.calibration import prepare_rows
from planner.catalog import load_catalog, resolve_params
from planner.cli.main import main
from planner.engine import decode_step, plan_memory, step_model
from planner.errors import PlannerError

CAT = load_catalog()
ROWS = FIXTURES / "calibration" / "two_step_rows.csv"


def _mutated(tmp_path, **cells) -> str:
    df = pd.read_csv(ROWS, dtype=str)
    for k, v in cells.items():
        df.loc[1, k] = v
    p = tmp_path / "rows.csv"
    df.to_csv(p, index=False)
    return str(p)


# ---------------------------------------------------------------- one notion of a valid layout
def test_memory_rejects_a_precision_the_gpu_cannot_run():
    # MI250X (CDNA2) has no FP8 path in the catalog; estimate and simulate already refuse it
    with pytest.raises(PlannerError, match="not supported on amd-mi250x"):
        plan_memory("llama-3.1-8b", "amd-mi250x", "fp8", catalog=CAT)


@pytest.mark.parametrize("tp", [3, 64])
def test_memory_rejects_tp_that_does_not_divide_heads(tp):
    # Llama-3.1-8B has 32 query heads: 32 % 3 != 0, 32 % 64 != 0
    with pytest.raises(PlannerError, match="does not divide the 32 attention heads"):
        plan_memory("llama-3.1-8b", "nvidia-h100-sxm", "bf16", tp=tp, catalog=CAT)


def test_suggestions_name_only_valid_tp():
    # Falcon-180B has 232 = 8 x 29 heads: tp 16 is not a valid layout, so never suggested
    plan = plan_memory("falcon-180b", "nvidia-l40s", "bf16", context_len=2048, catalog=CAT)
    assert not plan.fits
    for s in plan.suggestions:
        if s.startswith("tp="):
            tp = int(s.split()[0][3:])
            assert 232 % tp == 0, s


def test_step_model_rejects_pp_beyond_layers():
    with pytest.raises(PlannerError, match="pp=999 exceeds the 32 layers"):
        step_model("llama-3.1-8b", "nvidia-h100-sxm", "bf16", pp=999, catalog=CAT)


def test_cli_memory_unsupported_precision_is_exit_2(capsys):
    assert (
        main(["memory", "--model", "llama-3.1-8b", "--gpu", "amd-mi250x", "--precision", "fp8"])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not supported" in err[0]


def test_cli_huge_integer_is_exit_2(capsys):
    assert (
        main(
            ["memory", "--model", "llama-3.1-8b", "--gpu", "nvidia-h100-sxm", "--context", "9" * 60]
        )
        == 2
    )
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


# ---------------------------------------------------------------- measurements
def test_step_values_in_ms_are_converted_to_seconds(tmp_path):
    df = pd.read_csv(ROWS, dtype=str)
    df["value"] = [str(float(v) * 1000) for v in df["value"]]
    df["unit"] = "ms"
    p = tmp_path / "ms.csv"
    df.to_csv(p, index=False)
    loaded = load_measurements(p, CAT)
    assert loaded["value"].tolist() == pytest.approx([0.0155586, 0.00610654], rel=1e-12)
    assert set(loaded["unit"]) == {"s"}


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ({"precision": "bf61"}, "unknown precision 'bf61' in rows fx-0002"),
        ({"kv_precision": "fp9"}, "unknown kv_precision 'fp9' in rows fx-0002"),
        ({"tp": "1.5"}, "tp must be a whole number in rows fx-0002"),
        ({"batch": "0.5"}, "batch must be a whole number in rows fx-0002"),
        ({"tp": "one"}, "tp is not a number in rows fx-0002"),
        ({"n_gpus": "3", "tp": "2"}, "n_gpus is not a multiple of tp x pp in rows fx-0002"),
        ({"unit": "tok/s"}, "step metrics need a time unit"),
    ],
)
def test_bad_rows_are_rejected_before_any_fit(tmp_path, cells, message):
    with pytest.raises(PlannerError, match=message):
        load_measurements(_mutated(tmp_path, **cells), CAT)


def test_resolve_params_accepts_precision_aliases():
    exact = resolve_params("nvidia-h100-sxm", "trtllm", "fp8", catalog=CAT)
    upper = resolve_params("nvidia-h100-sxm", "trtllm", "FP8", catalog=CAT)
    assert upper == exact
    assert exact[1].startswith("fit (trtllm/nvidia-h100-sxm/fp8")


# ---------------------------------------------------------------- predict never raises on a row
def test_predict_row_with_zero_output_length_gets_a_reason():
    row = {
        "id": "x1",
        "hardware": "nvidia-h100-sxm",
        "n_gpus": "1",
        "tp": "1",
        "pp": "1",
        "model": "llama-3.1-8b",
        "precision": "fp8",
        "framework": "trtllm",
        "mode": "offline",
        "isl": "128",
        "osl": "0",
        "metric": "total_tok_s",
        "value": "1000",
        "unit": "tok/s",
    }
    out = Predictor(CAT).predict_row(row)
    assert out["predicted"] == ""
    assert "osl must be > 0" in out["reason"] or "one output token" in out["reason"]


def test_prepare_rows_reason_for_uneven_gpu_count():
    df = pd.DataFrame(
        [
            {
                "id": "u1",
                "source": "t",
                "hardware": "nvidia-h100-sxm",
                "n_gpus": 3,
                "tp": 2,
                "pp": 1,
                "model": "llama-3.1-8b",
                "precision": "fp8",
                "framework": "trtllm",
                "mode": "offline",
                "isl": 128,
                "osl": 128,
                "metric": "output_tok_s_total",
                "value": 1000.0,
                "unit": "tok/s",
            }
        ]
    )
    (row,) = prepare_rows(df, CAT)
    assert not row.ok and "not a multiple of tp x pp" in row.reason


# ---------------------------------------------------------------- catalogs and files
def test_infinite_catalog_number_is_rejected(tmp_path):
    d = tmp_path / "data"
    shutil.copytree(DATA_DIR, d, ignore=shutil.ignore_patterns("benchmarks", "calibration"))
    hw = (d / "hardware.yaml").read_text()
    (d / "hardware.yaml").write_text(hw.replace("mem_bw_gbs: 3350", "mem_bw_gbs: .inf", 1))
    with pytest.raises(PlannerError, match="mem_bw_gbs"):
        load_catalog(d)


def test_non_utf8_config_json_is_a_one_line_error(tmp_path, capsys):
    p = tmp_path / "config.json"
    p.write_bytes(b"\xff\xfe\x00bad")
    code = main(["memory", "--model", str(p), "--gpu", "nvidia-h100-sxm"])
    assert code == 2
    assert "not a UTF-8 text file" in capsys.readouterr().err


def test_decode_step_unchanged_by_checks():
    # the layout check must not change the numbers of a valid layout (8B, tp=2)
    sm = step_model("llama-3.1-8b", "nvidia-h100-sxm", "bf16", tp=2, catalog=CAT)
    assert float(decode_step(sm, 8, 1024).time_s) > 0


# ---------------------------------------------------------------- one framework x vendor rule
# TensorRT-LLM lists only nvidia GPUs (data/frameworks.yaml); the MI300X is amd. Every command
# that puts a framework on a GPU must refuse it the same way (catalog.compat).
TRT_ON_AMD = "TensorRT-LLM runs on nvidia GPUs; amd-mi300x is amd"
_DEPLOY = ["--gpu", "amd-mi300x", "--framework", "trtllm"]


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "--model", "llama-3.1-8b", *_DEPLOY],
        ["estimate", "--model", "llama-3.1-8b", *_DEPLOY, "--precision", "bf16",
         "--batch", "1", "--input-len", "16", "--output-len", "16"],
        ["simulate", str(DATA_DIR.parent / "examples" / "chat-8b.yaml"), *_DEPLOY],
        ["capacity", str(DATA_DIR.parent / "examples" / "chat-8b.yaml"), *_DEPLOY],
    ],
    ids=["memory", "estimate", "simulate", "capacity"],
)  # fmt: skip
def test_every_command_refuses_a_framework_off_its_vendor(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and TRT_ON_AMD in err, err


def test_predict_and_recommend_use_the_same_rule(tmp_path):
    from planner.catalog.compat import framework_gpu_problem
    from planner.recommend.options import enumerate_options

    row = {
        "id": "x", "source": "s", "hardware": "amd-mi300x", "model": "llama-3.1-8b",
        "precision": "bf16", "framework": "trtllm", "tp": "1", "batch": "1", "isl": "128",
        "metric": "prefill_s", "value": "0.01", "unit": "s",
    }  # fmt: skip
    out = Predictor(CAT).predict_row(row)  # rows: benchmarks.schema.unexpressible_reason
    assert out["predicted"] == "" and "does not run on amd GPUs" in out["reason"]
    opts, rejected = enumerate_options(
        CAT, CAT.model("llama-3.1-8b"), gpus=("amd-mi300x",), frameworks=("trtllm",)
    )
    assert not opts
    assert [r.reason for r in rejected] == [TRT_ON_AMD]
    assert framework_gpu_problem(CAT.framework("trtllm"), CAT.gpu("amd-mi300x")) == TRT_ON_AMD
    # and the rule lets a listed vendor through: vLLM lists amd
    assert framework_gpu_problem(CAT.framework("vllm"), CAT.gpu("amd-mi300x")) is None


# ---------------------------------------------------------------- one rule for catalog values
def _catalog_copy(tmp_path):
    d = tmp_path / "data"
    shutil.copytree(DATA_DIR, d)
    return d


def _edit_first(path, key, field, value):
    import yaml

    raw = yaml.safe_load(path.read_text())
    raw[key][0][field] = value
    path.write_text(yaml.safe_dump(raw, sort_keys=False))


@pytest.mark.parametrize(
    "file,key,field,value,expect",
    [
        ("hardware.yaml", "accelerators", "tdp_w", True, "field 'tdp_w': must be a number, not a bool"),
        ("hardware.yaml", "accelerators", "memory_gb", "80", "field 'memory_gb': must be a number, not a str"),
        ("hardware.yaml", "accelerators", "as_of", "2999-01-01", "field 'as_of': as_of 2999-01-01 is in the future"),
        ("models.yaml", "models", "num_hidden_layers", True, "field 'num_hidden_layers': must be a number"),
        ("precisions.yaml", "precisions", "weight_bits", "16", "field 'weight_bits': must be a number"),
        ("frameworks.yaml", "frameworks", "default_memory_utilization", False, "must be a number, not a bool"),
        ("quality.yaml", "quality", "baseline_score", True, "field 'baseline_score': must be a number"),
        ("quality.yaml", "quality", "as_of", "2999-12-31", "field 'as_of': as_of 2999-12-31 is in the future"),
    ],
)  # fmt: skip
def test_catalog_values_follow_one_rule(tmp_path, file, key, field, value, expect):
    from planner.cost.data import load_quality

    d = _catalog_copy(tmp_path)
    _edit_first(d / file, key, field, value)
    with pytest.raises(PlannerError, match=f"^{file}: {key}\\[0\\].*") as e:
        load_quality(d) if file == "quality.yaml" else load_catalog(d)
    assert expect in str(e.value)


def test_the_rule_covers_every_number_field():
    # every int/float field of every catalog record refuses a bool and a string, so a field
    # added later is covered without a new check (the bundled records are the starting point)
    from pydantic import ValidationError

    from planner.catalog.records import _field_kinds
    from planner.cost.data import load_quality

    records = [CAT.accelerators[0], CAT.models[0], CAT.precisions[0], CAT.frameworks[0]]
    records += [CAT.kv_precisions[0], load_quality().rows[0]]
    n = 0
    for rec in records:
        data = rec.model_dump()
        for name, kind in _field_kinds(type(rec)).items():
            if kind != "number":
                continue
            for bad in (True, "1"):
                with pytest.raises(ValidationError, match=name):
                    type(rec).model_validate({**data, name: bad})
                n += 1
    assert n >= 2 * 40  # Accelerator alone has 13 number fields, ModelArch over 20


def test_a_reversed_range_is_refused():
    from pydantic import ValidationError

    from planner.catalog.prices import PurchasePrice

    row = {"gpu": "nvidia-h100-sxm", "kind": "estimate", "source": "test", "as_of": "2025-01-01"}
    with pytest.raises(ValidationError, match="low <= high"):
        PurchasePrice.model_validate({**row, "usd_range": [40000, 25000]})
    assert PurchasePrice.model_validate({**row, "usd_range": [25000, 40000]}).usd_range


def test_a_duplicate_quality_row_is_refused(tmp_path):
    import yaml

    from planner.cost.data import load_quality

    d = _catalog_copy(tmp_path)
    raw = yaml.safe_load((d / "quality.yaml").read_text())
    raw["quality"].append(raw["quality"][0])
    (d / "quality.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    n = len(raw["quality"]) - 1
    with pytest.raises(PlannerError, match=rf"quality\[{n}\] .* repeats quality\[0\]"):
        load_quality(d)


def test_a_duplicate_catalog_row_is_refused(tmp_path):
    import yaml

    d = _catalog_copy(tmp_path)
    raw = yaml.safe_load((d / "hardware.yaml").read_text())
    raw["accelerators"].append(raw["accelerators"][0])
    (d / "hardware.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(PlannerError, match="duplicate id or alias"):
        load_catalog(d)


# ---------------------------------------------------------------- traces: nothing ignored
# 5 requests at t = 10, 11, 12, 14, 18 s: span 8 s, so 4 gaps / 8 s = 0.5 req/s; prompts of
# 4000-6000 tokens, far longer than any preset's (chat: ShareGPT-shaped, a few hundred).
TRACE = "timestamp,input_tokens,output_tokens\n10,4000,300\n11,5000,200\n12,6000,400\n14,4000,300\n18,5000,100\n"


def _trace(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text(TRACE)
    return str(f)


@pytest.mark.parametrize("traffic", [{}, {"arrival": "trace"}], ids=["no arrival", "arrival trace"])
def test_a_trace_under_a_preset_replays_the_trace(tmp_path, traffic):
    import numpy as np

    from planner.workload import preset

    w = preset("chat", traffic={"trace_path": _trace(tmp_path), **traffic})
    assert w.traffic.arrival == "trace"
    assert w.traffic.mean_rps is None and w.traffic.daily_profile is None  # not the preset's
    assert w.traffic.peak() == pytest.approx(0.5)
    r = w.sample_requests(5, np.random.default_rng(0))
    assert r.arrival_s.tolist() == [0, 1, 2, 4, 8]
    assert r.input_tokens.tolist() == [4000, 5000, 6000, 4000, 5000]
    assert r.output_tokens.tolist() == [300, 200, 400, 300, 100]


def test_saturation_uses_the_trace_lengths(tmp_path):
    from planner.serving import build_replica
    from planner.serving.steady_state import steady_state
    from planner.workload import preset

    f = _trace(tmp_path)
    rep = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm", catalog=CAT)
    implicit = preset("chat", traffic={"trace_path": f})
    explicit = preset(
        "chat",
        traffic={"arrival": "trace", "trace_path": f},
        input_tokens={"kind": "trace"},
        output_tokens={"kind": "trace"},
    )
    sat = steady_state(rep, implicit).saturation_rps
    assert sat == steady_state(rep, explicit).saturation_rps
    # 10x longer prompts than the chat preset's: saturation well below the preset's own
    assert sat < 0.5 * steady_state(rep, preset("chat")).saturation_rps


@pytest.mark.parametrize(
    "traffic,match",
    [
        ({"arrival": "poisson", "trace_path": "t.csv"}, "trace_path is only read with arrival: trace"),
        ({"arrival": "poisson", "mean_rps": 1, "cv": 2}, "cv is only read with arrival: gamma"),
    ],
)  # fmt: skip
def test_a_field_the_arrival_mode_ignores_is_an_error(tmp_path, traffic, match):
    from planner.scenario import scenario_from_dict

    d = {"model": "llama-3.1-8b", "workload": {"preset": "chat", "traffic": traffic}}
    with pytest.raises(PlannerError, match=f"workload.traffic: {match}"):
        scenario_from_dict(d, base_dir=tmp_path)


def test_a_preset_switched_off_gamma_drops_its_cv():
    from planner.workload import preset

    w = preset("code", traffic={"arrival": "poisson"})
    assert w.traffic.cv is None and w.traffic.burstiness() == 1.0


# ---------------------------------------------------------------- calibrate: refuse, do not guess
_STEPS = DATA_DIR / "benchmarks" / "reference_h200.csv"  # pytorch on nvidia-h200-sxm
_LOG = DATA_DIR / "benchmarks" / "serving_raw" / "reference_h200_iterations.csv.gz"


def _log(tmp_path, n, **cols):
    df = pd.read_csv(_LOG, nrows=n, dtype={"rate": str})
    for k, v in cols.items():
        df[k] = v
    p = tmp_path / "iterations.csv"
    df.to_csv(p, index=False)
    return p


@pytest.mark.parametrize(
    "n,cols,expect",
    [
        # 6 fitted terms x 20 iterations each = 120 rows at least
        (1, {}, "1 iteration of pytorch on nvidia-h200-sxm; fitting the 6 serving terms needs at least 120"),
        (119, {}, "119 iterations of pytorch"),
        (200, {"sched_s": 0, "prep_launch_s": 0, "sync_wait_s": 0, "book_s": 0}, "row 2: the iteration's wall time"),
        (200, {"framework": "vllm"}, "the step data has no vllm rows"),
        (200, {"hardware": "amd-mi300x", "framework": "trtllm"}, "TensorRT-LLM runs on nvidia GPUs"),
    ],
    ids=["1 row", "119 rows", "zero wall times", "framework without step rows", "framework off vendor"],
)  # fmt: skip
def test_calibrate_iterations_refuses_what_it_cannot_fit(tmp_path, capsys, n, cols, expect):
    steps = tmp_path / "steps.csv"
    steps.write_text("\n".join(_STEPS.read_text().splitlines()[:41]) + "\n")
    out = tmp_path / "profile.yaml"
    out.write_text("old profile\n")
    rc = main(["calibrate", str(steps), "--iterations", str(_log(tmp_path, n, **cols)), "-o", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and expect in err, err
    assert out.read_text() == "old profile\n"


def test_fit_iterations_itself_refuses_a_short_log(tmp_path):
    from planner.calibration.iterations import fit_iterations, read_iteration_log

    df = read_iteration_log(_log(tmp_path, 3))
    with pytest.raises(PlannerError, match="3 iterations .* needs at least 120"):
        fit_iterations(df, lambda *a: resolve_params(*a, catalog=CAT)[0], CAT)


@pytest.mark.parametrize(
    "flags,expect",
    [
        (["--tp", "3"], "tp=3 does not divide the 32 attention heads of llama-3.1-8b"),
        (["--precision", "fp8", "--gpu", "amd-mi250x"], "precision fp8 is not supported on amd-mi250x"),
    ],
)  # fmt: skip
def test_calibrate_vllm_json_flags_that_cannot_run_are_refused(tmp_path, capsys, flags, expect):
    out = tmp_path / "p.yaml"
    argv = ["calibrate", str(FIXTURES / "calibration" / "vllm_bench_rate.json"),
            "--gpu", "nvidia-h100-sxm", "--model", "llama-3.1-8b", *flags, "-o", str(out)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "vllm_bench_rate.json: the flags given for this vllm bench JSON do not run" in err
    assert expect in err and err.count("\n") == 1 and not out.exists()


# ---------------------------------------------------------------- the documented examples run
def test_every_length_example_in_the_help_and_readme_is_valid():
    import re

    from pydantic import TypeAdapter

    from planner.cli._common import parse_length
    from planner.cli.recommend import RECOMMEND_EXAMPLE
    from planner.workload.workload import LengthDist

    texts = RECOMMEND_EXAMPLE + (DATA_DIR.parent / "README.md").read_text()
    flags = set(re.findall(r"\b((?:lognormal|normal|uniform):[a-z_0-9=.,]+[0-9])", texts))
    maps = set(re.findall(r"\{kind: lognormal[^}]*\}", texts))
    assert "lognormal:mean=800,p90=1600" in flags and maps
    adapter = TypeAdapter(LengthDist)
    for f in flags:
        adapter.validate_python(parse_length(f, "--input-tokens"))
    import yaml

    for m in maps:
        adapter.validate_python(yaml.safe_load(m))


def test_lognormal_mean_p90_bound_hand_derived():
    # mean = exp(mu + s^2/2), p90 = exp(mu + z s) with z = 1.2816, so ln(p90/mean) = z s - s^2/2,
    # whose largest value (at s = z) is z^2/2 = 0.8212: p90/mean <= e^0.8212 = 2.273.
    # mean 800, p90 2000 (ratio 2.5, the old --help example) has no lognormal; p90 1600 (ratio
    # 2) does: s = z - sqrt(z^2 - 2 ln 2) = 1.2816 - sqrt(1.6424 - 1.3863) = 0.7755,
    # median = 800 exp(-s^2/2) = 800 x 0.7402 = 592.
    from planner.workload.lengths import LognormalLength

    d = LognormalLength(mean=800, p90=1600)
    assert d.params()[1] == pytest.approx(0.7755, abs=1e-4)
    assert d.quantile_tokens(0.5) == pytest.approx(592.2, abs=0.5)
    assert d.quantile_tokens(0.9) == pytest.approx(1600, rel=1e-9)
    assert d.mean_tokens() == pytest.approx(800, rel=1e-9)
    with pytest.raises(ValueError, match="at most 2.27"):
        LognormalLength(mean=800, p90=2000)


@pytest.mark.parametrize("flag", [["--rate", "5"], ["--concurrency", "4"]])
def test_an_offline_scenario_refuses_a_traffic_flag_it_would_ignore(tmp_path, capsys, flag):
    s = tmp_path / "offline.yaml"
    s.write_text(
        "model: llama-3.1-8b\nworkload: {preset: chat, offline: true}\n"
        "deployment: {gpu: nvidia-h100-sxm, framework: vllm, precision: bf16}\n"
    )
    assert main(["simulate", str(s), "--requests", "50", *flag]) == 2
    err = capsys.readouterr().err
    assert f"{flag[0]} would be ignored" in err and "offline: true" in err
