"""The MoE dispatch of SGLang's disaggregated pools (issue 30, "Done when" item 3): attention
DP without ``--moe-a2a-backend`` (SGLang's default ``none``) gathers every token around
each MoE layer, by an all-reduce in a step with a prompt chunk (``DpPaddingMode.SUM_LEN``)
and an all-gather + reduce-scatter in a decode step (``MAX_LEN``); read per pool from the
recipe text (scripts/annotate_moe_dispatch.py) and applied by ``build_disagg``.
Hand-derived numbers in the comments."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.benchmarks.disagg_rows import disagg_layout, moe_dispatch
from planner.catalog.catalog import load_catalog
from planner.catalog.layout import layout_of
from planner.engine.adp import dispatch_bytes_per_token, gathered_dispatch_bytes_per_token
from planner.serving.disagg import Disaggregated, Pool, build_disagg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import annotate_moe_dispatch as amd  # noqa: E402

CAT = load_catalog()
DEP8 = layout_of(1, 1, 8, 8)


def _row(rid: str) -> dict:
    for rel in ("public_inferencex.csv", "public_inferencex_history.csv"):
        with (ROOT / "data/benchmarks" / rel).open(newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                if r["id"] == rid:
                    return r
    raise KeyError(rid)


def test_gathered_bytes_dep8_by_hand():
    # DeepSeek-V3 (hidden 7,168, E = 256, top-8) as DEP8, per replica token and MoE layer:
    # a prompt step all-reduces the zero-padded buffer of all tokens (ring 2 x 7/8 of it)
    # and all-reduces the expert outputs again: 2 x 2 x 7/8 x 7,168 x 2 B = 50,176 B;
    # a decode step all-gathers and reduce-scatters: 2 x 7/8 x 7,168 x 2 = 25,088 B;
    # the all-to-all the planner charges otherwise: q = 1 - (1 - 32/256)^8 = 1 - 0.875^8 =
    # 1 - 0.343609 = 0.656391, 7 x 0.656391 / 8 x 7,168 x 4 = 16,467.5 B
    assert gathered_dispatch_bytes_per_token(DEP8, 7168, extend=True) == pytest.approx(50176)
    assert gathered_dispatch_bytes_per_token(DEP8, 7168, extend=False) == pytest.approx(25088)
    assert dispatch_bytes_per_token(DEP8, 256, 8, 7168) == pytest.approx(16467.5, abs=0.1)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([2, 4, 8, 16, 32, 48, 72]), st.integers(64, 16384))
def test_gather_never_below_the_all_to_all_and_prompt_steps_twice_decode(w, hidden):
    lay = layout_of(1, 1, w, w)
    g_pre = gathered_dispatch_bytes_per_token(lay, hidden, extend=True)
    g_dec = gathered_dispatch_bytes_per_token(lay, hidden, extend=False)
    assert g_pre == pytest.approx(2.0 * g_dec)
    assert g_dec >= dispatch_bytes_per_token(lay, 256, 8, hidden) - 1e-9
    assert gathered_dispatch_bytes_per_token(layout_of(1, 1, 1, 1), hidden, True) == 0.0


def test_recipe_dispatch_per_pool():
    # unset -> SGLang's default none; a pool without DP attention -> none (its all-reduce
    # is already the gather form); deepep where the section sets it
    text = """
backend:
  sglang_config:
    prefill: {enable-dp-attention: true, data-parallel-size: 8}
    decode: {enable-dp-attention: true, moe-a2a-backend: deepep}
"""
    assert amd.recipe_dispatch(text) == {"prefill": "none", "decode": "deepep"}
    tep = "backend:\n  sglang_config:\n    prefill: {moe-a2a-backend: deepep}\n    decode: {}\n"
    assert amd.recipe_dispatch(tep) == {"prefill": "none", "decode": "none"}
    assert amd.recipe_dispatch("backend: {}") == "no sglang_config prefill section"


def test_rows_parse_b200_none_gb200_deepep():
    # ixh-0786: recipes/b200-fp8/8k1k/mtp/max-tpt-dep8-2p1d.yaml @ 5063eb432640 sets no
    # moe-a2a-backend in either pool (both DP attention): both gather
    n = _row("ixh-0786")["notes"]
    assert moe_dispatch(n) == {"prefill": False, "decode": False}
    lay = disagg_layout(n)
    assert lay["prefill"]["moe_all_to_all"] is False and lay["decode"]["moe_all_to_all"] is False
    # ixh-1472 (GB200 nvfp4 6P(TP4)+1D(DEP48), gb200-fp4/8k1k/mid-curve.yaml): prefill TP4
    # without DP attention (none), decode moe-a2a-backend deepep (the all-to-all)
    n = _row("ixh-1472")["notes"]
    assert moe_dispatch(n) == {"prefill": False, "decode": True}
    assert "moe_all_to_all" not in disagg_layout(n)["decode"]
    # a TensorRT-LLM row carries no note: the layout's default
    assert moe_dispatch(_row("ixh-0989")["notes"]) is None


def test_build_disagg_adds_the_gather_bytes_by_hand():
    # B200 fp8 1P(DEP8)+1D(DEP8): with the gather, each replica token of a prefill step moves
    # (50,176 - 16,467.5) x 58 MoE layers = 1,955,093 B more; a decode step
    # (25,088 - 16,467.5) x 58 = 499,989 B more; nothing else of the step model changes
    def pools(a2a: bool):
        p = Pool(gpu="nvidia-b200", framework="sglang", precision="fp8", tp=1, ep=8,
                 attention_dp=8, moe_all_to_all=a2a)  # fmt: skip
        return build_disagg("deepseek-v3", Disaggregated(prefill=p, decode=p), catalog=CAT)

    a, g = pools(True), pools(False)
    q = 1.0 - 0.875**8
    a2a = 7 * q / 8 * 7168 * 4
    assert g.prefill.sm.comm_bytes_per_token - a.prefill.sm.comm_bytes_per_token == (
        pytest.approx((50176 - a2a) * 58)
    )
    assert g.decode.sm.comm_bytes_per_token - a.decode.sm.comm_bytes_per_token == (
        pytest.approx((25088 - a2a) * 58)
    )
    assert g.prefill.sm.matmul_flops_per_token == a.prefill.sm.matmul_flops_per_token
    # more bytes on the same link: a prompt step is never faster
    tokens = 8 * 4096
    t_a = a.prefill.sm.step(tokens, 8, 8, tokens, 8 * 4096 * 4097 / 2).time_s
    t_g = g.prefill.sm.step(tokens, 8, 8, tokens, 8 * 4096 * 4097 / 2).time_s
    assert t_g > t_a


def test_rerun_changes_nothing():
    assert amd.note_for(_row("ixh-0786")) == "-already annotated"
    # TensorRT-LLM rows are not SGLang's: left alone
    assert amd.note_for(_row("ixh-0989")) is None
