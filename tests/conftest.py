"""Shared fixtures: the bundled catalog, paths, and simple efficiency parameters."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.catalog import load_catalog
from planner.perf import EfficiencyParams

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

#: roofline with no losses: peak bandwidth and FLOPS, no fixed costs. Hand-derived
#: goldens use it so that every time is bytes / bandwidth or FLOPs / peak.
IDEAL = EfficiencyParams(
    mem_eff=1.0,
    compute_eff=1.0,
    compute_half_tokens=0.0,
    attn_eff=1.0,
    comm_eff=1.0,
    comm_latency_s=0.0,
    step_overhead_s=0.0,
    layer_overhead_s=0.0,
    seq_overhead_s=0.0,
)


@pytest.fixture(scope="session")
def catalog():
    """The bundled catalogs under data/."""
    return load_catalog(DATA_DIR)


@pytest.fixture(scope="session")
def ideal():
    return IDEAL


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT
