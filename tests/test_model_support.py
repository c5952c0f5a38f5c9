"""Which engines serve a model at all (data/model_support.yaml ``served: false``) and the
engine-level format rules added with it (data/moe_formats.yaml: TGI's transformers fallback
for Qwen3).

Before: ``planner recommend --model gpt-oss-20b --gpus h100,h200`` listed Text Generation
Inference options (int4-awq and others) although TGI has no gpt-oss code path: its
``get_model`` has no ``gpt_oss`` model type, and its fallback needs transformers' gpt_oss
model, which the transformers 4.51.0 that TGI's last release (v3.3.7, 2025-12-18; in
maintenance mode since 2025-12-11) locks does not have.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

from planner.catalog import load_catalog
from planner.catalog.model_support import (
    model_floor_record,
    model_support_problem,
    read_model_support,
)
from planner.cli import main as cli_main
from planner.errors import PlannerError
from planner.recommend import enumerate_options

CAT = load_catalog()
H100 = "nvidia-h100-sxm"


@pytest.mark.parametrize("model", ["gpt-oss-20b", "gpt-oss-120b"])
def test_tgi_does_not_serve_gpt_oss_in_any_format(model):
    # every format TGI lists (bf16, fp16, fp8, int4-awq, int4-gptq) is refused, by one rule
    m = CAT.model(model)
    for p in CAT.framework("tgi").precisions:
        with pytest.raises(PlannerError) as e:
            CAT.resolve(model, H100, p, "tgi")
        msg = str(e.value)
        assert "\n" not in msg
        for part in (f"tgi does not serve {model} (gpt_oss)", "through 3.3.7",
                     "transformers 4.51.0", "text-generation-inference"):  # fmt: skip
            assert part in msg, (part, msg)
    assert model_floor_record(CAT.model_support, "tgi", m) is None  # not a floor


def test_recommend_options_drop_tgi_for_gpt_oss_only():
    m = CAT.model("gpt-oss-20b")
    opts, rej = enumerate_options(CAT, m, gpus=(H100, "nvidia-h200-sxm"))
    assert not [o for o in opts if o.framework.id == "tgi"]
    gone = [r for r in rej if r.stage == "model_support"]
    # one rejection per GPU for the whole engine
    assert sorted((r.gpu, r.framework) for r in gone) == [
        (H100, "tgi"),
        ("nvidia-h200-sxm", "tgi"),
    ]
    # the engines that serve gpt-oss keep their options (its own MXFP4 release on Hopper)
    engines = {o.framework.id for o in opts if o.precision.id == "fp4"}
    assert {"vllm", "sglang", "trtllm"} <= engines, engines
    # a model TGI serves natively keeps TGI (Llama: flash_llama_modeling)
    opts, rej = enumerate_options(CAT, CAT.model("llama-3.1-8b"), gpus=(H100,))
    assert [o for o in opts if o.framework.id == "tgi"]
    assert not [r for r in rej if r.stage == "model_support"]


def test_cli_refuses_in_one_line(capsys):
    code = cli_main(
        ["estimate", "--model", "gpt-oss-20b", "--gpu", H100, "--framework", "tgi",
         "--precision", "int4-awq", "--tp", "1", "--batch", "8", "--input-len", "1000",
         "--output-len", "100"]
    )  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("planner: error: framework tgi: tgi does not serve gpt-oss-20b")
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("model", ["qwen3-32b", "qwen3-235b-a22b"])
def test_tgi_qwen3_awq_gptq_refused_bf16_kept(model):
    # TGI @ v3.3.7 has no qwen3 / qwen3_moe model type: get_model falls through to the
    # transformers fallback, before which it raises "awq quantization is not supported for
    # AutoModel" and "gptq quantization is not supported for AutoModel"
    for p in ("int4-awq", "int4-gptq"):
        with pytest.raises(PlannerError, match=f"{p} is not among them: TGI has no native"):
            CAT.resolve(model, H100, p, "tgi")
    assert CAT.resolve(model, H100, "bf16", "tgi").precision.id == "bf16"
    # vLLM serves Qwen3 AWQ (no record speaks of it: unchanged)
    assert CAT.resolve(model, H100, "int4-awq", "vllm").precision.id == "int4-awq"


def _write(tmp_path: Path, rec: dict) -> Path:
    (tmp_path / "model_support.yaml").write_text(yaml.safe_dump({"model_support": [rec]}))
    return tmp_path


BASE = {"framework": "tgi", "architecture": "gpt_oss", "quote": "a quoted sentence here",
        "source": "somewhere readable", "as_of": dt.date(2026, 1, 8)}  # fmt: skip


def test_a_not_served_record_names_the_release_read_and_no_since(tmp_path):
    with pytest.raises(PlannerError, match="checked_release and no since"):
        read_model_support(_write(tmp_path, {**BASE, "served": False, "since": "3.3.7",
                                             "checked_release": "3.3.7"}))  # fmt: skip
    with pytest.raises(PlannerError, match="checked_release and no since"):
        read_model_support(_write(tmp_path, {**BASE, "served": False}))
    with pytest.raises(PlannerError, match="since is required"):
        read_model_support(_write(tmp_path, BASE))
    recs = read_model_support(_write(tmp_path, {**BASE, "served": False,
                                                "checked_release": "3.3.7"}))  # fmt: skip
    why = model_support_problem(recs, "tgi", CAT.model("gpt-oss-120b"))
    assert why.startswith("tgi does not serve gpt-oss-120b (gpt_oss) in any release through")
    assert model_support_problem(recs, "vllm", CAT.model("gpt-oss-120b")) is None
    assert model_support_problem(recs, None, CAT.model("gpt-oss-120b")) is None
    assert model_support_problem(recs, "tgi", CAT.model("llama-3.1-8b")) is None


def test_lmdeploy_gpt_oss_w8a8_refused_bf16_kept():
    # LMDeploy's W8A8 checkpoints come from `lmdeploy lite smooth_quant` (docs
    # quantization/w8a8.md), which raises for a model outside LAYER_TYPE_MAP
    # (lmdeploy/lite/apis/calibrate.py: no GptOssForCausalLM); TurboMind, the only engine
    # the page lists gpt-oss for, has no W8A8 path. Before: rank 9 of the gpt-oss-20b
    # H100/H200 recommendation was "nvidia-h100-sxm lmdeploy int8".
    with pytest.raises(PlannerError, match="int8 is not among them: W8A8 runs in LMDeploy"):
        CAT.resolve("gpt-oss-20b", H100, "int8", "lmdeploy")
    assert CAT.resolve("gpt-oss-20b", H100, "bf16", "lmdeploy").precision.id == "bf16"
    # LMDeploy serves gpt-oss from 0.10.0 on: its fitted 0.1.0a1 is below that floor
    rec = model_floor_record(CAT.model_support, "lmdeploy", CAT.model("gpt-oss-20b"))
    assert rec.since == "0.10.0"


@pytest.mark.parametrize("model", ["qwen3-32b", "qwen3-235b-a22b"])
def test_trtllm_qwen3_integer_formats_refused(model):
    # TensorRT-LLM examples/models/core/qwen/README.md, Support Matrix (FP16/BF16 | FP8 |
    # nvfp4 | WO | AWQ | GPTQ | SQ): "Qwen3-32B | Y | Y | Y | - | - | - | -" and the same for
    # the MoE row. Before: rank 1 of the Qwen3-235B H100/H200 recommendation was
    # "nvidia-h100-sxm trtllm int4-awq TP2", a format its guide does not list.
    for p in ("int4-awq", "int4-gptq", "int8"):
        with pytest.raises(PlannerError, match=f"{p} is not among them: its Qwen guide"):
            CAT.resolve(model, H100, p, "trtllm")
    for p in ("bf16", "fp8"):
        assert CAT.resolve(model, H100, p, "trtllm").precision.id == p
    opts, _ = enumerate_options(CAT, CAT.model(model), gpus=(H100,), frameworks=("trtllm",))
    assert {o.precision.id for o in opts} <= {"bf16", "fp8"}
    assert {o.precision.id for o in opts} >= {"bf16", "fp8"}
