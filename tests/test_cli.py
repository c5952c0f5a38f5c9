"""The command line (every subcommand, every format, every error path) and the app page."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import DATA_DIR, REPO_ROOT

from planner import cli
from planner.cli import catalogs as cli_catalogs
from planner.engine import plan_memory

MEM_ARGS = ["memory", "--model", "llama-3.1-70b", "--gpu", "nvidia-h100-sxm", "--precision",
            "fp8", "--tp", "2", "--context", "8192"]  # fmt: skip
EST_ARGS = ["estimate", "--model", "llama-3.1-8b", "--gpu", "nvidia-h100-sxm", "--precision",
            "bf16", "--framework", "vllm", "--batch", "8", "--input-len", "1024",
            "--output-len", "256"]  # fmt: skip


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, out, err, *parts):
    assert code == 2, (code, err)
    assert err.startswith("planner: error: "), err
    assert err.count("\n") == 1 and err.endswith("\n"), f"not one line: {err!r}"
    assert "Traceback" not in err
    for p in parts:
        assert p in err, (p, err)


# --------------------------------------------------------------------------- help
def _commands() -> list[str]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sorted(sub.choices)


@pytest.mark.parametrize("command", _commands())
def test_every_command_has_help_with_example(capsys, command):
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    # the epilog's section ("example:" or "examples:"; an example's own path may hold
    # "examples/", so split on the heading); tests/test_help_examples.py runs each line
    assert "example" in out and "planner " in re.split(r"\nexamples?:", out)[-1]
    assert "--format" in out and "--data-dir" in out and "--calibration" in out


def test_top_level_help_and_version(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "memory" in out and "example" in out
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip().startswith("planner ")


# --------------------------------------------------------------------------- catalogs
@pytest.mark.parametrize("command", ["gpus", "models", "precisions", "frameworks"])
def test_catalog_listings_in_every_format(capsys, catalog, command):
    code, out, _ = run(capsys, command, "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert len(rows) >= 3 and all(r["source"] for r in rows) and all(r["as_of"] for r in rows)
    code, out, _ = run(capsys, command, "--format", "csv")
    back = list(csv.DictReader(io.StringIO(out)))
    assert len(back) == len(rows) and "source" in back[0]
    code, out, _ = run(capsys, command)
    assert code == 0 and out.splitlines()[1].startswith("--")  # header rule of the table


def test_models_shows_computed_next_to_published(capsys):
    code, out, _ = run(capsys, "models", "--format", "json")
    rows = {r["id"]: r for r in json.loads(out)}
    ds = rows["deepseek-v3"]
    assert ds["params_total_b"] == pytest.approx(671.026, abs=1e-3)
    assert ds["params_active_b"] == pytest.approx(37.552, abs=1e-3)
    assert ds["published_total_b"] == 671
    assert ds["total_diff_pct"] == pytest.approx(100 * (671.026404352 / 671 - 1), abs=0.01)
    assert rows["llama-3.1-8b"]["kv_bf16_bytes_per_token"] == 131_072


# --------------------------------------------------------------------------- memory
def test_memory_json_matches_library(capsys, catalog):
    code, out, _ = run(capsys, *MEM_ARGS, "--format", "json")
    assert code == 0
    d = json.loads(out)
    plan = plan_memory("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=2, context_len=8192,
                       catalog=catalog)  # fmt: skip
    for key in ("weight_bytes_per_gpu", "kv_cache_bytes_per_token", "max_concurrent_sequences",
                "fits", "reason"):  # fmt: skip
        assert d[key] == getattr(plan, key), key
    assert d["suggestions"] == []
    # bf16 KV (the catalog's default with fp8 weights), 4 of 8 KV heads per GPU
    assert d["kv_cache_bytes_per_token"] == 80 * 2 * 4 * 128 * 2


def test_memory_table_uses_human_units(capsys):
    code, out, _ = run(capsys, *MEM_ARGS)
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("weight_bytes_per_gpu"))
    assert line.rstrip().endswith("GB")
    assert any(x.startswith("fits") and x.rstrip().endswith("yes") for x in out.splitlines())


def test_memory_csv_is_one_row_of_raw_numbers(capsys):
    code, out, _ = run(capsys, *MEM_ARGS, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == 1
    assert float(rows[0]["weight_bytes_per_gpu"]) > 3e10  # bytes, not GB


def test_memory_does_not_fit_is_a_result_not_an_error(capsys):
    code, out, err = run(capsys, "memory", "--model", "llama-3.1-405b", "--gpu",
                         "nvidia-h100-sxm", "--format", "json")  # fmt: skip
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["fits"] is False and "does not fit" in d["reason"] and d["suggestions"]


def test_memory_with_framework_and_config_path(capsys, fixtures_dir):
    code, out, _ = run(capsys, "memory", "--model", str(fixtures_dir / "mixtral.json"), "--gpu",
                       "nvidia-h200-sxm", "--framework", "vllm", "--memory-utilization", "0.85",
                       "--format", "json")  # fmt: skip
    d = json.loads(out)
    assert code == 0 and d["memory_utilization"] == 0.85 and d["fits"]


# --------------------------------------------------------------------------- estimate
def test_estimate_json(capsys):
    # TensorRT-LLM: its H100 node is fitted on 11 sources. The vLLM H100 node is fitted on one
    # source's offline rows (GPUStack: 1,000 requests at once, prompts up to 32k tokens), which
    # it explains with slow small-batch GEMMs (compute_eff 0.38, half efficiency at 140
    # tokens), so its batch-8 decode comes out compute-bound (docs/calibration.md)
    args = [("trtllm" if a == "vllm" else a) for a in EST_ARGS]
    code, out, _ = run(capsys, *args, "--format", "json")
    assert code == 0
    d = json.loads(out)
    assert 0 < d["prefill_s"] < 1 and 0 < d["tpot_s"] < 0.1
    # trtllm-serve's first-token path (0.14 s, data/calibration/latency.yaml) delays the
    # tokens' delivery, outside the engine: E2E = prefill + 255 x TPOT + 0.14, and the batch's
    # throughput is the engine's, 8 x 256 tokens over the engine's E2E (without the 0.14)
    assert d["first_token_path_s"] == 0.14
    assert d["e2e_s"] == pytest.approx(d["prefill_s"] + 255 * d["tpot_s"] + 0.14)
    assert d["ttft_s"] == pytest.approx(d["prefill_s"] + 0.14)
    assert d["output_tok_s"] == pytest.approx(8 * 256 / (d["e2e_s"] - 0.14))
    assert d["params_provenance"]
    assert set(d["params"]) >= {"mem_eff", "compute_eff"}
    for phase in ("prefill", "decode"):
        b = d[phase]
        for k in ("weight_bytes", "kv_read_bytes", "activation_bytes", "matmul_flops",
                  "attention_flops", "comm_bytes", "t_overhead_s", "bound"):  # fmt: skip
            assert k in b, (phase, k)
    assert d["decode"]["bound"] == "memory" and d["fits_in_memory"] is True


def test_estimate_with_calibration_profile(capsys):
    profile = DATA_DIR / "calibration" / "profile.yaml"
    if not profile.exists():
        pytest.skip("no bundled calibration profile")
    code, out, _ = run(capsys, *EST_ARGS, "--calibration", str(profile), "--format", "json")
    assert code == 0
    assert json.loads(out)["params_provenance"].startswith(("fit", "transferred"))


def test_estimate_table_in_ms(capsys):
    code, out, _ = run(capsys, *EST_ARGS, "--tp", "2")
    assert code == 0
    tpot = next(x for x in out.splitlines() if x.startswith("tpot_s"))
    assert tpot.rstrip().endswith(" ms")


def test_estimate_warns_when_batch_does_not_fit(capsys):
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.1-70b", "--gpu", "nvidia-h100-sxm",
                       "--precision", "fp8", "--framework", "vllm", "--batch", "512",
                       "--input-len", "8000", "--output-len", "1000", "--format", "json")  # fmt: skip
    d = json.loads(out)
    assert code == 0 and d["fits_in_memory"] is False and d["warnings"]


def test_estimate_warns_when_the_prompt_is_beyond_the_models_window(capsys):
    # 200,000 + 10 tokens fit in an H100's KV (8B bf16: 131,072 B/token x 200,010 = 26 GB of
    # ~60 GB) but Llama-3.1-8B reads 131,072 at most: the estimate said nothing of it
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "nvidia-h100-sxm",
                       "--precision", "bf16", "--framework", "vllm", "--batch", "1",
                       "--input-len", "200000", "--output-len", "10", "--format", "json")  # fmt: skip
    d = json.loads(out)
    assert code == 0 and d["fits_in_memory"] is True
    assert any("exceeds the model's max_position_embeddings 131072" in w for w in d["warnings"])


# --------------------------------------------------------------------------- predict
def _bench_csv(tmp_path):
    path = tmp_path / "rows.csv"
    src = DATA_DIR / "benchmarks" / "public.csv"
    with open(src, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))[:5]
    step = dict(rows[0])
    step.update(id="own-1", hardware="nvidia-h200-sxm", model="llama-3.1-8b", precision="bf16",
                framework="pytorch", mode="static_batch", batch="8", isl="1024", metric="prefill_s",
                value="0.1", unit="s", tp="1", pp="1", n_gpus="1")  # fmt: skip
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows([*rows, step])
    return path


def test_predict_to_stdout_csv(capsys, tmp_path):
    code, out, _ = run(capsys, "predict", str(_bench_csv(tmp_path)))
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 6 and list(rows[0])[-6:] == [
        "predicted", "predicted_low", "predicted_high", "provenance", "reason", "settings"
    ]  # fmt: skip
    assert float(rows[-1]["predicted"]) > 0
    assert all(r["predicted"] or r["reason"] for r in rows)


def test_predict_to_file_prints_summary(capsys, tmp_path):
    out_csv = tmp_path / "out.csv"
    code, out, _ = run(capsys, "predict", str(_bench_csv(tmp_path)), "-o", str(out_csv),
                       "--format", "json")  # fmt: skip
    assert code == 0
    s = json.loads(out)
    assert s["rows"] == 6 and s["predicted"] + s["not_predicted"] == 6
    with open(out_csv, encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) == 6


def test_predict_table_and_json(capsys, tmp_path):
    code, out, _ = run(capsys, "predict", str(_bench_csv(tmp_path)), "--format", "table")
    assert code == 0 and "predicted" in out.splitlines()[0]
    code, out, _ = run(capsys, "predict", str(_bench_csv(tmp_path)), "--format", "json")
    assert code == 0 and len(json.loads(out)) == 6


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        (["memory", "--model", "llama-3.1-70b", "--gpu", "nvidia-h100-sx"],
         ["unknown gpu 'nvidia-h100-sx'", "Did you mean", "nvidia-h100-sxm"]),
        (["memory", "--model", "lama-3.1-70b", "--gpu", "nvidia-h100-sxm"],
         ["unknown model", "llama-3.1-70b"]),
        (["memory", "--model", "llama-3.1-8b", "--gpu", "nvidia-h100-sxm", "--precision", "fp9"],
         ["unknown precision"]),
        (["memory", "--model", "llama-3.1-8b", "--gpu", "nvidia-h100-sxm", "--context", "-5"],
         ["--context", "must be > 0"]),
        (["memory", "--model", "llama-3.1-8b", "--gpu", "nvidia-h100-sxm", "--tp", "0"],
         ["--tp", "must be > 0"]),
        (["memory", "--model", "llama-3.1-8b", "--gpu", "nvidia-h100-sxm", "--tp", "1.5"],
         ["--tp", "whole number"]),
        (["memory", "--model", "llama-3.1-8b", "--gpu", "nvidia-h100-sxm",
          "--memory-utilization", "1.5"], ["must be <= 1.0"]),
        (["memory", "--model", "llama-3.1-8b", "--gpu", "nvidia-h100-sxm", "--pp", "1000"],
         ["pp=1000 exceeds"]),
        (["memory", "--gpu", "nvidia-h100-sxm"], ["--model"]),
        (["memory", "--model", "missing/config.json", "--gpu", "nvidia-h100-sxm"],
         ["not found"]),
        (["estimate", "--model", "llama-3.1-8b", "--gpu", "amd-mi250x", "--precision",
          "fp8", "--framework", "vllm", "--batch", "1", "--input-len", "10", "--output-len", "10"],
         ["not supported on amd-mi250x"]),
        ([*EST_ARGS[:-2], "--output-len", "0"], ["--output-len", "must be > 0"]),
        ([*EST_ARGS, "--tp", "3"], ["does not divide"]),
        ([*EST_ARGS, "--calibration", "no-such-profile.yaml"], ["no-such-profile.yaml"]),
        ([*MEM_ARGS, "--calibration", "no-such-profile.yaml"], ["profile not found"]),
        (["predict", "no-such-file.csv"], ["no-such-file.csv"]),
        (["gpus", "--data-dir", "/no/such/dir"], ["/no/such/dir"]),
        (["gpus", "--format", "xml"], ["invalid choice"]),
        ([], ["required"]),
        (["frobnicate"], ["invalid choice"]),
    ],
)  # fmt: skip
def test_errors_are_one_line_exit_2(capsys, argv, parts):
    code, out, err = run(capsys, *argv)
    assert_one_line_error(code, out, err, *parts)


def test_yaml_typo_in_data_dir_is_one_line(capsys, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data, ignore=shutil.ignore_patterns("benchmarks", "calibration"))
    text = (data / "hardware.yaml").read_text(encoding="utf-8")
    (data / "hardware.yaml").write_text(text.replace("mem_bw_gbs:", "mem_bw_gb:", 1))
    code, out, err = run(capsys, "gpus", "--data-dir", str(data))
    assert_one_line_error(code, out, err, "hardware.yaml", "mem_bw_gb")


def test_internal_error_is_one_line_exit_1(capsys, monkeypatch):
    def boom(args):
        raise RuntimeError("kaboom\nsecond line")

    monkeypatch.setattr(cli_catalogs, "cmd_gpus", boom)
    monkeypatch.delenv("PLANNER_DEBUG", raising=False)
    code, out, err = run(capsys, "gpus")
    assert code == 1 and err.count("\n") == 1 and "kaboom second line" in err
    assert "RuntimeError" in err and "Traceback" not in err


# --------------------------------------------------------------------------- as a process
def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_subprocess_memory_and_light_imports():
    code = (
        "import sys; from planner.cli import main; "
        f"rc = main({MEM_ARGS + ['--format', 'json']!r}); "
        "heavy = [m for m in ('pandas', 'scipy', 'streamlit') if m in sys.modules]; "
        "print('HEAVY', heavy, file=sys.stderr); sys.exit(rc)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(),
                       cwd=REPO_ROOT, timeout=60)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["fits"] is True
    assert "HEAVY []" in p.stderr


def test_subprocess_error_exit_code():
    p = subprocess.run([sys.executable, "-m", "planner.cli", "memory", "--model", "x", "--gpu",
                        "nvidia-h100-sxm"], capture_output=True, text=True, env=_env(),
                       cwd=REPO_ROOT, timeout=60)  # fmt: skip
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("planner: error: unknown model 'x'") and p.stderr.count("\n") == 1


# --------------------------------------------------------------------------- the app
def test_app_memory_page_renders():
    testing = pytest.importorskip("streamlit.testing.v1")
    at = testing.AppTest.from_file(str(REPO_ROOT / "app.py"), default_timeout=60)
    at.switch_page("app_pages/memory.py")  # the landing page is Plan
    at.run()
    assert not at.exception, at.exception
    from app_pages.widgets import cards_of  # the page's number cards (HTML)

    labels = {k: v for h in at.get("html") for k, v in cards_of(h.value).items()}
    # default: llama-3.1-70b, fp8 weights, no framework (`planner memory`'s default) -> bf16
    # KV, TP 2 -> 4 of 8 KV heads per GPU
    assert labels["KV cache per token"] == "163.8 kB"  # 80 x 2 x 4 x 128 x 2 = 163,840 B
    assert int(labels["Max concurrent sequences"].replace(",", "")) > 0
    assert at.success and not at.error
    at.sidebar.selectbox[0].select("llama-3.1-405b").run()  # 405B does not fit on two H100s
    assert not at.exception and at.error and "does not fit" in at.error[0].value
    assert "would fit" in " ".join(m.value for m in at.markdown)


# --------------------------------------------------------------------------- report
def test_report_units_and_formats():
    import numpy as np
    import pandas as pd

    from planner.report import emit, human, render

    assert human("weight_bytes_per_gpu", 35_278_831_616) == "35.28 GB"
    assert human("kv_cache_bytes_per_token", 327_680) == "327.7 kB/token"
    assert human("tpot_s", 0.006065) == "6.065 ms"
    assert human("e2e_s", 12.5) == "12.5 s"
    assert human("bf16_dense_tflops", 989.0) == "989 TFLOPS"
    assert human("matmul_flops", 1.144e14) == "114.4 TFLOP"
    assert human("output_tok_s", 1192.44) == "1,192.4 tok/s"
    assert human("fits", True) == "yes" and human("reason", None) == "-"
    assert human("max_concurrent_sequences", np.int64(1234)) == "1,234"

    rec = {"time_s": np.float64(0.0125), "parts": {"kv_read_bytes": 2e9}, "tags": ("a", "b")}
    assert json.loads(render(rec, "json")) == {
        "time_s": 0.0125, "parts": {"kv_read_bytes": 2e9}, "tags": ["a", "b"]
    }  # fmt: skip
    table = render(rec, "table")
    assert "12.5 ms" in table and "parts.kv_read_bytes  2 GB" in table and "a; b" in table
    rows = [{"id": "x", "time_s": 0.5}, {"id": "y", "time_s": 1.5, "extra": 1}]
    back = list(csv.DictReader(io.StringIO(render(rows, "csv"))))
    assert back == [{"id": "x", "time_s": "0.5", "extra": ""},
                    {"id": "y", "time_s": "1.5", "extra": "1"}]  # fmt: skip
    df = pd.DataFrame(rows)
    assert json.loads(render(df, "json"))[0]["time_s"] == 0.5
    buf = io.StringIO()
    emit(df, "table", stream=buf)
    assert buf.getvalue().splitlines()[0].split() == ["id", "time_s", "extra"]
    with pytest.raises(ValueError):
        render(rows, "xml")


def test_peak_rps_flag_on_a_scenario_with_a_daily_curve_is_the_rate_planned():
    # examples/chat-8b.yaml: mean 25 req/s, peak_rps 60, a daily curve whose 24 multipliers
    # sum to 25.0 (mean 25/24) and peak at 1.8: busiest hour = 25 x 1.8 / (25/24) = 43.2 req/s.
    # --peak-rps 30 asks to plan for 30: the curve keeps its shape, its mean becomes
    # 30 x (25/24) / 1.8 = 17.36 req/s, and the planned peak is 30 (not the curve's 43.2)
    from planner.cli.main import build_parser
    from planner.cli.question import scenario_of as _scenario

    def peak(*flags: str) -> tuple[float, float]:
        args = build_parser().parse_args(["recommend", "examples/chat-8b.yaml", *flags])
        tr = _scenario(args).workload.traffic
        return tr.peak(), tr.base_mean_rps()

    assert peak() == pytest.approx((60.0, 25.0))
    assert peak("--peak-rps", "30") == pytest.approx((30.0, 30 * (25 / 24) / 1.8))
    assert peak("--peak-rps", "100") == pytest.approx((100.0, 25.0))  # above the curve: kept
    # both given: the mean is the user's, so the curve's busiest hour 20 x 1.8 x 24/25 = 34.56
    # is above the peak and is planned (the larger of the two, as the traffic model says)
    assert peak("--peak-rps", "30", "--mean-rps", "20") == pytest.approx((34.56, 20.0))


def test_peak_rps_flag_plans_the_same_traffic_in_capacity_simulate_and_recommend():
    # capacity and simulate kept the file's mean 25 and its curve under --peak-rps 30, so the
    # curve's busiest hour, 25 x 1.8 / (25/24) = 43.2 req/s, was planned (peak_rps 43.2, 4
    # H100s where recommend --peak-rps 30 planned 30 and 3): the three share one rule now
    from planner.cli.main import build_parser
    from planner.cli.question import scenario_of
    from planner.cli.serving import _with_overrides
    from planner.scenario import load_scenario

    def traffic(cmd: str, *flags: str) -> tuple[float, float]:
        args = build_parser().parse_args([cmd, "examples/chat-8b.yaml", *flags])
        sc = (
            scenario_of(args)
            if cmd == "recommend"
            else _with_overrides(load_scenario(args.scenario), args)
        )
        return sc.workload.traffic.peak(), sc.workload.traffic.base_mean_rps()

    for flags in (("--peak-rps", "30"), ("--peak-rps", "100"), ("--peak-rps", "10")):
        want = traffic("recommend", *flags)
        assert traffic("capacity", *flags) == pytest.approx(want)
        assert traffic("simulate", *flags) == pytest.approx(want)
    assert traffic("capacity", "--peak-rps", "30") == pytest.approx((30.0, 30 * (25 / 24) / 1.8))
    # mean above the peak asked for: the day is flat at the peak, as recommend plans it
    assert traffic("capacity", "--peak-rps", "10") == pytest.approx((10.0, 10.0))
