"""Issue 32's "one answer per deployment" tried from the shell: for a dense deployment and a
DeepSeek DEP one, ``planner estimate`` prints the engine knobs ``capacity`` (and recommend,
simulate) run the deployment with: max_num_seqs, max_num_batched_tokens, memory
utilisation, KV dtype, prefill chunk and max_model_len. Found by hand (s10 usertest):
estimate printed none of them, so a user could not tell which engine settings its static
batch assumes beside the capacity answer.

estimate is a static batch (no arrival rate); the rate and P99 latencies are the serving
commands' (tests/test_one_answer.py runs those against each other).
"""

from __future__ import annotations

import json

import pytest

from tests.test_reliability_hostile import run_cli

KNOBS = (
    "max_num_seqs",
    "max_num_batched_tokens",
    "gpu_memory_utilization",
    "kv_cache_dtype",
    "prefill_chunk_tokens",
    "max_model_len",
)


def _json(argv):
    rc, out, err = run_cli([*argv, "--format", "json"], seconds=240)
    assert rc == 0, err
    return json.loads(out)


@pytest.mark.parametrize(
    "scenario, deployment, est",
    [
        (
            "examples/chat-8b.yaml",
            ["--gpu", "nvidia-h100-sxm", "--framework", "vllm", "--precision", "bf16"],
            ["--model", "llama-3.1-8b"],
        ),
        (
            "examples/moe-r1.yaml",
            ["--gpu", "nvidia-b200", "--framework", "trtllm", "--precision", "fp4",
             "--ep", "8", "--attention-dp", "8"],
            ["--model", "deepseek-v3"],
        ),
    ],
)  # fmt: skip
def test_estimate_prints_the_capacity_knobs(scenario, deployment, est):
    cap = _json(["capacity", scenario, *deployment, "--requests", "300", "--no-curve"])
    e = _json(["estimate", *est, *deployment, "--batch", "8", "--input-len", "1000",
               "--output-len", "100"])  # fmt: skip
    for k in KNOBS:
        assert e[k] == cap[k], k
    # the values the engine's record gives (data/frameworks.yaml), not read off the output:
    # `vllm serve` on a GPU of >= 70 GiB other than an A100 defaults to max_num_seqs 1024 and
    # max_num_batched_tokens 8192 (vllm/engine/arg_utils.py get_batch_defaults), chunked
    # prefill on (the chunk is the token budget); KV in the weights' bf16; Llama-3.1's
    # context is 131,072 tokens
    if "vllm" in deployment:
        assert (e["max_num_seqs"], e["max_num_batched_tokens"]) == (1024, 8192)
        assert e["prefill_chunk_tokens"] == 8192
        assert e["kv_cache_dtype"] == "bf16"
        assert e["max_model_len"] == 131_072


def test_recommend_json_options_carry_the_deployment():
    # issue 29/30's JSON: every option names its layout (tp, pp, ep, attention_dp), counts
    # its GPUs over all of them, says whether it is disaggregated and carries its
    # speculative setting; the xPyD comparison's options carry both pools with their counts
    d = _json(["recommend", "examples/moe-r1.yaml", "--gpus", "nvidia-b200", "--frameworks",
               "trtllm", "--precisions", "fp4", "--top", "2"])  # fmt: skip
    assert d["recommendations"]
    for o in d["recommendations"]:
        per_replica = o["tp"] * o["pp"] * o["attention_dp"]
        assert per_replica == o["ep"] * (per_replica // o["ep"])  # the width rule holds
        assert o["num_gpus"] == o["replicas"] * per_replica
        assert o["disaggregated"] is False
        for k in ("spec_method", "spec_tokens", "acceptance_length"):
            assert k in o
        # $/h = GPUs x the price per GPU-hour
        assert o["usd_per_hour"] == pytest.approx(o["num_gpus"] * o["usd_per_gpu_hour"])
    for r in d["summary"].get("disaggregated") or []:
        if "option" not in r:
            continue
        assert r["disaggregated"] is True
        pre, dec = r["prefill"], r["decode"]
        assert pre["count"] >= 1 and dec["count"] >= 1
        width = {p: r[p]["tp"] * r[p]["pp"] * r[p]["attention_dp"] for p in ("prefill", "decode")}
        assert r["num_gpus"] == r["groups"] * (
            pre["count"] * width["prefill"] + dec["count"] * width["decode"]
        )


def test_compare_tp_refuses_an_ep_deployment():
    # found by hand: `capacity examples/moe-r1.yaml --compare-tp 4,8` (a DEP8 deployment,
    # 39.6 req/s a replica) printed a table of plain TP4 / TP8 replicas, marked TP4 "best"
    # (4.2 req/s per GPU, below DEP8's 4.95), without the deployment's own layout in it
    rc, _, err = run_cli(["capacity", "examples/moe-r1.yaml", "--compare-tp", "4,8",
                          "--no-curve", "--requests", "100"])  # fmt: skip
    assert rc == 2
    assert "--compare-tp" in err and "DEP8" in err


@pytest.mark.parametrize("cmd", ["capacity", "simulate"])
def test_serving_json_names_the_deployment(cmd):
    # found by hand: capacity / simulate JSON named the deployment only inside the
    # `replica` sentence; a script could not read its layout or speculative setting
    argv = [cmd, "examples/moe-r1.yaml", "--spec-method", "mtp", "--requests", "100"]
    d = _json([*argv, "--no-curve"] if cmd == "capacity" else argv)
    dep = d["deployment"]
    assert (dep["gpu"], dep["framework"], dep["precision"]) == ("nvidia-b200", "trtllm", "fp4")
    assert (dep["tp"], dep["pp"], dep["ep"], dep["attention_dp"]) == (1, 1, 8, 8)
    assert dep["layout"] == "DEP8" and dep["gpus_per_replica"] == 8
    assert dep["disaggregated"] is False
    # DeepSeek-V3 ships one MTP module: K = 1 by default (data/speculative.yaml)
    assert (dep["spec_method"], dep["spec_tokens"]) == ("mtp", 1)
    assert 1.0 <= dep["acceptance_length"] <= 2.0


def test_a_per_replica_limit_does_not_claim_its_example_meets_the_slos():
    # found by hand: with --max-gpus-per-replica 4 every DeepSeek-V3 layout on H100 is
    # removed when the options are listed, before memory or the SLO is checked; the error
    # said "the fleet limit removed every option that meets the SLOs, e.g. nvidia-h100-sxm
    # vllm bf16 TP8" (1.34 TB of bf16 weights: 168 GB per GPU, it fits no H100)
    rc, _, err = run_cli(["recommend", "--model", "deepseek-v3", "--peak-rps", "10",
                          "--input-tokens", "1000", "--output-tokens", "1000", "--tpot-p99",
                          "0.1", "--gpus", "nvidia-h100-sxm", "--max-gpus-per-replica", "4",
                          "--disagg", "off"])  # fmt: skip
    assert rc == 2
    assert "max_gpus_per_replica=4" in err
    assert "meets the SLOs" not in err
