"""Issues 29 / 30 tried as a user: ``planner capacity`` / ``simulate`` on a scenario whose
deployment is disaggregated (``deployment.disaggregated``) must use, or refuse in one line,
every flag and scenario field it is given; never answer as if the flag were not there.

Found by hand (s10 usertest): on ``examples/disagg/disagg-r1.yaml`` (peak 4 req/s),
``capacity --peak-rps 40`` printed ``check_rate_rps 4.8`` (= 4 x 1.2, the file's peak, the
flag dropped); ``--spec-method mtp --acceptance-length 9 --spec-tokens 3`` (an acceptance
length above K + 1 = 4) answered rc 0 without speculative decoding; ``--kv-precision``,
``--max-model-len``, ``--compare-tp``, ``--fit-percentile`` changed nothing; a scenario
with both ``deployment.gpu`` / ``tp`` and ``deployment.disaggregated`` ran the pools and
dropped the rest.
"""

from __future__ import annotations

import json

import pytest

from tests.test_reliability_hostile import run_cli

# a small disaggregated scenario (Llama-3.1-8B on H100s: fast to simulate)
DISAGG_YAML = """
name: d
model: llama-3.1-8b
workload:
  input_tokens: {kind: fixed, tokens: 2000}
  output_tokens: {kind: fixed, tokens: 100}
  traffic: {peak_rps: 4}
slo:
  ttft: {max_s: 1.0, percentile: p99}
  tpot: {max_s: 0.05, percentile: p99}
deployment:
  disaggregated:
    prefill: {gpu: nvidia-h100-sxm, framework: vllm, precision: bf16, tp: 1}
    decode: {gpu: nvidia-h100-sxm, framework: vllm, precision: bf16, tp: 1}
    x: 1
    y: 1
"""

# DeepSeek-V3 pools (MTP modules: speculative decoding has a published prior)
R1_YAML = """
name: r1
model: deepseek-v3
workload:
  input_tokens: {kind: fixed, tokens: 1000}
  output_tokens: {kind: fixed, tokens: 200}
  traffic: {peak_rps: 2}
slo:
  ttft: {max_s: 3.0, percentile: p99}
  tpot: {max_s: 0.1, percentile: p99}
deployment:
  disaggregated:
    prefill: {gpu: nvidia-b200, framework: sglang, precision: fp8, tp: 8}
    decode: {gpu: nvidia-b200, framework: sglang, precision: fp8, tp: 8}
"""


@pytest.fixture
def small(tmp_path):
    p = tmp_path / "d.yaml"
    p.write_text(DISAGG_YAML)
    return p


@pytest.fixture
def r1(tmp_path):
    p = tmp_path / "r1.yaml"
    p.write_text(R1_YAML)
    return p


def _json(argv):
    rc, out, err = run_cli([*argv, "--format", "json"], seconds=240)
    assert rc == 0, err
    return json.loads(out)


def test_capacity_takes_the_peak_flag(small):
    # need = peak x (1 + headroom 0.2): the file's 4 req/s -> 4.8; --peak-rps 12 -> 14.4
    base = _json(["capacity", small, "--requests", "200"])
    assert base["need_rps"] == pytest.approx(4 * 1.2)
    more = _json(["capacity", small, "--requests", "200", "--peak-rps", "12"])
    assert more["need_rps"] == pytest.approx(12 * 1.2)
    # more traffic never needs fewer GPUs
    assert more["num_gpus"] >= base["num_gpus"]


