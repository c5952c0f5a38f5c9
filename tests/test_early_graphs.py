"""CUDA-graph facts of two early-2025 DeepSeek serving sources, read in the engines' source
(issues 29, 32; docs/changes/2026-12-07c/dstack.md).

* dstack's TensorRT-LLM H200 rows (``trtllm-serve --backend pytorch --tp_size 8 --ep_size 4``,
  image built from TensorRT-LLM commit 9b931c0f): ``tensorrt_llm/_torch/pyexecutor/config.py``
  @ 9b931c0f6305 declares ``use_cuda_graph: bool = False`` and trtllm-serve of that period
  passes ``PyTorchConfig(enable_overlap_scheduler=True)`` (or no config at all); the dstack task
  passes no ``--extra_llm_api_options``. Every step ran eagerly: ``CUDA graphs off``
  (``scripts/annotate_early_graphs.py``).
* The SGLang v0.4.1 DeepSeek-V3 H200 benchmark's BF16 and two-node FP8 commands pass
  ``--disable-cuda-graph``; their rows say ``cuda_graph=disabled``, which
  :func:`planner.benchmarks.schema.graphs_off` reads. The single-node FP8 command does not
  pass it, but SGLang 0.4.1 itself turned the graphs off for DeepSeek-V3 with MLA on
  (``sglang/srt/model_executor/model_runner.py`` of the 0.4.1 wheel: ``if
  "DeepseekV3ForCausalLM" in ...architectures and not disable_cuda_graph:
  disable_cuda_graph = True``, under ``# FIXME(HandH1998)``; gone in 0.4.1.post1): its rows say
  ``CUDA graphs off`` (``scripts/annotate_early_graphs.py``).
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.benchmarks.schema import graphs_off
from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.serving.replica import build_replica

ROOT = Path(__file__).resolve().parents[1]
DSTACK = "dstack benchmark: DeepSeek-R1 on 8xMI300X vs 8xH200"
SGLDSV3 = "SGLang DeepSeek-V3 H200 benchmark (v0.4.1)"


def _script():
    spec = importlib.util.spec_from_file_location(
        "annotate_early_graphs", ROOT / "scripts" / "annotate_early_graphs.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(name):
    with (ROOT / "data" / "benchmarks" / name).open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_graphs_off_reads_both_spellings():
    assert graphs_off("...; CUDA graphs off (TensorRT-LLM @ 9b931c0f ...)")
    assert graphs_off("mem_fraction_static=0.8; cuda_graph=disabled")
    assert not graphs_off("cuda_graph=enabled")
    assert not graphs_off("cuda_graph=disabledness")  # a whole key only
    assert not graphs_off("CUDA graphs for batch sizes [1, 2, 4] per rank, padding on")
    assert not graphs_off("")


def test_every_dstack_trtllm_row_is_graphs_off_and_no_other_dstack_row():
    """36 rows = 9 online runs (concurrency 4..128 at output 800, 128 at 1600 / 3200 / 6400)
    x 4 metrics; the SGLang and vLLM runs of the source keep their graphs (SGLang's and vLLM's
    defaults; none of their commands disables them)."""
    rows = [r for r in _rows("public_amd.csv") if r["source"] == DSTACK]
    trt = [r for r in rows if r["framework"] == "trtllm"]
    assert len(trt) == 9 * 4 == 36
    for r in trt:
        assert graphs_off(r["notes"]), r["id"]
        assert "9b931c0f" in r["notes"] and "use_cuda_graph: bool = False" in r["notes"]
    assert not any(graphs_off(r["notes"]) for r in rows if r["framework"] != "trtllm")


def test_sgldsv3_every_row_is_graphs_off_and_says_why():
    """64 rows: BF16 single node (16) and both two-node tables (32) ran with
    ``--disable-cuda-graph``; the single-node FP8 table (16, sgldsv3-0017..0032) did not pass
    it, and its rows name SGLang 0.4.1's own switch (DeepseekV3ForCausalLM with MLA on) instead.
    No row of the source disables MLA (``--disable-mla``), the switch's condition."""
    rows = [r for r in _rows("public_nvidia.csv") if r["source"] == SGLDSV3]
    assert len(rows) == 64
    assert all(graphs_off(r["notes"]) for r in rows)
    assert not any("--disable-mla" in r["notes"] for r in rows)
    cmd = {r["id"] for r in rows if "--disable-cuda-graph" in r["notes"]}
    assert len(cmd) == 48
    own = {r["id"] for r in rows if "DeepseekV3ForCausalLM" in r["notes"]}
    assert own == {f"sgldsv3-{i:04d}" for i in range(17, 33)}
    assert own.isdisjoint(cmd)
    for r in rows:
        if r["id"] in own:
            assert r["framework_version"].startswith("v0.4.1 "), r["id"]  # not a .postN


