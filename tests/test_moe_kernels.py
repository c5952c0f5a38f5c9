"""A published MoE layer timing as the routed experts' floor (data/moe_kernels.yaml,
planner/catalog/moe_kernels.py, planner/engine/moe_floor.py; issue 29, DeepSeek-R1 8-GPU front).

Hand arithmetic (DeepSeek-V3, data/models.yaml: hidden 7,168, moe_intermediate 2,048, 256
routed experts, top-8, 58 MoE layers of 61; NVFP4 on Blackwell = 4.5 bits a weight):

* one expert of one layer: 3 x 7,168 x 2,048 = 44,040,192 weights x 4.5 / 8 = 24,772,608 B;
  an EP8 shard's 32 experts: 792,723,456 B.
* FlashInfer PR #5301, trtllm-gen NVFP4 MoE on a B300 at 128 tokens (all 32 local experts
  hit): 143.617 us -> 792,723,456 / 143.617e-6 = 5.5197e12 B/s = 0.68996 of 8 TB/s.
* 58 MoE layers x 143.617 us = 8.329786 ms: a B200 DEP8 decode step of 128 sequences spends
  at least that in its routed experts (at the prior mem_eff 0.80 the planner read 31.45
  expected experts x 58 x 24,772,608 B = 45.2 GB in 7.07 ms).
* read as a fixed part plus a weight stream (1 token hits 32 x 8 / 256 = 1 local expert,
  24.77 MB; 128 tokens hit 32 x (1 - (248/256)^128) = 31.45, 779.1 MB): slope (143.617 -
  25.697) / (779.1 - 24.77) = 0.15633 us/MB = 6.40 TB/s = 0.80 of 8 TB/s, intercept 25.697 -
  24.77 x 0.15633 = 21.82 us a layer.
* the record is kept NOT applied (applied: false): the bundled step models have no floor and
  every prediction is main's; the tests below apply it through a patched reader.
* between timed counts, linear: 96 tokens = 140.064 + (143.617 - 140.064) x 32 / 64 =
  141.8405 us; above the memory-bound regime (512 tokens, 165.953 us; 293.810 us at 1,024:
  the kernel turns compute bound) the floor holds 165.953 us.
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest
from conftest import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import PRIOR, load_catalog, moe_kernels
from planner.catalog.layout import Layout
from planner.catalog.moe_kernels import moe_layer_timing, moe_layer_timings
from planner.engine import step_model
from planner.engine.moe_floor import floor_points, layer_time
from planner.engine.phases import decode_step, decode_time
from planner.errors import PlannerError

_CAT = load_catalog(DATA_DIR)
DEP8 = Layout(tp=1, ep=8, attention_dp=8)
TP8EP8 = Layout(tp=8, ep=8)


def _rec():
    (rec,) = moe_layer_timings(str(DATA_DIR))
    return rec


def _sm(gpu="nvidia-b200", prec="fp4", layout=DEP8, params=PRIOR):
    return step_model("deepseek-v3", gpu, prec, "fp8", layout=layout, params=params, catalog=_CAT)


@pytest.fixture
def applied(monkeypatch):
    """The record as if marked ``applied: true`` (what flipping the flag does)."""
    rec = _rec().model_copy(update={"applied": True})
    monkeypatch.setattr(moe_kernels, "moe_layer_timings", lambda data_dir=None: (rec,))
    return rec


def test_kept_not_applied_so_predictions_are_mains():
    r = _rec()
    assert not r.applied and "NOT APPLIED" in r.notes and "33.4%" in r.notes
    m = _CAT.model("deepseek-v3")
    assert moe_layer_timing(m, "fp4", "blackwell", 8, 1) is None
    sm = _sm()
    assert sm.moe_kernel_points == () and sm._coeffs[69:103] == (0.0,) * 34


def test_fixed_part_and_weight_stream_by_hand():
    r = _rec()
    one = 3 * 7168 * 2048 * 4.5 / 8 / 1e6  # MB
    hit = [32 * (1 - (1 - 8 / 256) ** n) * one for n in (1, 128)]
    assert hit == pytest.approx([24.77, 779.1], rel=2e-4)
    t1, t128 = r.time_us[0], r.time_us[r.tokens.index(128)]
    slope = (t128 - t1) / (hit[1] - hit[0])  # us / MB
    assert slope == pytest.approx(0.15633, rel=1e-3)
    assert 1 / slope / 8 == pytest.approx(0.80, abs=0.005)  # 1 MB/us = 1 TB/s, of 8 TB/s
    assert t1 - hit[0] * slope == pytest.approx(21.82, abs=0.01)
    assert math.isclose(32 * (1 - (248 / 256) ** 128), 31.45, rel_tol=1e-3)


def test_record_is_sourced_dated_and_the_catalog_shape():
    r = _rec()
    assert "5301" in r.source and "B300" in r.source and r.as_of <= dt.date.today()
    m = _CAT.model("deepseek-v3")
    assert (
        (r.hidden_size, r.moe_intermediate_size, r.num_experts, r.top_k)
        == (
            m.hidden_size,
            m.moe_intermediate_size,
            m.num_experts,
            m.num_experts_per_tok,
        )
        == (7168, 2048, 256, 8)
    )
    assert r.reference_mem_bw_gbs == _CAT.gpu(r.reference_gpu).mem_bw_gbs == 8000
    assert "CUTLASS" in r.notes and "4985" in r.notes  # the slower backend, named


def test_achieved_bandwidth_by_hand():
    r = _rec()
    sm = _sm()
    one = 3 * 7168 * 2048 * 4.5 / 8
    assert one == 24_772_608
    assert sm.expert_bytes == pytest.approx(one * 58, rel=1e-12)  # per expert, all MoE layers
    t128 = r.time_us[r.tokens.index(128)] * 1e-6
    assert 32 * one / t128 == pytest.approx(5.5197e12, rel=1e-4)
    assert 32 * one / t128 / 8e12 == pytest.approx(0.68996, rel=1e-4)


def test_layer_time_by_hand():
    pts = floor_points(_rec(), 8000)
    assert [p[0] for p in pts] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    got = layer_time(pts, [0, 0.5, 1, 96, 128, 512, 1024, 32768])
    assert got == pytest.approx(
        [0, 25.697e-6, 25.697e-6, 141.8405e-6, 143.617e-6, 165.953e-6, 165.953e-6, 165.953e-6],
        rel=1e-12,
    )
    # a GPU of half the bandwidth streams the same weights in twice the time
    assert layer_time(floor_points(_rec(), 4000), 128) == pytest.approx(287.234e-6, rel=1e-12)


def test_which_steps_it_floors(applied):
    m = _CAT.model("deepseek-v3")
    assert moe_layer_timing(m, "fp4", "blackwell", 8, 1) is not None
    for args in [("fp8", "blackwell", 8, 1), ("fp4", "hopper", 8, 1), ("fp4", "blackwell", 4, 1),
                 ("fp4", "blackwell", 8, 2), ("fp4", "blackwell", 1, 8)]:  # fmt: skip
        assert moe_layer_timing(m, *args) is None, args
    assert len(_sm().moe_kernel_points) == 10 and _sm().moe_kernel_layers == 58
    assert len(_sm(layout=TP8EP8).moe_kernel_points) == 10
    assert len(_sm("nvidia-gb200").moe_kernel_points) == 10
    for sm in (_sm(prec="fp8"), _sm(layout=Layout(tp=1, ep=4, attention_dp=4)),
               _sm(layout=Layout(tp=8))):  # fmt: skip
        assert sm.moe_kernel_points == () and sm._coeffs[69:103] == (0.0,) * 34


def test_dep8_decode_step_by_hand(applied):
    """B200 DEP8, 128 decoders at 1,434 tokens, prior parameters: the GEMM term is the dense
    weights at mem_eff plus 58 x 143.617 us, above the 45.2 GB of experts at 0.80 x 8 TB/s."""
    sm = _sm()
    b = decode_step(sm, 128, 1434)
    bw = 8e12 * PRIOR.mem_eff
    act = sm.act_bytes_per_token / 8 * 128
    t_dense = (sm.dense_weight_bytes + sm.lm_head_bytes + act) / bw
    assert b.t_gemm_s - t_dense == pytest.approx(58 * 143.617e-6, rel=1e-9)  # 8.329786 ms
    experts = float(b.weight_bytes) - sm.dense_weight_bytes - sm.lm_head_bytes
    assert experts / 1e9 == pytest.approx(45.2, rel=0.01)
    assert experts / bw < 58 * 143.617e-6  # 7.07 ms: the floor binds
    assert decode_time(sm, 128, 1434) == pytest.approx(b.time_s, rel=1e-12)


@pytest.mark.parametrize("layout", [DEP8, TP8EP8])
@pytest.mark.parametrize(
    "args",
    [
        (1, 1, 1, 900, 900),
        (128, 128, 128, 1.8e5, 1.8e5),
        (1100, 77, 77, 9e4, 6e5),
        (4096, 4096, 4096, 5e6, 5e6),
        (20000, 20000, 20000, 1e7, 1e7),
    ],  # fmt: skip
)
def test_scalar_equals_vector(applied, layout, args):
    sm = _sm(layout=layout)
    assert sm.step_time(*args) == pytest.approx(sm.step(*args).time_s, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4096), st.floats(200, 20000))
def test_floor_never_shortens_and_grows_with_tokens(n, ctx):
    """A floored step is never shorter than the same step without the record, and more
    decoders never shorten it (the timings rise with the tokens)."""
    from dataclasses import replace

    rec = _rec()
    sm = replace(_sm(), moe_kernel_points=floor_points(rec, 8000), moe_kernel_layers=58.0)
    bare = replace(sm, moe_kernel_points=(), moe_kernel_layers=0.0)
    assert decode_time(sm, n, ctx) >= decode_time(bare, n, ctx)
    assert decode_time(sm, n + 1, ctx) >= decode_time(sm, n, ctx)
    assert np.all(np.diff(_rec().time_us) > 0)


def test_bad_record_is_one_line(tmp_path):
    text = (DATA_DIR / "moe_kernels.yaml").read_text()
    bad = text.replace("tokens: [1, 2, 4,", "tokens: [1, 4, 2,")
    (tmp_path / "moe_kernels.yaml").write_text(bad)
    with pytest.raises(PlannerError) as e:
        moe_layer_timings(str(tmp_path))
    msg = str(e.value)
    assert "\n" not in msg and "moe_kernels.yaml" in msg and "increasing" in msg
    (tmp_path / "moe_kernels.yaml").write_text(
        text.replace("memory_bound_max_tokens: 512", "memory_bound_max_tokens: 500")
    )
    moe_layer_timings.cache_clear()
    with pytest.raises(PlannerError, match="memory_bound_max_tokens"):
        moe_layer_timings(str(tmp_path))


def test_no_file_no_floor(tmp_path):
    assert moe_layer_timings(str(tmp_path)) == ()
