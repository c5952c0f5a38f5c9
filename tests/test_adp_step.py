"""An engine's per-step attention-DP cost (planner.catalog.adp_step, data/adp_step.yaml,
planner.engine.moe_backend.with_adp_step; s12-trtdp, issue 29 items 1 and 2). The bundled
value is chosen, not published, and the switch is off. Hand-derived numbers in the docstrings."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from planner.catalog import load_catalog
from planner.catalog.adp_step import AdpStepCost, adp_step_costs, adp_step_s
from planner.catalog.catalog import DATA_DIR
from planner.catalog.layout import layout_of
from planner.engine.moe_backend import with_adp_step, with_moe_backend
from planner.engine.step import step_model

CAT = load_catalog()


def _data_dir(tmp_path: Path, applied: bool) -> str:
    """A copy of the record file with its switch set to ``applied``."""
    d = yaml.safe_load((Path(DATA_DIR) / "adp_step.yaml").read_text())
    d["applied"] = applied
    (tmp_path / "adp_step.yaml").write_text(yaml.safe_dump(d))
    return str(tmp_path)


def _sm(dp: int, tp: int = 1):
    """DeepSeek-R1 NVFP4 on B200: DEP``dp`` (tp 1, ep dp) or TP``tp`` (no attention DP)."""
    lay = layout_of(1, 1, dp, dp) if dp > 1 else layout_of(tp, 1, 1, 1)
    return step_model("deepseek-v3", "nvidia-b200", "fp4", "fp8", catalog=CAT, layout=lay)


def test_bundled_record_is_chosen_sourced_and_off():
    """The file's switch is off, so nothing is charged; the record itself says it is chosen."""
    assert adp_step_costs() == ()
    assert adp_step_s("trtllm", 8) == 0.0
    (rec,) = adp_step_costs(applied_only=False)
    assert rec.framework == "trtllm" and rec.chosen is True
    assert rec.source.startswith("chosen, not published") and rec.as_of
    # applied_only=False reads the value: 1.0 ms = 0.001 s on a DEP8 deployment
    assert adp_step_s("trtllm", 8, applied_only=False) == pytest.approx(1.0e-3)
    # no attention DP, or another engine: nothing
    assert adp_step_s("trtllm", 1, applied_only=False) == 0.0
    assert adp_step_s("sglang", 8, applied_only=False) == 0.0


def test_switched_on_it_adds_one_ms_to_every_dep_step(tmp_path):
    """With the switch on, a DEP8 step gains exactly 1.0 ms at every batch (a constant), in
    the vector and the scalar form, on top of the CUTLASS surplus (58 x 21.2 us = 1.2296 ms):
    moe_backend_s = 2.2296 ms."""
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    on, off = _data_dir(tmp_path / "on", True), _data_dir(tmp_path / "off", False)
    sm = with_moe_backend(_sm(8), "trtllm", "CUTLASS")
    sm2 = with_adp_step(sm, "trtllm", data_dir=on)
    assert sm2.moe_backend_s == pytest.approx(58 * 21.2e-6 + 1.0e-3, rel=1e-9)
    for seqs in (8, 128, 1024):  # 1, 16 and 128 sequences a rank at a 1.5k context
        a = (seqs, seqs, seqs, seqs * 1500, seqs * 1500)
        assert float(sm2.step(*a).time_s) - float(sm.step(*a).time_s) == pytest.approx(
            1.0e-3, rel=1e-9
        )
        assert sm2.step_time(*a) - sm.step_time(*a) == pytest.approx(1.0e-3, rel=1e-9)
    # a TP8 deployment (no attention DP), the switch off, another engine: the step as it is
    tp8 = _sm(1, tp=8)
    assert with_adp_step(tp8, "trtllm", data_dir=on) is tp8
    assert with_adp_step(sm, "trtllm", data_dir=off) is sm
    assert with_adp_step(sm, "sglang", data_dir=on) is sm


def test_bad_record_is_one_error():
    with pytest.raises(ValidationError):
        AdpStepCost(
            id="x-y", framework="trtllm", step_ms=-1.0, chosen=True, source="s",
            as_of="2026-12-07",
        )  # fmt: skip