def test_annotate_is_idempotent_on_the_data():
    mod = _script()
    for rel, pick, clause in mod.RULES:
        text = (ROOT / rel).read_text()
        again, n = mod.annotate(text, pick, clause)
        assert n == 0 and again == text  # the committed data already carries every clause


_LINE = st.text(alphabet='abc,;=" ', max_size=30)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_LINE, st.booleans()), max_size=8))
def test_annotate_property(lines):
    """Annotating twice equals annotating once; only picked lines ending in a quote change,
    each by exactly '; clause' before its closing quote."""
    mod = _script()
    pick, clause = "PICK", "CUDA graphs off (x)"
    text = "".join((f'{s}{pick}{s}"' if p else s) + "\n" for s, p in lines)
    once, n = mod.annotate(text, pick, clause)
    twice, m = mod.annotate(once, pick, clause)
    assert twice == once and m == 0
    assert n == sum(1 for s, p in lines if p and clause not in s)
    for a, b in zip(text.splitlines(), once.splitlines(), strict=True):
        assert b == a or b == a[:-1] + "; " + clause + '"'


@pytest.fixture(scope="module")
def r1_replicas():
    """DeepSeek-R1 fp8 on 8 H200, TensorRT-LLM, TP8 EP4 (dstack's layout), eager floor
    0.9 ms a layer (a round number for the arithmetic, not a fitted value)."""
    cat = load_catalog()
    p = PRIOR.with_(eager_layer_s=0.9e-3, serving_eager_layer_s=0.0)
    kw = dict(tp=8, ep=4, params=p, catalog=cat, max_num_seqs=512, host_overlap=False)
    on = build_replica("deepseek-r1", "nvidia-h200-sxm", "fp8", "trtllm", **kw)
    off = build_replica("deepseek-r1", "nvidia-h200-sxm", "fp8", "trtllm", graphs_off=True, **kw)
    return on, off


@pytest.mark.parametrize("n", [4, 128])
def test_eager_decode_step_of_a_61_layer_moe(r1_replicas, n):
    """A decode step of n sequences at 3,600 context tokens each: graphs on, GPU time g plus
    overheads; graphs off, the GPU part becomes (g^4 + E^4)^(1/4) with E = 0.9 ms x 61 layers
    = 54.9 ms (DeepSeek-R1 has 61 layers). At c = 4 dstack measured 55.1 ms TPOT."""
    on, off = r1_replicas
    assert on.sm.layers == 61
    args = (n, n, n, 3600.0 * n, 3600.0 * n)
    b = on.sm.step(*args)
    g = float(b.t_gemm_s + b.t_attn_s + b.t_comm_s)
    e = 0.9e-3 * 61
    assert e == pytest.approx(54.9e-3)
    want = float(b.time_s) - g + (g**4 + e**4) ** 0.25
    assert off.sm.step_time(*args) == pytest.approx(want, rel=1e-9)
    assert off.sm.step_time(*args) >= e  # never faster than the eager dispatch
    assert off.sm.step_time(*args) > on.sm.step_time(*args)
