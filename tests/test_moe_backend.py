"""An engine MoE backend's published per-layer surplus (planner.catalog.moe_backends,
planner.engine.moe_backend, ``StepModel.moe_backend_s``; s11-trtdep, issue 29 / 30: the
TensorRT-LLM B200 DEP decode step). Hand-derived numbers in the docstrings."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from planner.benchmarks.schema import moe_backend_setting
from planner.catalog import load_catalog
from planner.catalog.catalog import DATA_DIR
from planner.catalog.layout import layout_of
from planner.catalog.moe_backends import MoeBackendSurplus, backend_surplus_s, moe_backends
from planner.engine.moe_backend import moe_layers_on_stage, with_moe_backend
from planner.engine.step import step_model

CAT = load_catalog()
#: FlashInfer PR #4985, CUTLASS - TRTLLM NVFP4 at 1 / 2 / 4 / 8 / 16 tokens [us]
DIFFS_US = (48 - 26, 58 - 36, 70 - 51, 86 - 64, 97 - 76)  # 22, 22, 19, 22, 21


def _data_dir(tmp_path: Path, applied: bool) -> str:
    """A copy of the record file with its switch set to ``applied``."""
    d = yaml.safe_load((Path(DATA_DIR) / "moe_backends.yaml").read_text())
    d["applied"] = applied
    (tmp_path / "moe_backends.yaml").write_text(yaml.safe_dump(d))
    return str(tmp_path)


def _dep8(prec="fp4", gpu="nvidia-b200"):
    return step_model("deepseek-v3", gpu, prec, "fp8", catalog=CAT, layout=layout_of(1, 1, 8, 8))


def test_notes_name_the_backend():
    """The forms a run states it in: the LLM-API JSON of InferenceX's server commands, the
    YAML of a recipe, a harness variable and the annotation note; nothing: None."""
    assert (
        moe_backend_setting('"stream_interval":10,"moe_config":{"backend":"TRTLLM"}}') == "TRTLLM"
    )
    assert moe_backend_setting("moe_config:\n      backend: DEEPGEMM") == "DEEPGEMM"
    assert moe_backend_setting("MOE_BACKEND=cutlass") == "CUTLASS"
    assert moe_backend_setting("x; moe backend CUTLASS (InferenceX ...)") == "CUTLASS"
    assert moe_backend_setting("attention_dp_config: enable_balance: true") is None


def test_surplus_by_hand():
    """(22 + 22 + 19 + 22 + 21) / 5 = 21.2 us a MoE layer, whatever the switch says."""
    (rec,) = moe_backends(applied_only=False)
    assert rec.surplus_s == pytest.approx(sum(DIFFS_US) / 5 * 1e-6, rel=1e-12)
    assert rec.surplus_s == pytest.approx(21.2e-6, rel=1e-12)
    assert rec.source and rec.as_of


def test_which_deployments():
    """Only TensorRT-LLM's CUTLASS backend, NVFP4 experts, Blackwell: the record's shape."""
    ok = backend_surplus_s("trtllm", "cutlass", "fp4", "blackwell", applied_only=False)
    assert ok == pytest.approx(21.2e-6)
    for args in (
        ("trtllm", "TRTLLM", "fp4", "blackwell"),
        ("trtllm", "CUTLASS", "fp8", "blackwell"),
        ("trtllm", "CUTLASS", "fp4", "hopper"),
        ("sglang", "CUTLASS", "fp4", "blackwell"),
        ("trtllm", None, "fp4", "blackwell"),
    ):
        assert backend_surplus_s(*args, applied_only=False) == 0.0


def test_step_gains_58_layers(tmp_path):
    """DeepSeek-R1 NVFP4 DEP8 on B200, 16 sequences a rank at a 1.5k context: the step
    gains 58 MoE layers x 21.2 us = 1.2296 ms, in the vector and the scalar form alike."""
    sm = _dep8()
    on = with_moe_backend(sm, "trtllm", "CUTLASS", _data_dir(tmp_path, True))
    assert moe_layers_on_stage(sm) == 58
    assert on.moe_backend_s == pytest.approx(58 * 21.2e-6, rel=1e-12)  # 1.2296e-3 s
    a = (128, 128, 128, 128 * 1500, 128 * 1500)
    gain = float(on.step(*a).time_s) - float(sm.step(*a).time_s)
    assert gain == pytest.approx(1.2296e-3, rel=1e-9)
    assert on.step_time(*a) - sm.step_time(*a) == pytest.approx(1.2296e-3, rel=1e-9)


def test_switch_off_and_other_backends_keep_the_step(tmp_path):
    """``applied: false`` (or another backend) leaves the step model as it is."""
    sm = _dep8()
    assert with_moe_backend(sm, "trtllm", "CUTLASS", _data_dir(tmp_path, False)) is sm
    assert with_moe_backend(sm, "trtllm", "TRTLLM", _data_dir(tmp_path, True)) is sm
    assert (
        with_moe_backend(_dep8("fp8"), "trtllm", "CUTLASS", _data_dir(tmp_path, True)).moe_backend_s
        == 0
    )


def test_bad_record_is_one_error():
    """Columns of unequal length are refused when the record is read."""
    with pytest.raises(ValidationError, match="same length"):
        MoeBackendSurplus(
            id="x1", framework="trtllm", backend="CUTLASS", reference_backend="TRTLLM",
            precision="fp4", arch="blackwell", tokens=(1, 2), backend_ms=(0.1,),
            reference_ms=(0.05, 0.06), source="test", as_of="2026-12-07",
        )  # fmt: skip


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 512),
    ctx=st.integers(64, 16384),
)
def test_never_faster(tmp_path_factory, n, ctx):
    """Property: the surplus adds the same constant to every step, never less."""
    d = _data_dir(tmp_path_factory.mktemp("mb"), True)
    sm = _dep8()
    on = with_moe_backend(sm, "trtllm", "CUTLASS", d)
    a = (n, n, n, n * ctx, n * ctx)
    assert on.step_time(*a) - sm.step_time(*a) == pytest.approx(on.moe_backend_s, rel=1e-9)


def test_annotation_rule():
    """The script's rows: single-node TensorRT-LLM B200 NVFP4 DP-attention runs from
    2026-02-03; an earlier run (the old ISL / OSL rule) or a DP-off run is left alone."""
    import importlib.util

    p = Path(__file__).resolve().parents[1] / "scripts" / "annotate_moe_backend.py"
    spec = importlib.util.spec_from_file_location("annotate_moe_backend", p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    base = dict(framework="trtllm", precision="nvfp4", hardware="nvidia-b200", as_of="2026-02-03",
                notes="InferenceX single-node fixed-seq-len sweep; DP-attention=true")  # fmt: skip
    rows = [
        dict(base),
        dict(base, as_of="2026-01-29"),
        dict(base, notes="single-node; DP-attention=false"),
    ]
    assert mod.annotate(rows) == 1
    assert moe_backend_setting(rows[0]["notes"]) == "CUTLASS"
    assert mod.annotate(rows) == 0  # idempotent
