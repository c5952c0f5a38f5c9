"""Answers a search asks for thousands of times, remembered (issue 29, eleventh pass):
:meth:`Catalog.resolve` for record arguments, :func:`planner.engine.gemm_width.coeffs` by
(table, width) and the step model's scalar coefficients built with ``map(float, ...)``.
Each must give exactly what it computed before: the same records, the same floats."""

from __future__ import annotations

import pytest

from planner.catalog import catalog as catalog_mod
from planner.catalog.efficiency import PRIOR
from planner.engine import gemm_width as gw
from planner.engine.params import param_counts
from planner.engine.step import step_model
from planner.errors import PlannerError


def test_resolve_remembers_record_arguments_and_gives_the_uncached_answer(catalog):
    m = catalog.model("llama-3.1-70b")
    g, p = catalog.gpu("amd-mi300x"), catalog.precision("fp8")
    catalog_mod._RESOLVED.clear()
    first = catalog.resolve(m, g, p, "vllm")
    assert first == catalog._resolve(m, g, p, "vllm")
    # vLLM stores fp8 KV for an fp8 checkpoint (data/frameworks.yaml): its default
    assert (first.model, first.gpu, first.precision, first.kv.id) == (m, g, p, "fp8")
    assert len(catalog_mod._RESOLVED) == 1
    assert catalog.resolve(m, g, p, "vllm") is first  # remembered
    # another KV precision, GPU given by id: other entries, each the uncached answer
    kv16 = catalog.resolve(m, "amd-mi300x", p, "vllm", "bf16")
    assert kv16.kv.id == "bf16" and kv16 == catalog._resolve(m, "amd-mi300x", p, "vllm", "bf16")
    assert len(catalog_mod._RESOLVED) == 2


def test_resolve_raises_every_time_and_remembers_no_error(catalog):
    m = catalog.model("llama-3.1-70b")
    catalog_mod._RESOLVED.clear()
    for _ in range(2):  # TensorRT-LLM runs on NVIDIA GPUs only (data/framework_gpus.yaml)
        with pytest.raises(PlannerError, match="runs on nvidia GPUs"):
            catalog.resolve(m, "amd-mi300x", "fp8", "trtllm")
    assert catalog_mod._RESOLVED == {}


def test_resolve_of_a_model_id_is_not_remembered(catalog):
    catalog_mod._RESOLVED.clear()
    r = catalog.resolve("llama-3.1-70b", "nvidia-h100-sxm", "bf16", "vllm")
    assert r.model.id == "llama-3.1-70b" and r.kv.id == "bf16"
    assert catalog_mod._RESOLVED == {}  # a string may be a config.json path: read each time


def test_gemm_width_coeffs_are_remembered_and_equal_a_fresh_computation(catalog, monkeypatch):
    m, g = catalog.model("llama-3.1-70b"), catalog.gpu("amd-mi300x")
    pc = param_counts(m)
    n = pc.attention + pc.mlp_dense
    gw._COEFFS.clear()
    c8 = gw.coeffs(m, g, 8, n)
    assert gw.coeffs(m, g, 8, n) is c8 and len(gw._COEFFS) == 1
    t = gw.table_for(g.arch)
    # TP8 is 855,638,016 / 8 parameters a layer; at 128 tokens 593.3 / 273.3 TFLOP/s = 2.17088
    j = t.tokens.index(128)
    assert c8[1][j] == pytest.approx(593.3 / 273.3, rel=1e-12)
    gw._COEFFS.clear()
    assert gw.coeffs(m, g, 8, n) == c8  # computed again: the same floats
    # the switch is part of the key: COMPUTE_ONLY off gives its own entry
    monkeypatch.setattr(gw, "COMPUTE_ONLY", not gw.COMPUTE_ONLY)
    other = gw.coeffs(m, g, 8, n)
    assert other[:2] == c8[:2] and other[2] is not c8[2] and len(gw._COEFFS) == 2
    monkeypatch.setattr(gw, "ENABLED", False)
    assert gw.coeffs(m, g, 8, n) == ()


def test_scalar_coefficients_are_plain_floats(catalog):
    sm = step_model("llama-3.1-70b", "amd-mi300x", "fp8", tp=8, params=PRIOR, catalog=catalog)
    c = sm._coeffs
    # 104 step terms + the GEMM width tail (count, 12 log tokens, 12 factors, compute-only)
    # + the pipelined-PP terms (engine/pipeline.py)
    assert len(c) == 133 and all(type(x) is float for x in c)
    assert c[20] == 1.0  # has_comm at TP8: True as 1.0
