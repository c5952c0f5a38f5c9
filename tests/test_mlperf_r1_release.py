"""The TensorRT-LLM release of each MLPerf DeepSeek-R1 run (issues 29 and 31), as its
submission states it, read by ``scripts/import_mlperf_moe.py`` into ``framework_version``.

Each pinned row quotes the submission file that names the build (mirrors of
mlcommons/inference_results_v5.1 and of the v6.0 results). A run whose submission does not
establish a release stays release-free, and its notes say why.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from _benchmark_rows import read_rows

from planner.catalog import DATA_DIR
from planner.catalog.catalog import load_catalog
from planner.catalog.releases import parse_release

ROOT = Path(__file__).resolve().parents[1]
MLPERF = DATA_DIR / "benchmarks" / "public_mlperf_moe.csv"


def _importer():
    spec = importlib.util.spec_from_file_location(
        "import_mlperf_moe", ROOT / "scripts" / "import_mlperf_moe.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_mlperf_moe", mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return read_rows(MLPERF)


def _rows_of(rows, rnd: str, results_dir: str) -> list[dict[str, str]]:
    out = [
        r
        for r in rows
        if f"Inference {rnd} " in r["source"] and f" {results_dir}/" in r["source_detail"]
    ]
    assert out, (rnd, results_dir)
    return out


def _release(r: dict[str, str]) -> str | None:
    rel = parse_release(r["framework"], r["framework_version"])
    return None if rel is None else rel.release


@pytest.mark.parametrize(
    ("rnd", "results_dir", "release", "quote"),
    [
        # closed/Dell/Makefile.build (v5.1), lines 108-110:
        #   TRTLLM_URL = https://github.com/NVIDIA/TensorRT-LLM.git
        #   # 7/24/25 1.0-mlpinf side branch (A2AP instead of AG)
        #   TRTLLM_HASH = 18c0333e96ea7a2c37caded8a310d05c5f095e88
        (
            "v5.1",
            "closed/Dell/results/XE9680L_B200_SXM_180GBx8_TRT",
            "1.0",
            "18c0333e96ea7a2c37caded8a310d05c5f095e88",
        ),
        # closed/NVIDIA/Makefile.build (v5.1), lines 109-110:
        #   # 7/24/25 1.0-mlpinf side branch (AG optimization)
        #   TRTLLM_HASH = 18c0333e96ea7a2c37caded8a310d05c5f095e88
        (
            "v5.1",
            "closed/NVIDIA/results/GB200-NVL72_GB200-186GB_aarch64x72_TRT",
            "1.0",
            "1.0-mlpinf side branch (AG optimization)",
        ),
        # closed/NVIDIA/systems/GB300-NVL72_GB300-288GB_aarch64x72_TRT.json (v6.0), framework:
        #   "TensorRT 10.14, CUDA 13.1, cuDNN 9.17, TensorRT-LLM feat/1.2-mlpinf, NVIDIA Dynamo
        #    mlperf-v6.0-dynamo-v0.8.0, vLLM CentML:mlperf-inf-mm-q3vl-v6.0"
        (
            "v6.0",
            "closed/NVIDIA/results/GB300-NVL72_GB300-288GB_aarch64x72_TRT",
            "1.2",
            "feat/1.2-mlpinf",
        ),
        # closed/Nebius/systems/nebius_b200_n1.json (v6.0), framework: "TensorRT 10.14, CUDA
        #   13.1, cuDNN 9.17, TensorRT-LLM feat/1.2-mlpinf, ..."
        ("v6.0", "closed/Nebius/results/nebius_b200_n1", "1.2", "feat/1.2-mlpinf"),
    ],
)
def test_release_named_by_the_submission(rows, rnd, results_dir, release, quote):
    rs = _rows_of(rows, rnd, results_dir)
    for r in rs:
        assert _release(r) == release, r["id"]
        assert quote in r["framework_version"] + r["notes"], r["id"]
        assert f"TensorRT-LLM release {release}:" in r["notes"], r["id"]


@pytest.mark.parametrize(
    ("rnd", "results_dir", "why"),
    [
        # closed/CoreWeave/Makefile.build (v5.1): NVIDIA's internal repository and a user
        #   branch, no public release line:
        #   TRTLLM_URL = ssh://git@gitlab-master.nvidia.com:12051/ftp/tekit.git
        #   # mlperf gb110 side branch
        #   TRTLLM_HASH = user/shobhitv/mlpinf-gb110
        ("v5.1", "closed/CoreWeave/results/GB300-NVL8-CoreWeave_TRT", "user/shobhitv/mlpinf-gb110"),
        # closed/Google/systems/B200-SXM-180GBx8_TRT.json (v6.0): framework "TensorRT 10.14,
        #   CUDA 13.1" only; closed/Google/Makefile.build takes whatever checkout it finds:
        #   TRTLLM_HASH := $(shell cd $(TRTLLM_DIR) 2>/dev/null && git rev-parse HEAD || ...)
        ("v6.0", "closed/Google/results/B200-SXM-180GBx8_TRT", "git rev-parse HEAD"),
        # open/HPE (v5.1) ships no Makefile.build; its system names "TensorRT 10.8, CUDA 12.8"
        ("v5.1", "open/HPE/results/HPE_Cray_XD670_H200_SXM_141GBx8_TRT", "no Makefile.build"),
    ],
)
def test_release_not_established_stays_empty(rows, rnd, results_dir, why):
    for r in _rows_of(rows, rnd, results_dir):
        assert _release(r) is None, r["id"]
        assert "TensorRT-LLM release not established" in r["notes"], r["id"]
        assert why in r["notes"], r["id"]


def test_every_row_says_its_release_or_why_not(rows):
    """A row names a release exactly when its notes give the evidence; the only releases
    are the two side-branch lines the submissions name (1.0 in v5.1, 1.2 in v6.0)."""
    seen = set()
    for r in rows:
        rel = _release(r)
        stated = "TensorRT-LLM release not established" not in r["notes"]
        assert (rel is not None) == stated, r["id"]
        if rel is not None:
            assert f"TensorRT-LLM release {rel}:" in r["notes"], r["id"]
            rnd = "v5.1" if "v5.1" in r["source"] else "v6.0"
            seen.add((rnd, rel))
    assert seen == {("v5.1", "1.0"), ("v6.0", "1.2")}
    # 7 v5.1 runs x 6 metrics = 42 rows name 1.0 (every v5.1 submitter but CoreWeave's
    # internal branch and open HPE); 58 v6.0 rows name 1.2 (the systems whose JSON names the
    # branch: NVIDIA's and Nebius')
    assert sum(_release(r) == "1.0" for r in rows) == 42
    assert sum(_release(r) == "1.2" for r in rows) == 58


def test_trtllm_serve_runs_stay_overlapped_with_a_release():
    """1.0 and later run the PyTorch backend's overlap scheduler by default
    (data/frameworks.yaml host_overlap_since 1.0.0); the v5.1 harness leaves it on (its
    config.py sets no disable_overlap_scheduler). Naming 1.0 keeps these rows overlapped, as
    the TensorRT text ("TensorRT 10.11" read as 10.11 >= 1.0) did by accident."""
    fw = load_catalog().framework("trtllm")
    text = "1.0 (TensorRT-LLM 1.0-mlpinf side branch @ 18c0333e9) | TensorRT 10.11, CUDA 12.9"
    assert fw.overlaps_host(text, "2025-09-09")
    assert not fw.overlaps_host("0.21.0", "2025-09-09")


# ----------------------------------------------------------------- the reading rule itself
def _with_files(monkeypatch, files: dict[str, str]):
    mod = _importer()
    monkeypatch.setattr(mod, "show", lambda mirror, path: files.get(path))
    return mod


def test_rule_system_field_branch(monkeypatch):
    mod = _with_files(monkeypatch, {})
    sysj = {"framework": "TensorRT 10.14, CUDA 13.1, TensorRT-LLM feat/1.2-mlpinf, NVIDIA Dynamo"}
    rel, build, why = mod.trtllm_release("m", "closed/X", "S", sysj)
    assert (rel, build) == ("1.2", "TensorRT-LLM branch feat/1.2-mlpinf")
    assert "closed/X/systems/S.json" in why


def test_rule_public_pin_under_a_side_branch_comment(monkeypatch):
    mk = (
        "TRTLLM_URL = https://github.com/NVIDIA/TensorRT-LLM.git\n"
        "# 7/21/25 1.0-mlpinf side branch (disable GC)\n"
        "TRTLLM_HASH = 270a6b2447d75235068b524570bf51fe15d5bb63\n"
    )
    mod = _with_files(monkeypatch, {"closed/X/Makefile.build": mk})
    rel, build, why = mod.trtllm_release("m", "closed/X", "S", {"framework": "TensorRT 10.11"})
    assert (rel, build) == ("1.0", "TensorRT-LLM 1.0-mlpinf side branch @ 270a6b244")
    assert "270a6b2447d75235068b524570bf51fe15d5bb63" in why


@pytest.mark.parametrize(
    "mk",
    [
        # a main-branch commit of a date (v5.1 closed/Cisco/Makefile.build): no release line
        "TRTLLM_URL = https://github.com/NVIDIA/TensorRT-LLM.git\n# main branch 02/18\n"
        "TRTLLM_HASH ?= b6cca6db0af80c997282230327c8308df7912bcf\n",
        # the checkout's own hash (v6.0 Makefile.build)
        "TRTLLM_URL = git@github.com:NVIDIA/TensorRT-LLM.git\n"
        'TRTLLM_HASH := $(shell cd $(TRTLLM_DIR) 2>/dev/null && git rev-parse HEAD || echo "unknown")\n',
        # a side branch of NVIDIA's internal repository
        "TRTLLM_URL = ssh://git@gitlab-master.nvidia.com:12051/ftp/tekit.git\n"
        "# 1.0-mlpinf side branch\nTRTLLM_HASH = 18c0333e96ea7a2c37caded8a310d05c5f095e88\n",
        "",
    ],
)
def test_rule_refuses_what_names_no_release(monkeypatch, mk):
    mod = _with_files(monkeypatch, {"closed/X/Makefile.build": mk})
    rel, build, why = mod.trtllm_release("m", "closed/X", "S", {"framework": "TensorRT 10.14"})
    assert (rel, build) == ("", "")
    assert why.startswith("TensorRT-LLM release not established")
