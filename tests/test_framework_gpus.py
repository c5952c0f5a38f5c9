"""An engine is not offered on a GPU its builds do not run on (issue 29 / 30 output items).

LMDeploy runs on NVIDIA GPUs (``Framework.vendors``), but its TurboMind kernels are compiled
for a list of compute capabilities (CMakeLists.txt, v0.16.0): sm_100a (B200 / GB200) since
2026-04-28 (v0.13.0, whose PyPI wheels are the first built against CUDA 12.8), no sm_103
(B300 / GB300). The close of the sixth pass noted that LMDeploy was offered on GB200 with
its Blackwell support unread: it is supported there; on B300 / GB300 it is not.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from planner.catalog.catalog import load_catalog
from planner.catalog.compat import framework_gpu_problem
from planner.errors import PlannerError
from planner.recommend.options import enumerate_options


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


#: framework -> GPUs its builds do not run on, as read in the record's source
REFUSED = {"lmdeploy": {"nvidia-b300", "nvidia-gb300"}}


def test_records_on_file_with_their_source(cat):
    got = {r.framework: set(r.gpus) for r in cat.framework_gpus}
    assert got == REFUSED
    for r in cat.framework_gpus:
        assert "CMakeLists.txt" in r.source and r.as_of.year == 2026
        assert "sm_103" in r.why and "sm_100a" in r.why


@pytest.mark.parametrize(
    "gpu, runs",
    [
        ("nvidia-b200", True),  # sm_100a in the build list (v0.13.0+)
        ("nvidia-gb200", True),  # same compute capability 10.0
        ("nvidia-rtx-pro-6000-blackwell-server", True),  # sm_120a
        ("nvidia-h100-sxm", True),  # sm_90a
        ("nvidia-b300", False),  # sm_103: not built
        ("nvidia-gb300", False),
    ],
)
def test_lmdeploy_per_gpu(cat, gpu, runs):
    why = framework_gpu_problem(cat.framework("lmdeploy"), cat.gpu(gpu), cat.framework_gpus)
    assert (why is None) == runs, why
    if not runs:
        with pytest.raises(PlannerError, match=r"^framework lmdeploy: .*does not run on " + gpu):
            cat.resolve("llama-3.1-8b", gpu, "bf16", framework="lmdeploy")


def test_other_engines_unchanged_on_b300(cat):
    for fw in ("vllm", "sglang", "trtllm"):
        assert framework_gpu_problem(cat.framework(fw), cat.gpu("nvidia-b300"),
                                     cat.framework_gpus) is None  # fmt: skip


def test_recommend_rejects_with_the_reason(cat):
    opts, rejected = enumerate_options(
        cat, cat.model("llama-3.1-8b"), gpus=("nvidia-b300", "nvidia-b200"),
        frameworks=("lmdeploy",), precisions=("bf16",),
    )  # fmt: skip
    stages = {(r.gpu, r.stage) for r in rejected}
    assert ("nvidia-b300", "framework_gpu") in stages
    assert all(o.gpu.id == "nvidia-b200" for o in opts) and opts
    why = next(r.reason for r in rejected if r.stage == "framework_gpu")
    assert "sm_103" in why and "source:" in why


def test_estimate_refuses_in_one_line():
    r = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", "estimate", "--model", "llama-3.1-8b",
         "--gpu", "nvidia-gb300", "--framework", "lmdeploy", "--precision", "bf16",
         "--batch", "8", "--input-len", "1000", "--output-len", "100"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode != 0 and "Traceback" not in r.stderr
    err = [ln for ln in r.stderr.splitlines() if "does not run on nvidia-gb300" in ln]
    assert len(err) == 1, r.stderr
