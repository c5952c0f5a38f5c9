"""Chunked prefill when a deployment does not say: the engine's default
(``data/frameworks.yaml`` ``chunked_prefill_default``), not whether it supports it.

TensorRT-LLM supports chunked prefill but its LLM API and trtllm-serve leave it off
(``enable_chunked_prefill`` default False); trtllm-bench throughput turns it on
(``--enable_chunked_context`` default True). vLLM V1, SGLang and LMDeploy chunk by default.
"""

from __future__ import annotations

import pytest
import yaml

from planner.benchmarks.chunk_flags import stated_chunking
from planner.catalog import load_catalog
from planner.catalog.frameworks import Framework
from planner.catalog.layout import layout_of
from planner.deploy import flags as F
from planner.deploy.serve import Knobs, launch
from planner.recommend.finish import engine_settings
from planner.serving import replica as replica_mod
from planner.serving.replica import build_replica


def test_records_default_and_support():
    """trtllm: supported (true) but off by default (false); vllm, sglang, lmdeploy on;
    an unread default (tgi: None) counts as on where supported."""
    cat = load_catalog()
    trt = cat.framework("trtllm")
    assert trt.chunked_prefill is True and trt.chunked_prefill_default is False
    assert trt.chunked_prefill_on() is False
    assert "enable_chunked_prefill" in trt.chunked_prefill_default_source
    for fid in ("vllm", "sglang", "lmdeploy"):
        assert cat.framework(fid).chunked_prefill_on() is True
    assert cat.framework("tgi").chunked_prefill_default is None
    assert cat.framework("tgi").chunked_prefill_on() is True
    assert cat.framework("exllama").chunked_prefill_on() is False  # not supported


def test_record_needs_source_and_support():
    """A default without its source, or on where the engine has no chunked prefill: refused."""
    base = load_catalog().framework("exllama").model_dump()
    with pytest.raises(ValueError, match="chunked_prefill_default_source"):
        Framework(**{**base, "chunked_prefill": True, "chunked_prefill_default": False})
    with pytest.raises(ValueError, match="chunked_prefill is false"):
        Framework(**{**base, "chunked_prefill_default": True,
                     "chunked_prefill_default_source": "test source"})  # fmt: skip


def test_trtllm_replica_with_the_engine_default(monkeypatch):
    """CHUNKED_PREFILL_ENGINE_DEFAULT on: a TensorRT-LLM replica that does not say runs
    without chunked prefill, with the 8192-token budget (max_num_tokens) and an assumption
    that says what that means; asked for, it chunks; vLLM chunks either way."""
    monkeypatch.setattr(replica_mod, "CHUNKED_PREFILL_ENGINE_DEFAULT", True)
    r = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "trtllm")
    assert r.engine.chunked_prefill is False
    assert r.engine.max_num_batched_tokens == 8192
    assert any("chunked prefill off" in a and "(8192)" in a for a in r.assumptions)
    on = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "trtllm", chunked_prefill=True)
    assert on.engine.chunked_prefill is True
    assert not any("chunked prefill off" in a for a in on.assumptions)
    assert build_replica("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "vllm").engine.chunked_prefill


def test_trtllm_replica_by_default_plans_chunked_and_says_so():
    """The switch off (shipped): TensorRT-LLM is planned with chunked prefill, and the
    replica says the launch must enable it (the engine's default is off); vLLM says nothing."""
    assert replica_mod.CHUNKED_PREFILL_ENGINE_DEFAULT is False
    r = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "trtllm")
    assert r.engine.chunked_prefill is True
    assert any("the launch must enable it" in a for a in r.assumptions)
    v = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "vllm")
    assert v.engine.chunked_prefill is True
    assert not any("chunked prefill" in a for a in v.assumptions)


