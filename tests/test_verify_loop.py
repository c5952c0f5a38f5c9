"""Closing the loop (issue 31, section 3): a saved `vllm bench serve` result of a published
run, the expected.json the planner wrote for that deployment, `planner validate --against`,
`planner calibrate --results` and `planner recommend` naming the measurement.

The result file is a published run (tests/fixtures/verify/README.md: nerdalert/
vllm-bench-automation, vllm-benchmark-graphs/results.json, first line; 4 x L40S, one vLLM
replica of Llama-3.2-3B-Instruct per GPU behind an llm-d gateway, 10 req/s Poisson, 2025-05-30).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from planner.calibration.fit import FITTED_KINDS, prepare_rows
from planner.calibration.measured import result_rows, with_measurement
from planner.catalog import load_catalog
from planner.catalog.profile import load_profile, resolve_params
from planner.cli.main import main
from planner.deploy.expected import read_expected
from planner.deploy.results import read_result, read_results, split_run
from planner.deploy.verify import compare
from planner.errors import PlannerError

FIX = Path(__file__).resolve().parent / "fixtures" / "verify"
RESULT = FIX / "llmd_l40s_llama-3.2-3b_rate10.json"
EXPECTED = FIX / "llmd_l40s_llama-3.2-3b.expected.json"
SCENARIO = FIX / "llmd_l40s_llama-3.2-3b.yaml"

# the published run's numbers (the fixture file)
MEAS_OUT_TOK_S = 2258.212337970085
MEAS_REQ_S = 8.369432347779671
# expected.json: per replica at 2.5 req/s; the run offered 10 req/s = 2.5 x 4 replicas
PRED_OUT_TOK_S_PER_REPLICA = 664.0434


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------------ the result file
def test_result_reads_the_clients_keys():
    r = read_result(RESULT)
    assert (r.completed, r.num_prompts, r.request_rate_rps) == (300, 300, 10.0)
    assert r.model_id == "meta-llama/Llama-3.2-3B-Instruct"
    assert r.as_of.isoformat() == "2025-05-30"  # date "20250530-194738"
    assert r.input_tokens_mean == 999.0  # 299700 / 300
    assert r.output_tokens_mean == pytest.approx(269.8167, abs=1e-4)  # 80945 / 300
    assert r.latency("ttft", "median") == pytest.approx(0.052868896)  # median_ttft_ms
    assert r.latency("tpot", "p99") == pytest.approx(0.0157932612)  # p99_tpot_ms
    assert r.latency("e2e", "p99") is None  # the client's default --percentile-metrics
    # no mean_e2el_ms: mean TTFT + mean TPOT x (mean output - 1)
    # = 54.5956 ms + 13.7110 ms x 268.8167 = 54.60 + 3685.74 = 3740.3 ms
    assert r.e2e_mean_s() == pytest.approx(3.7403, abs=1e-3)


def test_appended_runs_are_read_one_per_line_and_one_is_picked(tmp_path):
    line = RESULT.read_text().strip()
    d = json.loads(line)
    d2 = {**d, "request_rate": 30.0, "date": "20250530-194848"}
    f = tmp_path / "runs.json"
    f.write_text(line + "\n" + json.dumps(d2) + "\n")
    runs = read_results(f)
    assert [x.request_rate_rps for x in runs] == [10.0, 30.0]
    with pytest.raises(PlannerError, match=r"2 runs in one file; name one with .*:N"):
        read_result(f)
    assert read_result(*split_run(f"{f}:2")).request_rate_rps == 30.0
    with pytest.raises(PlannerError, match="runs 1..2"):
        read_result(f, 3)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"benchmarks": []}', "guidellm report"),
        ('{"completed": 3, "duration": 1.0}', "missing total_input_tokens, total_output_tokens"),
        (
            '{"completed": 0, "duration": 1, "total_input_tokens": 1, "total_output_tokens": 1}',
            "completed must be > 0",
        ),
        (
            '{"completed": 2, "duration": "x", "total_input_tokens": 1, "total_output_tokens": 1}',
            "duration must be a number",
        ),
        ("[1, 2]", "expected a JSON object"),
        ("", "empty file"),
    ],
)
def test_a_bad_result_file_is_one_line(tmp_path, text, match):
    f = tmp_path / "r.json"
    f.write_text(text)
    with pytest.raises(PlannerError, match=match):
        read_results(f)


def test_a_missing_result_file_is_a_clean_error(capsys, tmp_path):
    code, _, err = run(capsys, "validate", "--against", EXPECTED, tmp_path / "nope.json")
    assert code != 0 and "nope.json" in err and "Traceback" not in err


# ---------------------------------------------------------------------- expected.json
@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda d: d["option"].update(tp=0),
            r"option\.tp: input should be greater than 0 \(got 0\)",
        ),
        (lambda d: d["workload"].pop("model"), r"workload\.model: field required \(missing\)"),
        (
            lambda d: d["predicted"]["ttft_p50_s"].update(value="fast"),
            r"predicted\.ttft_p50_s: .*must be a number",
        ),
        (lambda d: d.update(schema="other/1"), r"schema: expected 'planner-expected/1'"),
    ],
)
def test_a_wrong_expected_json_names_the_field(tmp_path, edit, match):
    d = json.loads(EXPECTED.read_text())
    edit(d)
    f = tmp_path / "expected.json"
    f.write_text(json.dumps(d))
    with pytest.raises(PlannerError, match=match):
        read_expected(f)


def test_a_key_the_schema_lacks_is_named(tmp_path):
    # one model writes and reads planner-expected/1 (extra="forbid"): a key it does not know
    # is a typo or another schema, and the error names it
    d = json.loads(EXPECTED.read_text())
    d["option"]["serve_command"] = "vllm serve ..."
    f = tmp_path / "expected.json"
    f.write_text(json.dumps(d))
    with pytest.raises(PlannerError, match=r"option\.serve_command: extra inputs"):
        read_expected(f)


# --------------------------------------------------------------------------- compare
def test_another_model_is_refused():
    exp = read_expected(EXPECTED)
    exp = exp.model_copy(
        update={"workload": exp.workload.model_copy(update={"model": "llama-3.1-8b"})}
    )
    with pytest.raises(
        PlannerError,
        match="a run of meta-llama/Llama-3.2-3B-Instruct, but expected.json predicts llama-3.1-8b",
    ):
        compare(exp, read_result(RESULT), load_catalog())


def test_other_lengths_and_rate_are_warned_and_the_verdict_says_so():
    exp = read_expected(EXPECTED)
    w = exp.workload.model_copy(update={"output_tokens": 500, "rate_rps_per_replica": 4.0})
    check = compare(exp.model_copy(update={"workload": w}), read_result(RESULT), load_catalog())
    assert any(
        "mean answer length 270 tokens, expected 500" in x and "--ignore-eos" in x
        for x in check.warnings
    )
    assert any(
        "request rate 10 req/s, expected 4 per replica (16 for 4 replicas)" in x
        for x in check.warnings
    )
    assert "not the predicted workload" in check.verdict
    assert check.fleet_scale == 1


def test_the_fleet_rate_compares_with_the_fleets_prediction():
    check = compare(read_expected(EXPECTED), read_result(RESULT), load_catalog())
    assert check.fleet_scale == 4 and check.warnings == []
    row = {x["metric"]: x for x in check.rows}
    # 664.0434 tok/s per replica x 4 replicas = 2656.17 tok/s
    assert row["output_throughput_tok_s"]["predicted"] == pytest.approx(
        4 * PRED_OUT_TOK_S_PER_REPLICA
    )
    # a time is not scaled: TPOT p50 predicted 17.58 ms, measured 13.686 ms:
    # (17.58 - 13.686) / 13.686 = +28.4 %; band 8.35..32.48 ms holds it
    assert row["tpot_p50_s"]["error_pct"] == pytest.approx(28.4, abs=0.05)
    assert row["tpot_p50_s"]["in_band"] is True
    assert row["e2e_p99_s"]["measured"] is None and row["e2e_p99_s"]["note"]


def test_validate_against_prints_the_error(capsys):
    code, out, _ = run(capsys, "validate", "--against", EXPECTED, RESULT)
    assert code == 0
    # (pred - meas) / meas = (2656.1736 - 2258.2123) / 2258.2123 = 397.96 / 2258.21 = +17.6 %
    hand = 100 * (4 * PRED_OUT_TOK_S_PER_REPLICA - MEAS_OUT_TOK_S) / MEAS_OUT_TOK_S
    assert round(hand, 1) == 17.6
    line = next(x for x in out.splitlines() if x.startswith("output_throughput_tok_s"))
    assert f"{hand:.2f} %" in line
    assert out.strip().splitlines()[-1].startswith("verdict: 6 of 6 measured metrics inside")
    code, out, _ = run(capsys, "validate", "--against", EXPECTED, RESULT, "--format", "json")
    rows = {x["metric"]: x for x in json.loads(out)["comparison"]}
    assert rows["output_throughput_tok_s"]["error_pct"] == pytest.approx(hand)
    # request throughput: 2.4594 x 4 = 9.8376 predicted, 8.3694 measured: +17.5 %
    assert rows["request_throughput_rps"]["error_pct"] == pytest.approx(
        100 * (9.8376 - MEAS_REQ_S) / MEAS_REQ_S
    )


# ------------------------------------------------------------------------- calibrate
def test_the_result_becomes_rows_and_the_fit_row_is_littles_law():
    df, warnings = result_rows(read_result(RESULT), read_expected(EXPECTED), load_catalog())
    assert warnings == []
    fit = df.iloc[0]
    # requests in flight = 8.3694 req/s x 3.7403 s = 31.30 over the fleet of 4 replicas
    assert (fit["mode"], fit["concurrency"], fit["n_gpus"]) == ("concurrency", 31, 4)
    assert (fit["isl"], fit["osl"], fit["value"]) == (999, 270, MEAS_OUT_TOK_S)
    assert fit["source"] == f"your measurement: {RESULT}" and fit["as_of"] == "2025-05-30"
    lat = df[df["mode"] == "rate"].set_index("metric")["value"]
    assert lat["tpot_ms_median"] == pytest.approx(13.686303)
    assert set(df["hardware"]) == {"nvidia-l40s"} and set(df["model"]) == {"llama-3.2-3b"}


def test_the_measurement_takes_its_node_and_moves_toward_itself():
    cat = load_catalog()
    base = load_profile()
    df, _ = result_rows(read_result(RESULT), read_expected(EXPECTED), cat)
    rows = prepare_rows(df, cat)
    prof, said = with_measurement(base, rows, cat)
    before = resolve_params(
        "nvidia-l40s", "vllm", "bf16", catalog=cat, profile=base, family="dense"
    )
    after = resolve_params("nvidia-l40s", "vllm", "bf16", catalog=cat, profile=prof, family="dense")
    assert before[1].startswith("transferred from")
    assert after[1] == f"fit (vllm/nvidia-l40s/bf16, 1 rows; your measurement: {RESULT})"
    fit = next(r for r in rows if r.fit_predictor(FITTED_KINDS) is not None)
    pred = fit.fit_predictor(FITTED_KINDS)
    err_before = abs(math.log(pred(before[0]) / fit.value))
    err_after = abs(math.log(pred(after[0]) / fit.value))
    assert err_after < err_before
    # the rest of the profile is untouched: another GPU resolves as before
    for gpu in ("nvidia-h100-sxm", "amd-mi300x"):
        assert resolve_params(gpu, "vllm", "bf16", catalog=cat, profile=prof) == resolve_params(
            gpu, "vllm", "bf16", catalog=cat, profile=base
        )
    assert len(said) == 1 and "prior: transferred from" in said[0]


def test_results_need_expected(capsys):
    code, _, err = run(capsys, "calibrate", "--results", RESULT)
    assert code != 0 and "--results and --expected go together" in err


def test_round_trip_calibrate_then_recommend_names_the_measurement(capsys, tmp_path):
    prof, rows_csv = tmp_path / "my-profile.yaml", tmp_path / "rows.csv"
    code, _, err = run(
        capsys, "calibrate", "--results", RESULT, "--expected", EXPECTED,
        "-o", prof, "--rows-out", rows_csv,
    )  # fmt: skip
    assert code == 0, err
    assert "fitted on 1 row(s) of your measurement" in err
    assert rows_csv.read_text().count("your measurement: ") == 5  # 1 fit row + 4 latency rows
    code, out, err = run(
        capsys, "recommend", SCENARIO, "--gpus", "nvidia-l40s", "--frameworks", "vllm",
        "--precisions", "bf16", "--calibration", prof, "--top", "1", "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    assert f"your measurement: {RESULT}" in out
    assert '"provenance": "fit (vllm/nvidia-l40s/bf16, 1 rows; your measurement: ' in out


SWEEP = FIX / "llmd_l40s_llama-3.2-3b_sweep.json"  # the same deployment at 10, 30 and inf req/s


def test_a_sweep_frees_the_overheads_a_single_run_cannot_move():
    """One run is one source: the fit moves only the efficiencies (ONE_SOURCE_FIELDS), the
    overheads stay the prior's. Runs at three loads are three sources: the fit may move the
    fixed per-step and per-layer costs too (they change differently with the batch)."""
    cat, base = load_catalog(), load_profile()
    exp = read_expected(EXPECTED)
    prior, _ = resolve_params(
        "nvidia-l40s", "vllm", "bf16", catalog=cat, profile=base, family="dense"
    )

    def fitted(results, replicas):
        frames = [result_rows(r, exp, cat, replicas)[0] for r in results]
        prof, _ = with_measurement(base, prepare_rows(pd.concat(frames), cat), cat)
        return resolve_params(
            "nvidia-l40s", "vllm", "bf16", catalog=cat, profile=prof, family="dense"
        )

    one, label_one = fitted([read_result(RESULT)], None)
    assert one.layer_overhead_s == prior.layer_overhead_s
    assert one.sched_overhead_s == prior.sched_overhead_s
    runs = read_results(SWEEP)
    assert [r.request_rate_rps for r in runs] == [10.0, 30.0, math.inf]
    three, label = fitted(runs, 4)
    assert three.layer_overhead_s != prior.layer_overhead_s
    assert label.startswith("fit (vllm/nvidia-l40s/bf16, 3 rows; your measurement: ")
    assert label.endswith(f"{SWEEP}, {SWEEP} (run 2), {SWEEP} (run 3))")


def test_a_run_at_another_rate_is_taken_as_one_replica_unless_told():
    cat, exp = load_catalog(), read_expected(EXPECTED)
    run2 = read_results(SWEEP)[1]  # 30 req/s: neither 2.5 (a replica) nor 10 (the fleet)
    df, notes = result_rows(run2, exp, cat)
    assert df.iloc[0]["n_gpus"] == 1 and "--bench-replicas" in notes[0]
    df, notes = result_rows(run2, exp, cat, replicas=4)
    # in flight = 22.101 req/s x (80.19 ms + 24.943 ms x (264.30 - 1)) = 22.101 x 6.6477 s = 146.9
    assert (df.iloc[0]["n_gpus"], df.iloc[0]["concurrency"], notes) == (4, 147, [])
    inf_run = read_results(SWEEP)[2]  # every request at once: an offline row of 900 requests
    df, _ = result_rows(inf_run, exp, cat, replicas=4)
    assert (df.iloc[0]["mode"], len(df)) == ("offline", 1)


def test_against_refuses_the_accuracy_reports_options(capsys):
    code, _, err = run(capsys, "validate", "--against", EXPECTED, RESULT, "--no-serving")
    assert code != 0 and "--no-serving belong to the accuracy report" in err
