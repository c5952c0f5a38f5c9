"""``planner simulate`` and ``planner capacity`` through the real entry point."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from planner.cli.main import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CHAT = str(EXAMPLES / "chat-8b.yaml")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_the_commands_with_examples(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "simulate" in out and "capacity" in out
    for cmd in ("simulate", "capacity"):
        code, out, _ = run(capsys, cmd, "--help")
        assert code == 0
        assert "example:" in out and f"planner {cmd} " in out.split("example:")[-1]
        assert "examples/" in out
        assert "--format" in out and "--calibration" in out and "--data-dir" in out


def test_simulate_json(capsys):
    code, out, err = run(
        capsys, "simulate", CHAT, "--requests", "300", "--rate", "10", "--format", "json"
    )
    assert code == 0, err
    d = json.loads(out)
    for k in (
        "replica",
        "throughput_rps",
        "output_tok_s",
        "output_tok_s_per_gpu",
        "goodput_rps",
        "slo_attainment",
        "kv_util_mean",
        "preemptions",
        "percentiles",
    ):
        assert k in d
    metrics = {r["metric"] for r in d["percentiles"]}
    assert metrics == {"TTFT", "TPOT", "ITL", "E2E"}
    assert d["rate_rps"] == 10
    assert d["requests"] == 300


def test_simulate_table_and_csv(capsys):
    code, out, _ = run(capsys, "simulate", CHAT, "--requests", "200", "--rate", "5")
    assert code == 0
    assert "latency percentiles" in out and "TTFT" in out and "goodput_rps" in out
    code, out, _ = run(capsys, "simulate", CHAT, "--requests", "200", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["metric"] for r in rows] == ["TTFT", "TPOT", "ITL", "E2E"]
    assert float(rows[0]["p99_s"]) >= float(rows[0]["p50_s"]) > 0


def test_simulate_modes(capsys):
    code, out, err = run(
        capsys, "simulate", CHAT, "--requests", "200", "--concurrency", "16", "--format", "json"
    )
    assert code == 0, err
    assert json.loads(out)["mode"].startswith("closed loop")
    code, out, err = run(
        capsys,
        "simulate",
        str(EXAMPLES / "batch-offline.yaml"),
        "--requests",
        "300",
        "--format",
        "json",
    )
    assert code == 0, err
    assert json.loads(out)["mode"] == "offline"
    code, out, err = run(
        capsys, "simulate", CHAT, "--requests", "100", "--static", "--format", "json"
    )
    assert code == 0, err
    assert "static" in json.loads(out)["mode"]


def test_capacity_json_keys(capsys):
    code, out, err = run(capsys, "capacity", CHAT, "--requests", "300", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    for k in (
        "max_rate_per_replica",
        "replicas",
        "num_gpus",
        "ttft_p99_s",
        "tpot_p99_s",
        "gpu_hours_per_day",
        "curve",
        "knee_concurrency",
        "limited_by",
    ):
        assert k in d, k
    assert d["max_rate_per_replica"] > 0
    assert d["num_gpus"] == d["replicas"] * d["gpus_per_replica"]
    assert d["replicas"] * d["max_rate_per_replica"] >= d["peak_rps"] * (1 + d["headroom"]) - 1e-9
    assert sum(r["is_knee"] for r in d["curve"]) == 1


def test_capacity_csv_is_the_curve(capsys):
    code, out, err = run(capsys, "capacity", CHAT, "--requests", "200", "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and "concurrency" in rows[0] and "output_tok_s" in rows[0] and "is_knee" in rows[0]
    assert [int(r["concurrency"]) for r in rows] == sorted(int(r["concurrency"]) for r in rows)


def test_capacity_table_with_tp_comparison(capsys):
    code, out, err = run(
        capsys,
        "capacity",
        str(EXAMPLES / "rag-70b.yaml"),
        "--requests",
        "200",
        "--no-curve",
        "--compare-tp",
        "2,4",
        "--headroom",
        "0.5",
    )
    assert code == 0, err
    assert "max_rate_per_replica" in out and "one big-TP replica vs several small ones" in out
    assert "headroom                      0.5" in out


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["simulate", "nope.yaml"], "scenario file not found"),
        (["capacity", CHAT, "--gpu", "nvidia-h100-sxmm"], "unknown gpu"),
        (["simulate", CHAT, "--requests", "0"], "must be > 0"),
        (["capacity", CHAT, "--compare-tp", "2,x"], "TP sizes"),
    ],
)
def test_errors_are_one_line_exit_2(capsys, argv, msg):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert msg in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_scenario_errors_and_unreachable_slo(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "model: llama-3.1-8b\nworkload: {preset: chat, traffic: {mean_rps: 1, peak_rsp: 2}}\n"
    )
    code, _, err = run(
        capsys,
        "simulate",
        str(bad),
        "--gpu",
        "nvidia-h100-sxm",
        "--framework",
        "vllm",
        "--precision",
        "bf16",
    )
    assert code == 2 and "workload.traffic.peak_rsp: unknown field; did you mean peak_rps?" in err
    tight = tmp_path / "tight.yaml"
    tight.write_text(
        "model: llama-3.1-8b\nworkload: {preset: rag, traffic: {mean_rps: 1}}\n"
        "slo: {ttft: {max_s: 0.001, percentile: p50}}\n"
    )
    code, _, err = run(
        capsys,
        "capacity",
        str(tight),
        "--gpu",
        "nvidia-h100-sxm",
        "--framework",
        "vllm",
        "--precision",
        "bf16",
        "--no-curve",
    )
    assert code == 2 and "unreachable even at zero load: TTFT alone is" in err
    code, _, err = run(capsys, "capacity", str(tight))
    assert code == 2 and "no gpu, framework, precision given" in err
    huge = tmp_path / "huge.yaml"
    huge.write_text("model: llama-3.1-70b\nworkload: {preset: chat, traffic: {mean_rps: 1}}\n")
    code, _, err = run(
        capsys,
        "simulate",
        str(huge),
        "--gpu",
        "nvidia-l4",
        "--framework",
        "vllm",
        "--precision",
        "bf16",
    )
    assert code == 2 and "does not fit" in err and err.count("\n") == 1


# --------------------------------------------------------------------------- review fixes
def _deployed(tmp_path, workload: str, name: str = "s.yaml") -> str:
    f = tmp_path / name
    f.write_text(
        "model: llama-3.1-8b\n"
        "deployment: {gpu: nvidia-h100-sxm, framework: vllm, precision: bf16}\n"
        f"workload: {workload}\n"
    )
    return str(f)


@pytest.mark.parametrize(
    "workload,files,msg",
    [
        ("{preset: chat, traffic: {peak_rps: .inf}}", {}, "peak_rps: Input should be a finite"),
        (
            "{preset: chat, traffic: {mean_rps: 5, daily_profile: [.nan" + ", 1" * 23 + "]}}",
            {},
            r"daily_profile\[0\]",
        ),
        (
            "{traffic: {arrival: trace, trace_path: t.csv}, input_tokens: {kind: trace}, "
            "output_tokens: {kind: trace}}",
            {"t.csv": "timestamp,input_tokens,output_tokens\n0,100,50\n1,200\n"},
            "line 3: output_tokens is not a number",
        ),
        (
            "{traffic: {arrival: trace, trace_path: t.csv}, input_tokens: {kind: trace}, "
            "output_tokens: {kind: trace}}",
            {"t.csv": "timestamp,input_tokens,output_tokens\n0,100,50\n"},
            "two distinct timestamps",
        ),
        (  # two timestamps 1e-320 s apart: a finite span but an infinite arrival rate
            "{traffic: {arrival: trace, trace_path: t.csv}, input_tokens: {kind: trace}, "
            "output_tokens: {kind: trace}}",
            {"t.csv": "timestamp,input_tokens,output_tokens\n0,100,50\n1e-320,100,50\n"},
            "not a finite number",
        ),
        (
            "{traffic: {mean_rps: 2}, input_tokens: {kind: histogram, path: sub}, "
            "output_tokens: {kind: fixed, tokens: 10}}",
            {"sub/": ""},
            "is a folder",
        ),
    ],
)
def test_bad_inputs_are_one_line_errors_not_crashes(capsys, tmp_path, workload, files, msg):
    for name, text in files.items():
        if name.endswith("/"):
            (tmp_path / name).mkdir()
        else:
            (tmp_path / name).write_text(text)
    path = _deployed(tmp_path, workload)
    for argv in (("simulate", path), ("capacity", path, "--no-curve")):
        code, out, err = run(capsys, *argv, "--requests", "50")
        assert code == 2, (argv, out)
        assert re.search(msg, err), err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_non_utf8_scenario_is_a_one_line_error(capsys, tmp_path):
    f = tmp_path / "binary.yaml"
    f.write_bytes(b"\xff\xfe\x00bad")
    code, _, err = run(capsys, "simulate", str(f))
    assert code == 2 and "not a UTF-8 text file" in err and err.count("\n") == 1


def test_compare_tp_row_of_the_own_tp_is_the_main_answer(capsys):
    code, out, err = run(
        capsys,
        "capacity",
        CHAT,
        "--kv-precision",
        "fp8",
        "--pp",
        "2",
        "--seed",
        "3",
        "--requests",
        "150",
        "--no-curve",
        "--compare-tp",
        "1",
        "--format",
        "json",
    )
    assert code == 0, err
    d = json.loads(out)
    (row,) = d["compare_tp"]
    assert row["tp"] == 1 and row["fits"]
    assert row["max_rate_per_replica"] == d["max_rate_per_replica"]
    assert "pp=2" in d["replica"]
