"""The all-reduce latency a row's launch states (data/allreduce.yaml, planner/catalog/
allreduce.py, planner.benchmarks.schema.allreduce_latency_s; issue 29, EP / DEP TPOT).

Hand arithmetic (DeepSeek-V3: 61 layers, 3 dense, 58 MoE; TP8 EP8 without attention DP):

* collectives of a step: 61 attention all-reduces + 3 dense-MLP + 58 post-MoE = 122
  (tests/test_moe_collectives.py);
* NCCL (the prior): 122 x 20 us = 2.44 ms of fixed cost a step;
* the fused all-reduce + RMSNorm of SGLang PR #7621 (8 x B200, DeepSeek-R1-FP4 TP8, 8.7 us):
  122 x 8.7 us = 1.0614 ms; the step is 122 x 11.3 us = 1.3786 ms shorter, bytes unchanged.
* InferenceX's fp4 B200 TP8 EP8 rows decode 1.1-1.3 ms a step faster than its fp8 TP8 rows
  at concurrency 1 (docs/changes/2026-12-07d/sglb200.md); both launches pass
  --enable-flashinfer-allreduce-fusion, so the file gives both the same 8.7 us.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from conftest import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.benchmarks import step_rows
from planner.benchmarks.schema import allreduce_latency_s
from planner.catalog import PRIOR, load_catalog
from planner.catalog.allreduce import (
    AllReduceImpl,
    allreduce_file,
    launch_latency_s,
    saving_latency_s,
)
from planner.catalog.layout import Layout
from planner.engine import step_model
from planner.engine.phases import decode_step
from planner.errors import PlannerError

_CAT = load_catalog(DATA_DIR)
FP4_NOTES = (
    "InferenceX single-node fixed-seq-len sweep, framework 'sglang', precision 'fp4', "
    "spec 'none'; layout TP8 EP8"
)
FP8_NOTES = (
    "InferenceX single-node fixed-seq-len sweep, config dsr1-fp8-b200-sglang, script "
    "benchmarks/single_node/dsr1_fp8_b200.sh @ d4948f993748"
)
H200_NOTES = (
    "InferenceX single-node fixed-seq-len sweep, config dsr1-fp8-h200-sglang, script "
    "benchmarks/single_node/dsr1_fp8_h200.sh @ d4948f993748"
)

COOKBOOK_NOTES = (
    "sglang.bench_serving closed loop: python -m sglang.bench_serving --backend sglang; "
    "server: python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1-0528 --tp 8"
)


def _row(fw="sglang", prec="nvfp4", hw="nvidia-b200", notes=FP4_NOTES):
    return {"framework": fw, "precision": prec, "hardware": hw, "notes": notes}


@pytest.fixture
def on_dir(tmp_path: Path) -> str:
    """A data folder whose allreduce.yaml is the bundled one switched on (file level) as
    s8-symmem scored it: the fusion charged at its absolute latency, the cookbook's launch
    off."""
    text = (DATA_DIR / "allreduce.yaml").read_text(encoding="utf-8")
    assert "\napplied: false\n" in text
    cook = "0.5.6.post1's defaults)\"\n    applied: true"
    assert "\ncharge: saving\n" in text and cook in text
    on = text.replace("\napplied: false\n", "\napplied: true\n")
    on = on.replace("\ncharge: saving\n", "\ncharge: absolute\n")
    on = on.replace(cook, cook.replace("applied: true", "applied: false"))
    (tmp_path / "allreduce.yaml").write_text(on)
    return str(tmp_path)


@pytest.fixture
def saving_dir(tmp_path: Path) -> str:
    """The bundled allreduce.yaml switched on as s12-sglep scored it: the fusion charged as a
    saving, all three launches on."""
    text = (DATA_DIR / "allreduce.yaml").read_text(encoding="utf-8")
    (tmp_path / "allreduce.yaml").write_text(
        text.replace("\napplied: false\n", "\napplied: true\n")
    )
    return str(tmp_path)


def test_records_are_sourced_and_match_the_prior():
    f = allreduce_file(str(DATA_DIR))
    assert f is not None and f.applied is False  # kept off: changes/s8-symmem.md says why
    ids = {i.id: i for i in f.implementations}
    assert set(ids) == {"nccl", "flashinfer_fused_rmsnorm", "nccl_symmetric"}
    assert ids["nccl"].latency_s == PRIOR.comm_latency_s == pytest.approx(20e-6)
    assert ids["flashinfer_fused_rmsnorm"].latency_s == pytest.approx(8.7e-6)  # PR #7621
    assert ids["nccl_symmetric"].latency_s is None  # no 8-GPU decode-size number published
    for r in (*f.implementations, *f.launches):
        assert len(r.source) > 40 and r.as_of <= dt.date(2026, 12, 7)
    assert {la.implementation for la in f.launches} == {"flashinfer_fused_rmsnorm"}
    assert len(f.launches) == 3  # InferenceX fp4 and fp8 Blackwell scripts, the cookbook's B200


def test_off_file_changes_no_row(on_dir):
    assert launch_latency_s("sglang", "nvfp4", "nvidia-b200", FP4_NOTES, str(DATA_DIR)) is None
    assert allreduce_latency_s(_row()) is None  # the bundled file: every prediction is main's
    assert launch_latency_s("sglang", "nvfp4", "nvidia-b200", FP4_NOTES, on_dir) == (
        pytest.approx(8.7e-6)
    )


@pytest.mark.parametrize(
    ("row", "want"),
    [
        (_row(), 8.7e-6),  # fp4 B200 launch: fusion (+ symm-mem, which fusion bypasses)
        (_row(hw="nvidia-b300"), 8.7e-6),
        (_row(prec="fp8", notes=FP8_NOTES), 8.7e-6),  # fp8 B200 launch: fusion
        (_row(prec="fp8", hw="nvidia-h200-sxm", notes=H200_NOTES), None),  # no fusion flag
        (_row(fw="trtllm"), None),
        (_row(prec="fp8", notes=COOKBOOK_NOTES), None),  # recorded, its launch not applied
        (
            _row(
                prec="bf16",
                notes=COOKBOOK_NOTES.replace("deepseek-ai/DeepSeek-R1-0528", "Qwen/Qwen3-235B"),
            ),
            None,
        ),  # fmt: skip
        (_row(prec="fp8", hw="nvidia-h200-sxm", notes=COOKBOOK_NOTES), None),  # sm90: no rule
        (_row(prec="fp8"), None),  # fp8 precision with the fp4 launch's notes
    ],
)
def test_applied_launches(on_dir, row, want):
    got = launch_latency_s(
        row["framework"], row["precision"], row["hardware"], row["notes"], on_dir
    )
    assert got == (pytest.approx(want) if want is not None else None)


def test_bad_file_is_one_line_naming_the_field(tmp_path):
    text = (DATA_DIR / "allreduce.yaml").read_text(encoding="utf-8")
    bad = text.replace("implementation: flashinfer_fused_rmsnorm", "implementation: mscclpp", 1)
    (tmp_path / "allreduce.yaml").write_text(bad)
    with pytest.raises(PlannerError, match=r"allreduce.yaml.*launches.0.implementation"):
        allreduce_file(str(tmp_path))
    neg = text.replace("latency_s: 8.7e-6", "latency_s: -8.7e-6", 1)
    d2 = tmp_path / "neg"
    d2.mkdir()
    (d2 / "allreduce.yaml").write_text(neg)
    with pytest.raises(PlannerError, match=r"latency_s"):
        allreduce_file(str(d2))


def test_fused_latency_shortens_a_tp8_ep8_step_by_hand():
    """122 collectives x (20 - 8.7) us = 1.3786 ms shorter; the bytes term unchanged."""
    lay = Layout(tp=8, ep=8)
    kw = dict(layout=lay, catalog=_CAT)
    nccl = step_model("deepseek-v3", "nvidia-b200", "fp4", "fp8", params=PRIOR, **kw)
    fused = step_model("deepseek-v3", "nvidia-b200", "fp4", "fp8",
                       params=PRIOR.with_(comm_latency_s=8.7e-6), **kw)  # fmt: skip
    assert nccl.collectives == fused.collectives == 122
    a, b = decode_step(nccl, 1, 2000), decode_step(fused, 1, 2000)
    assert a.t_comm_s - b.t_comm_s == pytest.approx(122 * 11.3e-6, rel=1e-9)
    assert a.time_s - b.time_s == pytest.approx(1.3786e-3, rel=1e-9)
    assert a.comm_bytes == b.comm_bytes


def test_fit_path_carries_the_launch_latency():
    """The fit's shared step model (step_rows) charges a launch's latency with any fitted
    parameter vector, as the simulator does; without one, the vector's own."""
    m, g = _CAT.model("deepseek-v3"), _CAT.gpu("nvidia-b200")
    p, lay = _CAT.precision("fp4"), Layout(tp=8, ep=8)
    q = PRIOR.with_(layer_overhead_s=70e-6)
    sm_ar = step_rows._shared_setup(m, g, p, "fp8", lay, _CAT, False, 8.7e-6)
    sm_no = step_rows._shared_setup(m, g, p, "fp8", lay, _CAT, False, None)
    assert sm_ar is not sm_no
    assert step_rows._with_params(sm_ar, q).params.comm_latency_s == pytest.approx(8.7e-6)
    assert step_rows._with_params(sm_ar, q).params.layer_overhead_s == pytest.approx(70e-6)
    assert step_rows._with_params(sm_no, q).params.comm_latency_s == pytest.approx(20e-6)