def test_simulate_takes_the_length_flags(small):
    # the transfer carries the prompt's KV: Llama-3.1-8B bf16 is 32 layers x 2 x 8 heads x
    # 128 x 2 B = 131,072 B/token; 2000 tokens -> 262.144 MB, --input-tokens 500 -> 65.536 MB
    base = _json(["simulate", small, "--rate", "2", "--requests", "60"])
    assert base["transfer_mb_mean"] == pytest.approx(262.144)
    short = _json(["simulate", small, "--rate", "2", "--requests", "60", "--input-tokens", "500"])
    assert short["transfer_mb_mean"] == pytest.approx(65.536)


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--kv-precision", "fp8"], "--kv-precision"),
        (["--max-model-len", "4096"], "--max-model-len"),
        (["--attention-dp-balance"], "--attention-dp-balance"),
        (["--compare-tp", "1,2"], "--compare-tp"),
        (["--fit-percentile", "50"], "--fit-percentile"),
        (["--allow-truncation"], "--allow-truncation"),
    ],
)
def test_flags_the_pools_do_not_take_are_refused(small, flags, named):
    rc, _, err = run_cli(["capacity", small, "--requests", "100", *flags])
    assert rc == 2
    assert named in err and "disaggregated" in err


def test_an_invalid_acceptance_length_is_refused(r1):
    # AL at most K + 1 = 4 for K = 3; 9 must not be accepted silently
    rc, _, err = run_cli(["simulate", r1, "--requests", "40", "--spec-method", "mtp",
                          "--spec-tokens", "3", "--acceptance-length", "9"])  # fmt: skip
    assert rc == 2
    assert "acceptance_length" in err and "[1, 4]" in err


def test_speculative_flags_reach_both_pools(r1):
    # MTP K=1 at a given acceptance length 1.8: the decode pool advances 1.8 tokens a verify
    # step; the output names the setting, and TPOT falls against the same run without it
    # (a verify step of 2 tokens costs less than 1.8 plain steps at this small batch)
    argv = ["simulate", r1, "--rate", "1", "--requests", "60"]
    plain = _json(argv)
    spec = _json([*argv, "--spec-method", "mtp", "--spec-tokens", "1", "--acceptance-length",
                  "1.8"])  # fmt: skip
    assert plain.get("spec_method") is None
    assert spec["spec_method"] == "mtp" and spec["spec_tokens"] == 1
    assert spec["acceptance_length"] == pytest.approx(1.8)
    tpot = {d["metric"]: d for d in spec["percentiles"]}["TPOT"]["p50_s"]
    tpot0 = {d["metric"]: d for d in plain["percentiles"]}["TPOT"]["p50_s"]
    assert tpot < tpot0


def test_scenario_spec_fields_apply_to_the_pools(tmp_path):
    text = R1_YAML.replace(
        "deployment:\n",
        "deployment:\n  spec_method: mtp\n  spec_tokens: 1\n  acceptance_length: 1.8\n",
    )
    p = tmp_path / "s.yaml"
    p.write_text(text)
    out = _json(["capacity", p, "--requests", "60"])
    assert (out["spec_method"], out["spec_tokens"]) == ("mtp", 1)
    assert out["acceptance_length"] == pytest.approx(1.8)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("acceptance_length: 1.8", "acceptance_length: 7"))
    rc, _, err = run_cli(["capacity", bad, "--requests", "60"])
    assert rc == 2 and "acceptance_length" in err


@pytest.mark.parametrize("extra", ["  gpu: nvidia-b200\n", "  tp: 8\n", "  framework: vllm\n"])
def test_aggregated_fields_beside_the_pools_are_refused(tmp_path, extra):
    p = tmp_path / "both.yaml"
    p.write_text(DISAGG_YAML.replace("deployment:\n", "deployment:\n" + extra))
    rc, _, err = run_cli(["capacity", p, "--requests", "60"])
    assert rc == 2
    field = extra.strip().split(":")[0]
    assert f"deployment.{field}" in err or f"deployment: {field}" in err
    assert "disaggregated" in err


def test_a_pool_field_hint_never_suggests_the_same_name(tmp_path):
    # speculative fields belong to the deployment (both pools), not to one pool: the hint
    # said "unknown field; did you mean spec_method?" for spec_method itself
    p = tmp_path / "pool.yaml"
    p.write_text(DISAGG_YAML.replace("tp: 1}\n    x", "tp: 1, spec_method: mtp}\n    x"))
    rc, _, err = run_cli(["capacity", p, "--requests", "60"])
    assert rc == 2
    assert "did you mean spec_method" not in err
    assert "deployment.disaggregated.decode.spec_method" in err
