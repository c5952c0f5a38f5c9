"""Issue 29, "Done when" item 2: DeepSeek-R1 on one 8-GPU H200, B200 and MI355X server, the
best layout's output tok/s per GPU within 25% of InferenceX's best non-disaggregated,
non-speculative result at 20 / 40 / 60 tok/s/user, and the same per-GPU ordering.

Held out: every InferenceX row predicted by the profile fitted without any InferenceX row
(``ep_accuracy.evaluate(sources=("SemiAnalysis InferenceX",))``, the fold of ``planner
validate --holdout``; about 1.5 min). Both fronts are read as InferenceX's own calculator
reads a front (``scripts/ix_pareto.py``: per GPU, engine, precision and ISL/OSL the Pareto
front of (1000 / median TPOT, output tok/s per GPU), a monotone cubic through it, nothing
above it; the best over engines, precisions and lengths); the planner's front is built the
same way from its predictions of the same points.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import REPO_ROOT

GPUS = ("nvidia-h200-sxm", "nvidia-b200", "amd-mi355x")
LEVELS = (20.0, 40.0, 60.0)


def _load(name):
    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def front():
    ep = _load("ep_accuracy")
    loso = ep.evaluate(sources=("SemiAnalysis InferenceX",))
    f = ep.deepseek_front_ix(loso, LEVELS)
    return f[f["gpu"].isin(GPUS)].set_index(["gpu", "interactivity >= tok/s/user"])


def test_h200_measured_front_at_60(front):
    """The measured side at H200, 60 tok/s/user is the SGLang fp8 TP8 1k/1k front between
    c16 and c64: 142.56 tok/s/GPU, derived by hand in tests/test_ix_pareto.py."""
    row = front.loc[("nvidia-h200-sxm", 60.0)]
    assert row["measured tok/s/GPU"] == pytest.approx(142.56, abs=0.1)
    assert row["measured from"] == "1024/1024 sglang fp8"


# Predicted / measured, held out (main 03add19's code and data). With the step reading the
# front had before (the best measured point reaching the level; ``deepseek_frontier``):
# B200 1.22 / 1.29 / 1.90, H200 0.82 / 0.94 / 0.60, MI355X 0.97 / 0.97 / 0.98. Read as
# InferenceX reads a front: B200 1.22 / 1.29 / 1.75, H200 0.82 / 0.74 / 0.81, MI355X 0.97 /
# 0.97 / 0.92 (docs/changes: h200front.md).
_MISSES = {
    # TensorRT-LLM nvfp4 DEP8 at 128 clients (ixh-1019/1020, 1.2.0rc6): TPOT 16.5 ms
    # predicted against 20.5-21.5 measured (the DEP8 step; b200dep.md); its 934.8 tok/s/GPU
    # sets the planner's front at 40 and, at 60.7 tok/s/user predicted (48.7 measured), at 60
    ("nvidia-b200", 40.0): "DEP8 c128 TPOT predicted 16.5 ms vs 20.5-21.5: 1.29",
    ("nvidia-b200", 60.0): "DEP8 c128 predicted at 60.7 tok/s/user (48.7 measured): 1.75",
    # the measured front at 40 runs between SGLang TP8 1k/1k c16 (65.0 tok/s/user) and c64
    # (32.8): 225.8 tok/s/GPU; the planner puts SGLang c16 at 51.4 and c64 at 27.1 (TPOT 1.20x
    # / 1.10x), so its front at 40 is TensorRT-LLM TP8 EP8 c32's 166.5 (its highest point)
    ("nvidia-h200-sxm", 40.0): "SGLang H200 TP8 TPOT predicted 1.10-1.27x: 0.74",
}


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(k, marks=pytest.mark.xfail(reason=_MISSES[k], strict=True))
        if k in _MISSES
        else k
        for k in ((g, lv) for g in GPUS for lv in LEVELS)
    ],
    ids=lambda k: f"{k[0].split('-')[1]}-{k[1]:g}",
)
def test_best_layout_within_25pct(front, key):
    r = front.loc[key]
    assert 0.75 <= r["planner tok/s/GPU"] / r["measured tok/s/GPU"] <= 1.25


@pytest.mark.parametrize("level", LEVELS)
def test_per_gpu_ordering_matches(front, level):
    """B200 > MI355X > H200 measured at every level; the planner's front in the same order."""
    f = front.xs(level, level="interactivity >= tok/s/user")
    measured = list(f["measured tok/s/GPU"].sort_values(ascending=False).index)
    planner = list(f["planner tok/s/GPU"].sort_values(ascending=False).index)
    assert measured == ["nvidia-b200", "amd-mi355x", "nvidia-h200-sxm"]
    assert planner == measured


def test_sweep_asks_a_row_at_another_concurrency():
    """scripts/r1_front_sweep.py: the template row at c clients runs 10 x c requests, as
    InferenceX's script does (``--num-prompts $(( $CONC * 10 ))``); the rest of the row is
    kept (ixm-0492: SGLang 0.5.12 TP8, 16 clients, 160 requests)."""
    import pandas as pd

    sweep = _load("r1_front_sweep")
    rows = pd.read_csv(REPO_ROOT / "data/benchmarks/public_inferencex.csv", dtype=str,
                       keep_default_na=False).set_index("id")  # fmt: skip
    row = rows.loc["ixm-0492"].to_dict()
    assert "160 requests" in row["notes"] and "--max-concurrency 16 " in row["notes"]
    r = sweep.at_concurrency(row, 12)
    assert r["concurrency"] == "12"
    assert "120 requests" in r["notes"] and "160 requests" not in r["notes"]
    assert "--num-prompts 120 " in r["notes"] and "--max-concurrency 12 " in r["notes"]
    assert (
        r["notes"].replace("120", "160").replace("concurrency 12", "concurrency 16")
        == (row["notes"])
    )
