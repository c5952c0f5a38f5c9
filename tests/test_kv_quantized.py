"""An engine stores only the KV precisions it has (data/frameworks.yaml ``kv_quantized``).

LMDeploy quantizes its KV cache online to int8 or int4 (``--quant-policy 8`` / ``4``; its
docs, quantization/kv_quant.md: "Since v0.4.0, LMDeploy has supported online key-value (kv)
cache quantization with int4 and int8 numerical precision") and has no fp8 KV cache. Before
this rule the recommender offered LMDeploy with fp8 KV (the README's 70B answer ranked
"nvidia-h100-sxm lmdeploy int8 (kv fp8)") and ``--emit`` then wrote no serve.sh for it
("lmdeploy: no KV-cache dtype value for kv precision 'fp8'").
"""

from __future__ import annotations

import pytest

from planner.catalog.catalog import kv_quantized_problem, load_catalog
from planner.errors import PlannerError
from planner.recommend.options import kv_choices

CAT = load_catalog()
M = CAT.model("llama-3.1-70b")


def test_lmdeploy_offers_int8_kv_not_fp8():
    lm, vl = CAT.framework("lmdeploy"), CAT.framework("vllm")
    assert lm.kv_quantized == ("int8", "int4")
    # the checkpoint's 16-bit default plus the engine's first quantized KV precision
    assert kv_choices(CAT.precision("int8"), (), lm, M) == ["fp16", "int8"]
    assert kv_choices(CAT.precision("bf16"), (), lm, M) == ["bf16", "int8"]
    # an engine whose quantized KV was not read keeps fp8 KV as before
    assert kv_choices(CAT.precision("bf16"), (), vl, M) == ["bf16", "fp8"]
    assert vl.kv_quantized is None
    # a constraint naming fp8 KV cannot bring it back for LMDeploy
    assert "fp8" not in kv_choices(CAT.precision("bf16"), ("fp8", "int8"), lm, M)


def test_every_command_refuses_lmdeploy_fp8_kv_in_one_line():
    with pytest.raises(PlannerError, match=r"lmdeploy stores no fp8 KV cache: .*int8, int4"):
        CAT.resolve("llama-3.1-70b", "nvidia-h100-sxm", "int8", "lmdeploy", kv_precision="fp8")
    # 16-bit KV and int8 KV resolve
    CAT.resolve("llama-3.1-70b", "nvidia-h100-sxm", "int8", "lmdeploy", kv_precision="int8")
    CAT.resolve("llama-3.1-70b", "nvidia-h100-sxm", "bf16", "lmdeploy", kv_precision="bf16")
    assert kv_quantized_problem(None, "fp8", CAT.precision("bf16")) == ""
