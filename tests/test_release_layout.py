"""A release that cannot launch a layout does not predict it (issue 31).

vLLM's launch flags for expert parallelism (``--enable-expert-parallel``) and data-parallel
attention ranks (``--data-parallel-size``) are absent from the 0.7.3 argument files and
present from 0.8.5, the next read release (data/engine_flags.yaml, each read from the wheel
on PyPI). Before this rule, ``planner recommend examples/moe-r1.yaml`` ranked an 8x MI325X
vLLM DEP8 option first, predicted by the vllm@0.7.3.dev138 node (dstack's TP8 rows of March
2025), while ``--emit`` wrote a 0.8.5 launch command for it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from planner.catalog.catalog import load_catalog
from planner.catalog.layout import Layout
from planner.catalog.profile import load_profile
from planner.catalog.release_profile import (
    layout_release_floor,
    release_order,
    resolve_release_params,
)
from planner.errors import PlannerError
from planner.recommend.search import model_family

DEP8 = Layout(tp=1, ep=8, attention_dp=8)


def test_floor_from_the_flags_file():
    # vLLM: both settings first read in 0.8.5 (0.7.3's arg_utils.py has neither flag)
    assert layout_release_floor("vllm", DEP8)[0] == "0.8.5"
    # SGLang: --enable-dp-attention and --ep-size in 0.4.1, the second read release (0.3.0
    # has --dp-size only, which is not attention data-parallel)
    assert layout_release_floor("sglang", DEP8)[0] == "0.4.1"
    # TensorRT-LLM: --ep_size and the YAML key enable_attention_dp from 0.19.0 (not in 0.18.2)
    assert layout_release_floor("trtllm", DEP8)[0] == "0.19.0"
    # TP8 EP8 needs expert parallelism only; TP8 needs nothing
    assert layout_release_floor("vllm", Layout(tp=8, ep=8))[1] == (
        "expert parallelism from vllm 0.8.5"
    )
    assert layout_release_floor("vllm", Layout(tp=8)) is None
    # an engine without such flags on file: no floor (other rules decide whether it runs EP)
    assert layout_release_floor("tgi", DEP8) is None


def test_named_release_too_old_is_refused():
    cat = load_catalog()
    with pytest.raises(PlannerError, match=r"vllm 0\.7\.3 cannot launch DEP8.*vllm@0\.8\.5"):
        resolve_release_params("amd-mi325x", "vllm", "fp8", "0.7.3", catalog=cat, layout=DEP8)
    # the same release for TP8 is fine
    resolve_release_params("amd-mi325x", "vllm", "fp8", "0.7.3", catalog=cat, layout=Layout(tp=8))


@pytest.fixture(scope="module")
def nodes():
    prof = load_profile()
    return {(n.gpu, n.framework, n.precision) for n in prof.release_nodes
            if n.framework in ("vllm", "sglang", "trtllm") and n.gpu}  # fmt: skip


def test_every_dep_prediction_uses_a_release_that_launches_it(nodes):
    """Property over the bundled profile: for every (GPU, engine, precision) with release
    nodes, a DeepSeek DEP8 prediction is for a release that can launch it: the newest
    release with a fit when that one can, else the layout's floor release."""
    cat = load_catalog()
    fam = model_family(cat.model("deepseek-v3"))
    moved = 0
    for gpu, fw, prec in sorted(nodes):
        floor = layout_release_floor(fw, DEP8)[0]
        _, _, tp8 = resolve_release_params(gpu, fw, prec, catalog=cat, family=fam,
                                           layout=Layout(tp=8))  # fmt: skip
        _, _, dep = resolve_release_params(gpu, fw, prec, catalog=cat, family=fam, layout=DEP8)
        if tp8 is not None and tp8.used and release_order(fw, tp8.used) < release_order(fw, floor):
            # predicted for the floor release (from the nearest fit of its generation, or the
            # fit over every release), never labelled with the release that cannot launch it
            moved += 1
            assert dep.requested == floor and "cannot launch DEP8" in dep.note, (gpu, fw, dep)
        else:  # the newest release with a fit launches DEP8: unchanged
            assert dep is None or dep.requested is None, (gpu, fw, dep)
    assert moved >= 1  # vllm@0.7.3.dev138 on the MI300X: the case this rule exists for


def test_capacity_refuses_an_old_release_in_one_line():
    r = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", "capacity", "examples/moe-r1.yaml",
         "--gpu", "amd-mi325x", "--framework", "vllm@0.7.3", "--precision", "fp8",
         "--no-curve"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert "cannot launch DEP8" in r.stderr and "vllm@0.8.5" in r.stderr
