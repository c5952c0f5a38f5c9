"""The measured large-M GEMM floor of Hopper node fits (planner/calibration/gemm_floor.py)."""

import math

import numpy as np
import pytest

from planner.calibration import fit, gemm_floor
from planner.catalog.efficiency import PRIOR


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setattr(gemm_floor, "APPLY", True)


def test_layer_rates_by_hand():
    # two GEMMs of one (dtype, TP, M): 2 x 1024 x (8192 x 10240 + 8192 x 8192) FLOP over
    # 100 + 50 us = 3.0924e11 / 1.5e-4 s = 2,061.6 TFLOP/s
    rows = [
        dict(model="70b", layer="qkv", dtype="fp8", tp="1", m="1024", k="8192", n="10240",
             s_per_gemm="1e-4"),
        dict(model="70b", layer="o", dtype="fp8", tp="1", m="1024", k="8192", n="8192",
             s_per_gemm="5e-5"),
        dict(model="8b", layer="o", dtype="fp8", tp="1", m="1024", k="4096", n="4096",
             s_per_gemm="1e-6"),
    ]  # fmt: skip
    r = gemm_floor.layer_rates(rows)
    assert list(r) == [("fp8", 1, 1024)]  # the 8B row is not a Llama-70B layer
    assert r[("fp8", 1, 1024)] == pytest.approx(2 * 1024 * 8192 * 18432 / 1.5e-4 / 1e12)
    assert r[("fp8", 1, 1024)] == pytest.approx(2061.6, abs=0.1)


def test_off_is_no_bound():
    assert not gemm_floor.APPLY
    assert gemm_floor.floor_fraction("hopper", "fp8", None) == 0.0
    assert gemm_floor.project(0.3, 60.0, 0.0) == 0.3
    x = fit._to_x(PRIOR.with_(compute_eff=0.3))
    assert fit._from_x(x, PRIOR).compute_eff == pytest.approx(0.3)


def test_measured_floor(on):
    # data/benchmarks/gemm_width_h100_micro.csv: the slowest Llama-70B layer at M 1,024..8,192
    # is TP8 at 1,024 tokens in both dtypes, 1,225.8 TFLOP/s fp8 and 680.0 bf16 (bench/README.md
    # table); over the H100 SXM dense peaks of the catalog, 1,979 and 989 TFLOP/s
    fp8 = gemm_floor.floor_fraction("hopper", "fp8", None)
    bf16 = gemm_floor.floor_fraction("hopper", "bf16", "dense")
    assert fp8 == pytest.approx(1225.8 / 1979, abs=2e-4)
    assert bf16 == pytest.approx(680.0 / 989, abs=2e-4)
    assert gemm_floor.floor_fraction("hopper", "fp16", None) == bf16
    assert gemm_floor.floor_fraction("hopper", None, None) == min(fp8, bf16)
    for args in (("blackwell", "fp8", None), ("hopper", "fp8", "moe"), ("hopper", "fp4", None),
                 (None, "fp8", None), ("cdna3", "fp8", None)):  # fmt: skip
        assert gemm_floor.floor_fraction(*args) == 0.0


def test_project_by_hand():
    # the trtllm H200 fp8 dense node of the bundled profile: 0.5718 at half 62.6 tokens runs
    # 0.5718 x 1024 / 1086.6 = 0.539 of peak at 1,024 tokens; the fp8 floor 0.619 needs
    # 0.619 x 1086.6 / 1024 = 0.6569
    assert gemm_floor.project(0.5718, 62.6, 0.619) == pytest.approx(0.619 * 1086.6 / 1024)
    assert gemm_floor.project(0.80, 62.6, 0.619) == 0.80  # above the floor: unchanged
    assert gemm_floor.project(0.5, 8192.0, 0.619, hi=1.0) == 1.0  # capped at the bound


def test_from_x_applies_the_floor(on):
    frac = gemm_floor.floor_fraction("hopper", "fp8", None)
    p0 = PRIOR.with_(compute_eff=0.30, compute_half_tokens=40.0)
    q = fit._from_x(fit._to_x(p0), PRIOR, gemm_floor_frac=frac)
    assert q.compute_eff == pytest.approx(frac * 1064.0 / 1024.0, rel=1e-9)
    assert q.compute_eff * 1024 / (1024 + q.compute_half_tokens) == pytest.approx(frac)
    # every other field as without the floor
    r = fit._from_x(fit._to_x(p0), PRIOR)
    assert q.mem_eff == r.mem_eff and q.compute_half_tokens == r.compute_half_tokens
    assert math.isclose(r.compute_eff, 0.30)
    assert np.isfinite(q.compute_eff)
