"""A benchmark row's chunked-prefill switch as its notes state it (the engine config or
command line transcribed there), and the harnesses whose own default differs from the
engine's (``trtllm-bench throughput`` chunks; ``trtllm-serve`` does not:
``data/frameworks.yaml`` ``chunked_prefill_default``)."""

from __future__ import annotations

import re

#: chunked prefill stated off: "chunked prefill off / false / disabled", vLLM's
#: ``--no-enable-chunked-prefill``, ``enable_chunked_prefill: False``
CHUNK_OFF = re.compile(
    r"chunked[- _]prefill[^;,]{0,6}(?:off|false|disabled)|no-enable-chunked-prefill"
    r"|enable_chunked_prefill\W{0,3}false",
    re.I,
)
#: chunked prefill stated on: "chunked prefill on / true", ``--enable-chunked-prefill``
#: (vLLM) / ``--enable_chunked_prefill`` (trtllm-serve), SGLang's ``--chunked-prefill-size N``
#: (group 1: N), NVIDIA's MLPerf harness "in-flight batching with chunked context"
CHUNK_ON = re.compile(
    r"chunked[- _]prefill[^;,]{0,4}(?:on|true)\b|--enable[-_]chunked[-_]prefill(?![-_ =]*false)"
    r"|chunked-prefill-size[ =](\d+)|chunked context",
    re.I,
)
#: trtllm-bench's throughput command: ``--enable_chunked_context/--disable_chunked_context``,
#: default True (tensorrt_llm/bench/benchmark/throughput.py, public copy code index id
#: 2404231087), unlike the LLM API's ``enable_chunked_prefill`` (False)
TRTLLM_BENCH = re.compile(r"trtllm-bench throughput(?![^;]*--disable_chunked_context)", re.I)


def stated_chunking(notes: str) -> bool | None:
    """Chunked prefill as a row's ``notes`` state it: False (stated off), True (stated on,
    or run by ``trtllm-bench throughput``, which chunks unless told not to), None (not
    stated: the engine's default)."""
    if CHUNK_OFF.search(notes):
        return False
    if CHUNK_ON.search(notes) or TRTLLM_BENCH.search(notes):
        return True
    return None
