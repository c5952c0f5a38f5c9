"""A model's own released format is offered where engines serve it: gpt-oss's MXFP4 release
on Hopper / Ampere, weight-only (recommend/options.py ``format_native``,
catalog/compat.py ``own_release_on``).

Sources (data/models.yaml gpt-oss ``checkpoints``, planner/recommend/options.py):
- OpenAI released gpt-oss only with MXFP4 MoE experts (HF config.json quantization_config,
  modules_to_not_convert: attention, router, embeddings, lm head stay bf16).
- vLLM gpt-oss recipe: runs "on NVIDIA H100, H200, B200"; "GPT-OSS works on Ampere devices by
  default, using the TRITON_ATTN attention backend and Marlin MXFP4 MoE".
- SGLang cookbook (gpt-oss usage guide): "Serving with 1 x H100/H200: python3 -m
  sglang.launch_server --model-path openai/gpt-oss-120b --mem-fraction-static 0.95".
- TensorRT-LLM examples/models/core/gpt_oss/README.md, MoE support matrix: "Hopper | bf16 |
  mxfp4 | TRITON, CUTLASS | simulated mxfp4, HGMMA" (bold: recommended for the official
  checkpoints); KV cache matrix: Hopper bf16 yes, fp8 no.
"""

from __future__ import annotations

import pytest

from planner.catalog import load_catalog
from planner.catalog.catalog import compute_dtype_for
from planner.catalog.compat import own_release_on
from planner.cli import main as cli_main
from planner.engine.memory import weight_memory
from planner.recommend import enumerate_options

CAT = load_catalog()
HOPPER_AMPERE = ("nvidia-h100-sxm", "nvidia-h200-sxm", "nvidia-a100-80gb-sxm")


def _fp4(opts, fw=None):
    return [o for o in opts if o.precision.id == "fp4" and (fw is None or o.framework.id == fw)]


def test_gptoss_120b_fp4_weight_bytes_by_hand():
    # Experts: 36 layers x 128 experts x (3 x 2,880 x 2,880 weights + 3 x 2,880 biases)
    #   = 36 x 128 x 24,891,840 = 114,701,598,720 params at 4.25 / 8 = 0.53125 B
    #   = 60,935,224,320 B (the catalog counts the expert biases with the experts).
    # Rest in bf16 (2 B):
    #   attention per layer: 2,880 x 4,096 + 2 x 2,880 x 512 + 4,096 x 2,880 = 26,542,080
    #     weights + 4,096 + 512 + 512 + 2,880 = 8,000 biases + 64 sinks = 26,550,144
    #   router per layer: 128 x 2,880 + 128 = 368,768; norms 2 x 2,880 = 5,760
    #   -> 36 x 26,924,672 = 969,288,192; embedding + lm head 2 x 201,088 x 2,880
    #   = 1,158,266,880; final norm 2,880 -> 2,127,557,952 params x 2 = 4,255,115,904 B.
    # Total 60,935,224,320 + 4,255,115,904 = 65,190,340,224 B (published safetensors:
    # 65,248,815,744, whose expert biases are bf16: -0.09%). SGLang: no Marlin padding.
    experts = 36 * 128 * (3 * 2880 * 2880 + 3 * 2880)
    assert experts == 114_701_598_720
    rest = 36 * (26_550_144 + 368_768 + 5_760) + 2 * 201_088 * 2880 + 2880
    assert rest == 2_127_557_952
    hand = experts * 4.25 / 8 + rest * 2
    assert hand == 65_190_340_224
    for gpu in HOPPER_AMPERE:
        m, g, p, _, _ = CAT.resolve("gpt-oss-120b", gpu, "fp4", "sglang", None)
        w = weight_memory(m, p, 1, 1, arch=g.arch)
        assert w.total_bytes == hand
        assert w.total_bytes == pytest.approx(65_248_815_744, rel=1e-3)
        # weight-only: bf16 compute (the rate of the bf16 tensor cores), not FP4
        assert compute_dtype_for(p, g) == "bf16"


@pytest.mark.parametrize("model", ["gpt-oss-120b", "gpt-oss-20b"])
@pytest.mark.parametrize("gpu", HOPPER_AMPERE)
def test_gptoss_fp4_offered_by_the_engines_that_serve_it(model, gpu):
    m = CAT.model(model)
    opts, rej = enumerate_options(CAT, m, gpus=(gpu,))
    assert own_release_on(m, CAT.precision("fp4"), CAT.gpu(gpu))
    # TensorRT-LLM's gpt-oss MoE matrix has Hopper and Blackwell rows only: not on Ampere
    engines = {"vllm", "sglang"} | ({"trtllm"} if CAT.gpu(gpu).arch == "hopper" else set())
    assert {o.framework.id for o in _fp4(opts)} == engines
    why = [r.reason for r in rej if r.stage == "format_native" and r.precision == "fp4"]
    if CAT.gpu(gpu).arch == "hopper":
        assert not why
    else:
        assert len(why) == 1 and "TensorRT-LLM" in why[0] and "hopper only" in why[0]
    # TensorRT-LLM serves it on Hopper with bf16 KV only (its KV cache support matrix)
    assert {o.kv_precision for o in _fp4(opts, "trtllm")} <= {"bf16"}
    assert "fp8" in {o.kv_precision for o in _fp4(opts, "sglang")}


@pytest.mark.parametrize("model", ["llama-3.1-70b", "qwen3-235b-a22b"])
def test_fp4_still_refused_on_hopper_for_a_model_without_an_fp4_release(model):
    m = CAT.model(model)
    g = CAT.gpu("nvidia-h200-sxm")
    assert not own_release_on(m, CAT.precision("fp4"), g)
    opts, rej = enumerate_options(CAT, m, gpus=(g.id,))
    assert not _fp4(opts)
    why = [r.reason for r in rej if r.stage == "format_native" and r.precision == "fp4"]
    assert why and all("no FP4 tensor cores" in w and "\n" not in w for w in why)


def test_fp4_not_offered_where_no_checkpoint_is_listed():
    # Ada: the gpt-oss checkpoint records list archs [ampere, hopper] only (vLLM's recipe:
    # "actively working on ... Ada Lovelace"), so FP4 stays a named-only option on L40S.
    m = CAT.model("gpt-oss-120b")
    opts, rej = enumerate_options(CAT, m, gpus=("nvidia-l40s",))
    assert not _fp4(opts)
    assert [r for r in rej if r.stage == "format_native" and r.precision == "fp4"]


def test_trtllm_fp8_kv_named_alone_is_one_rejection():
    m = CAT.model("gpt-oss-120b")
    opts, rej = enumerate_options(
        CAT, m, gpus=("nvidia-h200-sxm",), frameworks=("trtllm",), kv_precisions=("fp8",)
    )
    assert not _fp4(opts)
    why = [r.reason for r in rej if r.precision == "fp4"]
    assert len(why) == 1 and "bf16 KV only" in why[0] and "\n" not in why[0]


def test_cli_memory_accepts_gptoss_fp4_on_h100_and_refuses_bad_input_in_one_line(capsys):
    code = cli_main(
        ["memory", "--model", "gpt-oss-120b", "--gpu", "nvidia-h100-sxm", "--precision", "fp4"]
    )
    out, _ = capsys.readouterr()
    assert code == 0 and "gpt-oss-120b" in out
    code = cli_main(
        ["memory", "--model", "gpt-oss-120b", "--gpu", "nvidia-h100-sxm", "--precision", "mxfp5"]
    )
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("planner: error:") and "precision" in err
    assert err.count("\n") == 1 and "Traceback" not in err
