"""scripts/apiserver_sensitivity.py: rows replaced by id, scores by hand."""

from __future__ import annotations

import importlib.util
import sys

import pandas as pd
import pytest
from conftest import REPO_ROOT

_spec = importlib.util.spec_from_file_location(
    "apiserver_sensitivity", REPO_ROOT / "scripts" / "apiserver_sensitivity.py"
)
sens = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("apiserver_sensitivity", sens)
_spec.loader.exec_module(sens)


def _t(ids, measured, pred, engine="vllm"):
    return pd.DataFrame({"id": ids, "metric_class": "ttft", "measured": measured, "pred": pred,
                         "engine": engine, "vendor": "nvidia"})  # fmt: skip


def test_rows_are_replaced_by_id_only():
    base = _t(["a", "b", "c"], [100.0, 100.0, 100.0], [50.0, 110.0, 130.0])
    part = _t(["b", "x"], [100.0, 1.0], [90.0, 5.0])
    out = sens.replace_rows(base, part)
    assert out["pred"].tolist() == [50.0, 90.0, 130.0]


def test_score_by_hand():
    # errors -50, +10, +30 %: MdAPE 30, median error +10, within 20 %: one row
    s = sens.score(_t(["a", "b", "c"], [100.0] * 3, [50.0, 110.0, 130.0]))
    assert s["n"] == 3
    assert s["mdape"] == pytest.approx(30.0)
    assert s["bias"] == pytest.approx(10.0)
    assert s["within"] == 1
