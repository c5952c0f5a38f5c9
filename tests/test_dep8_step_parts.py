"""scripts/dep8_step_parts.py: the DEP8 decode step's parts against published per-component
timings (issue 29; docs/changes/2026-12-07f/dep8.md). Hand-derived published sums; identities of the parts."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "dep8_step_parts.py"


@pytest.fixture(scope="module")
def parts():
    spec = importlib.util.spec_from_file_location("dep8_step_parts", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["dep8_step_parts"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_blog18_dispatch_combine_by_hand(parts):
    """Tech blog 18, EP8, BF16: 512 tokens a rank, (89.5 + 91.7) us x 58 MoE layers =
    10.5096 ms; 16 a rank, (18.5 + 32.6) x 58 = 2.9638 ms."""
    assert parts.blog18_ms(512) == pytest.approx(10.5096, abs=1e-4)
    assert parts.blog18_ms(16) == pytest.approx(2.9638, abs=1e-4)


def test_fi5301_moe_layer_by_hand(parts):
    """FlashInfer PR #5301 (data/moe_kernels.yaml): 4,096 tokens 311.954 us x 58 = 18.0933 ms;
    6,144 tokens, half-way between 4,096 (311.954) and 8,192 (385.540): 348.747 us x 58 =
    20.2273 ms."""
    assert parts.fi5301_ms(4096) == pytest.approx(18.0933, abs=1e-4)
    assert parts.fi5301_ms(6144) == pytest.approx(20.2273, abs=1e-3)


def test_parts_add_up(parts):
    """The step is its four parts; the GEMM part is at least the weights' read and the
    dense + busiest-GPU expert FLOPs; the published skew is the EP32 record; the experts'
    FLOP time at the published skew is below the one at the fitted skew (4 > 1.564)."""
    t = parts.table()
    assert (t["step"] - (t["gemm"] + t["attn"] + t["comm"] + t["fixed"])).abs().max() < 0.02
    assert (t["gemm"] >= t["weights"] - 0.01).all()
    assert (t["gemm"] >= t["dense"] + t["experts_fit"] - 0.02).all()
    assert t.attrs["skew_pub"] == pytest.approx(1.564272, abs=1e-6)
    if t.attrs["skew_fit"] > t.attrs["skew_pub"]:
        assert (t["experts_pub"] <= t["experts_fit"]).all()


def test_hot_rows_whatif_inverse_by_hand():
    """scripts/moe_kernel_hot_whatif.py: the replica tokens whose busiest EP8 shard gets
    4,096 routed rows at skew 1.564272: sqrt(T) = (-2.039334 + sqrt(4.158883 + 4 x 2.564272 x
    4,096)) / 5.128544 = 39.5710, T = 1,565.86; and the inverse maps back
    (T x 2.564272 + 2.039334 sqrt(T) = 4,096)."""
    spec = importlib.util.spec_from_file_location(
        "moe_kernel_hot_whatif", REPO_ROOT / "scripts" / "moe_kernel_hot_whatif.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t = mod.replica_tokens(4096.0)
    assert t == pytest.approx(1565.86, abs=0.01)
    assert t * (1 + mod.SKEW) + mod.Z8 * t**0.5 == pytest.approx(4096.0, rel=1e-12)