def test_saving_reading_by_hand(saving_dir):
    """s12-sglep: PR #7621 timed the separate custom all-reduce + RMSNorm at 13.5 us and the
    fused kernel at 8.7 us on the same B200 step, a saving of 4.8 us a collective; read as a
    saving off the 20 us prior: 20 - (13.5 - 8.7) = 15.2 us. TP8 EP8 DeepSeek-V3: 122 x 4.8 us
    = 0.5856 ms a step (the absolute reading: 122 x 11.3 us = 1.3786 ms)."""
    f = allreduce_file(saving_dir)
    assert f.charge == "saving"
    fused = f.impl("flashinfer_fused_rmsnorm")
    assert fused.replaces_s == pytest.approx(13.5e-6)
    assert saving_latency_s(fused) == pytest.approx(15.2e-6, rel=1e-9)
    assert saving_latency_s(f.impl("nccl")) is None  # no fusion, no saving
    got = launch_latency_s("sglang", "nvfp4", "nvidia-b200", FP4_NOTES, saving_dir)
    assert got == pytest.approx(15.2e-6, rel=1e-9)
    assert launch_latency_s("trtllm", "nvfp4", "nvidia-b200", FP4_NOTES, saving_dir) is None
    cook = launch_latency_s("sglang", "fp8", "nvidia-b200", COOKBOOK_NOTES, saving_dir)
    assert cook == pytest.approx(15.2e-6, rel=1e-9)  # the release's default fusion
    assert 122 * (PRIOR.comm_latency_s - got) == pytest.approx(0.5856e-3, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    lat=st.floats(1e-6, 19e-6),
    extra=st.floats(0.0, 30e-6),
)
def test_saving_never_exceeds_the_prior_nor_goes_negative(lat, extra):
    """Property: the saving reading charges between 0 and the prior, and exactly the prior
    less (replaces - latency) wherever that is positive."""
    impl = AllReduceImpl(
        id="x1", name="fused x", latency_s=lat, replaces_s=lat + extra if extra > 0 else None,
        topology="any", source="s" * 41, as_of="2026-01-01",
    )  # fmt: skip
    got = saving_latency_s(impl)
    if extra <= 0 or impl.replaces_s is None or impl.replaces_s <= lat:
        assert got is None
    else:
        assert 0.0 <= got <= PRIOR.comm_latency_s
        assert got == pytest.approx(max(0.0, PRIOR.comm_latency_s - extra), abs=1e-12)
