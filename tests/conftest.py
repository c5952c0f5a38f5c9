"""Shared fixtures: the bundled catalog, paths, and simple efficiency parameters."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from planner.catalog import EfficiencyParams, load_catalog

# the YAML parse cache (planner.files.parse_cache_dir) of this test session, and of the
# processes it starts: a folder of its own, so that no test reads what another checkout kept
# or writes into the user's cache
if not os.environ.get("PLANNER_CACHE_DIR"):
    _CACHE = tempfile.mkdtemp(prefix="planner-test-cache-")
    os.environ["PLANNER_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

#: roofline with no losses: every efficiency 1, no fixed costs, no small-GEMM penalty.
#: Hand-derived goldens use it so that every time is bytes / bandwidth or FLOPs / peak.
#: Built from the field names so that new efficiencies or overheads are covered too.
IDEAL = EfficiencyParams(
    **{
        name: (1.0 if name.endswith("_eff") else 0.0)
        for name in EfficiencyParams.model_fields
        if name.endswith(("_eff", "_s")) or name == "compute_half_tokens"
    }
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
