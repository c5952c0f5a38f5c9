"""An engine's hardware-support table is read (data/frameworks.yaml
``vendor_precision_gaps``): vLLM documents no INT8 W8A8, AWQ or GPTQ kernels on AMD GPUs in
every version of its "Supported Hardware" table (v0.5.3 to v0.14.0), so the recommender never
offers those formats with vLLM on an AMD GPU (it did: the README's 70B chat answer was
"MI300X vLLM int8 TP2"), while FP8 stays, and NVIDIA GPUs keep all three."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.catalog import load_catalog
from planner.cli.main import main

CAT = load_catalog()


def test_vllm_record_names_the_amd_gaps_with_its_source():
    fw = CAT.framework("vllm")
    assert set(fw.vendor_precision_gaps["amd"]) == {"int8", "int4-awq", "int4-gptq"}
    assert "fp8" not in fw.vendor_precision_gaps["amd"]
    assert "nvidia" not in fw.vendor_precision_gaps
    assert "Supported Hardware" in fw.vendor_precision_gaps_source


def _recommend(capsys, gpu):
    argv = ["recommend", "--model", "llama-3.1-70b", "--peak-rps", "5", "--input-tokens",
            "1500", "--output-tokens", "300", "--ttft-p99", "2", "--tpot-p99", "0.05",
            "--gpus", gpu, "--frameworks", "vllm", "--top", "20", "--rejected", "all",
            "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_no_int8_awq_gptq_with_vllm_on_mi300x(capsys):
    d = _recommend(capsys, "amd-mi300x")
    precisions = {r["precision"] for r in d["recommendations"]}
    assert precisions and not precisions & {"int8", "int4-awq", "int4-gptq"}
    assert "fp8" in precisions
    why = [r for r in d["rejected"] if r.get("precision") == "int8"]
    assert why and all("no int8 kernels on AMD GPUs" in r["reason"] for r in why)


def test_nvidia_keeps_int8_with_vllm(capsys):
    d = _recommend(capsys, "nvidia-h100-sxm")
    assert not any(
        "kernels on" in r["reason"] for r in d["rejected"] if r.get("precision") == "int8"
    )


# Every command that plans one deployment refuses the same formats (``Catalog.resolve`` asks
# ``planner.catalog.compat.check_framework_precision``), with one line naming the field.
_ONE = ["--gpu", "amd-mi300x", "--framework", "vllm", "--tp", "2"]
_CMDS = {
    "memory": ["memory", "--model", "llama-3.1-70b", *_ONE],
    "estimate": [
        "estimate",
        "--model",
        "llama-3.1-70b",
        "--batch",
        "8",
        "--input-len",
        "1000",
        "--output-len",
        "200",
        *_ONE,
    ],  # fmt: skip
    "capacity": ["capacity", "examples/rag-70b.yaml", *_ONE],
    "simulate": ["simulate", "examples/rag-70b.yaml", *_ONE],
}


@pytest.mark.parametrize("cmd", sorted(_CMDS))
@pytest.mark.parametrize("precision", ["int8", "int4-awq", "int4-gptq"])
def test_every_command_refuses_the_gap(cmd, precision, capsys, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert main([*_CMDS[cmd], "--precision", precision]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"planner: error: precision {precision}")
    # int8 runs on CDNA3 tensor cores, so only vLLM's table refuses it; AWQ / GPTQ are also
    # refused by the precision catalog (not native on CDNA3), whichever check comes first
    gap = f"vLLM has no {precision} kernels on AMD GPUs (its hardware-support table"
    assert gap in err[0] or (precision != "int8" and "not supported on amd-mi300x" in err[0])


def test_resolve_keeps_fp8_on_amd_and_int8_on_nvidia():
    assert CAT.resolve("llama-3.1-70b", "amd-mi300x", "fp8", "vllm").precision.id == "fp8"
    assert CAT.resolve("llama-3.1-70b", "nvidia-h100-sxm", "int8", "vllm").precision.id == "int8"