def test_unchunked_prompt_costs_one_step():
    """Without chunking a 20000-token prompt alone runs in one step; with an 8192 budget it
    takes ceil(20000 / 8192) = 3 steps, each paying the host time, so the unchunked TTFT is
    the lower one (no queueing), and both are > 0."""
    import numpy as np

    from planner.serving.zero_load import unloaded_latency
    from planner.workload.workload import Requests

    off = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "trtllm", context_len=32768,
                        chunked_prefill=False)  # fmt: skip
    on = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "trtllm", context_len=32768,
                       chunked_prefill=True)  # fmt: skip
    req = Requests(input_tokens=np.array([20000]), output_tokens=np.array([16]),
                   cached_tokens=np.array([0]), arrival_s=np.array([0.0]))  # fmt: skip
    t_off = unloaded_latency(off, None, requests=req, e2e=False)["ttft_s"][0]
    t_on = unloaded_latency(on, None, requests=req, e2e=False)["ttft_s"][0]
    assert 0 < t_off < t_on


def test_stated_chunking():
    """A row's notes: stated off, stated on (trtllm-serve's flag, NVIDIA's MLPerf harness
    'chunked context', SGLang's size), trtllm-bench throughput (its default is on) unless it
    says --disable_chunked_context, else None."""
    assert stated_chunking("--enable-chunked-prefill False --max-model-len 8192") is False
    assert stated_chunking("trtllm-serve Qwen/Qwen3-32B-FP8 --enable_chunked_prefill;") is True
    assert stated_chunking("in-flight batching with chunked context (max_util)") is True
    assert stated_chunking("--chunked-prefill-size 32768") is True
    assert stated_chunking("0.17.0 | trtllm-bench throughput --backend pytorch") is True
    assert stated_chunking("trtllm-bench throughput --disable_chunked_context") is None
    assert stated_chunking("trtllm-serve --backend pytorch --tp_size 8") is None


@pytest.mark.parametrize("engine_default", [True, False])
def test_emit_matches_the_simulated_default(monkeypatch, engine_default):
    """recommend --emit writes what the option was simulated with: a TensorRT-LLM option
    planned unchunked (the engine's default, switch on) gets no --enable_chunked_prefill and
    no YAML key, and a comment that prompts above max_num_tokens (8192) are refused; planned
    chunked (switch off, shipped), the flag."""
    monkeypatch.setattr(replica_mod, "CHUNKED_PREFILL_ENGINE_DEFAULT", engine_default)
    rep = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "trtllm", context_len=32768)
    es = engine_settings(rep.engine)
    if not engine_default:
        assert es["chunked_prefill"] is True
        res = F.resolve("trtllm", "1.2.0", "test")
        k = Knobs(model_id="llama-3.1-8b", hf_repo=None, framework="trtllm", precision="fp8",
                  kv_precision="fp8", max_num_batched_tokens=es["max_num_batched_tokens"],
                  max_model_len=es["max_model_len"], chunked_prefill=es["chunked_prefill"])  # fmt: skip
        assert "--enable_chunked_prefill" in launch(k, res).flags()
        return
    assert es["chunked_prefill"] is False
    res = F.resolve("trtllm", "1.2.0", "test")
    base = dict(model_id="llama-3.1-8b", hf_repo="meta-llama/Llama-3.1-8B", framework="trtllm",
                precision="fp8", kv_precision="fp8", layout=layout_of(1, 1, 1, 1),
                max_num_seqs=es["max_num_seqs"],
                max_num_batched_tokens=es["max_num_batched_tokens"],
                max_model_len=es["max_model_len"], prefix_caching=None)  # fmt: skip
    la = launch(Knobs(**base, chunked_prefill=es["chunked_prefill"]), res)
    assert "--enable_chunked_prefill" not in la.flags()
    extra = yaml.safe_load(la.files.get("extra_llm_api_options.yaml", "{}")) or {}
    assert "enable_chunked_prefill" not in extra
    assert any("max_num_tokens 8192 is refused" in c for c in la.comments)
    la_on = launch(Knobs(**base, chunked_prefill=True), res)
    assert "--enable_chunked_prefill" in la_on.flags()
