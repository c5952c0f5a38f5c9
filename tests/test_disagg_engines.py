"""Prefill/decode disaggregation only on engines that document it (data/frameworks.yaml
``disaggregation``, each with its source): vLLM (disaggregated prefilling, KV connectors),
SGLang (PD disaggregation, Mooncake / NIXL), TensorRT-LLM (disaggregated serving). TGI does
not offer it (its issue #2107 closed without an implementation); an engine nobody read
(llama.cpp) is refused too, with a different reason. Before, a scenario with two TGI pools was
sized 1P1D and ``recommend --frameworks tgi`` offered "disagg 1P(TP4)+4D(TP4)"."""

from __future__ import annotations

import json

import pytest

from planner.catalog import load_catalog
from planner.catalog.compat import disaggregation_problem
from planner.cli.main import main
from planner.errors import PlannerError
from planner.serving.disagg import Disaggregated, Pool, build_disagg

CAT = load_catalog()


@pytest.mark.parametrize("fw", ["vllm", "sglang", "trtllm"])
def test_documented_engines_carry_a_source(fw):
    f = CAT.framework(fw)
    assert f.disaggregation is True and "http" in f.disaggregation_source
    assert disaggregation_problem(f) is None


def test_tgi_is_refused_with_its_source():
    why = disaggregation_problem(CAT.framework("tgi"), ("vLLM", "SGLang"))
    assert why.startswith("Hugging Face Text Generation Inference does not offer")
    assert "#2107" in why and why.endswith("engines that do: vLLM, SGLang")


def test_unread_engine_is_refused_as_unread():
    f = CAT.framework("llama.cpp")
    assert f.disaggregation is None
    assert disaggregation_problem(f).startswith("no source read says llama.cpp")


def test_build_disagg_names_the_pool_and_field():
    tgi = Pool(gpu="nvidia-h100-sxm", framework="tgi", precision="bf16")
    vllm = Pool(gpu="nvidia-h100-sxm", framework="vllm", precision="bf16")
    with pytest.raises(PlannerError) as e:
        build_disagg("llama-3.1-8b", Disaggregated(prefill=vllm, decode=tgi), catalog=CAT)
    assert str(e.value).startswith("deployment.disaggregated.decode.framework: Hugging Face")
    # the same pools on vLLM build
    assert build_disagg("llama-3.1-8b", Disaggregated(prefill=vllm, decode=vllm), catalog=CAT)


def test_recommend_says_why_tgi_has_no_xpyd(capsys):
    argv = ["recommend", "--model", "llama-3.1-8b", "--peak-rps", "5", "--input-tokens", "1500",
            "--output-tokens", "300", "--ttft-p99", "2", "--tpot-p99", "0.05", "--gpus",
            "nvidia-h100-sxm", "--frameworks", "tgi", "--disagg", "only", "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(not r["pays"] for r in rows)
    assert "does not offer prefill/decode disaggregation" in rows[0]["why"][0]
