"""A release older than the model does not predict it (issue 29 / 31 output items).

Before ``data/model_support.yaml``, ``planner recommend --model gpt-oss-20b ...`` ranked
``trtllm@0.17`` first: TensorRT-LLM 0.17 (January 2025) predates gpt-oss (August 2025), so a
buyer could not install the release the answer was labelled with. Each record names the first
final release of an engine that a source says serves an architecture; the release predicted
is the later of that floor and the layout's (``data/engine_flags.yaml``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from planner.benchmarks.schema import row_release
from planner.calibration.fit import public_files_default
from planner.catalog.catalog import load_catalog
from planner.catalog.layout import Layout
from planner.catalog.profile import load_profile, model_family
from planner.catalog.release_profile import release_floor, release_order, resolve_release_params
from planner.errors import PlannerError

#: (framework, architecture, models) -> first release, each read in the record's source
#: (release notes, the engine's or the model's documentation, or a published run)
FLOORS = {
    ("vllm", "gpt_oss", ()): "0.10.1",  # vLLM blog 2025-08-06; 0.10.1 "recommended by the recipe"
    ("sglang", "gpt_oss", ()): "0.5.0rc2",  # sglang #8833 day-0 images v0.5.0rc2
    ("trtllm", "gpt_oss", ()): "1.0.0",  # GPUStack served gpt-oss-120b on v1.0.0 (notes: 1.1)
    ("vllm", "deepseek_v3", ()): "0.6.6",  # vllm #11559 "supported since v0.6.6"
    ("sglang", "deepseek_v3", ()): "0.4.1",  # v0.4.1 release notes
    ("trtllm", "deepseek_v3", ()): "0.19.0",  # release notes 0.19.0 "Added DeepSeek V3/R1"
    ("vllm", "qwen3", ()): "0.8.4",  # vllm #17327 "v0.8.4 and higher ... Qwen3 and Qwen3MoE"
    ("vllm", "qwen3_moe", ()): "0.8.4",
    ("sglang", "qwen3", ()): "0.4.6.post1",  # Qwen3 card: "sglang>=0.4.6.post1"
    ("sglang", "qwen3_moe", ()): "0.4.6.post1",
    ("trtllm", "qwen3", ()): "0.20.0",  # release notes 0.20.0 "Added Qwen3 support"
    ("trtllm", "qwen3_moe", ()): "0.20.0",
    ("trtllm", "gemma2", ()): "0.13.0",  # 0.13.0 "Supported Gemma 2"
    ("trtllm", "deepseek_v2", ()): "0.15.0",  # 0.15.0 "Added support for Deepseek-v2"
    ("trtllm", "phi3", ()): "0.14.0",  # 0.14.0 "Added support for Phi-3.5 models"
    ("trtllm", "qwen2", ()): "0.12.0",  # 0.12.0 "Supported Qwen 2 model"
    ("trtllm", "llama", ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.3-70b")):
        "0.12.0",  # 0.12.0 "Supported LLaMA 3.1 model"
    ("trtllm", "llama", ("llama-3.2-1b", "llama-3.2-3b")): "0.15.0",  # 0.15.0 "Llama 3.2"
    # LMDeploy / TGI: the first final tag whose source registers the model class or whose
    # supported-models page lists it (the engines' git history)
    ("lmdeploy", "gpt_oss", ()): "0.10.0",  # #3820 / #3839 / #3927, first tagged v0.10.0
    ("lmdeploy", "deepseek_v3", ()): "0.7.0",  # "Support DeepseekV3 fp8 (#2967)", tag v0.7.0
    ("lmdeploy", "qwen3", ()): "0.8.0",  # supported_models.md @ v0.8.0 lists "Qwen3"
    ("lmdeploy", "qwen3_moe", ()): "0.8.0",  # the same row, "0.6B-235B"
    ("tgi", "deepseek_v3", ()): "3.1.0",  # "Add deepseekv3 (#2968)", first tagged v3.1.0
}  # fmt: skip

#: (framework, architecture) -> the newest release read, where no release serves it
NOT_SERVED = {
    ("tgi", "gpt_oss"): "3.3.7",  # no gpt_oss model type; v3.3.7 locks transformers 4.51.0
}


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_every_floor_is_on_file_with_its_source(cat):
    got = {(r.framework, r.architecture, r.models): r for r in cat.model_support if r.served}
    assert set(got) == set(FLOORS)
    gone = {(r.framework, r.architecture): r for r in cat.model_support if not r.served}
    assert {k: r.checked_release for k, r in gone.items()} == NOT_SERVED
    for r in gone.values():
        assert r.since is None and len(r.source) > 10 and r.as_of.year >= 2025
    for key, since in FLOORS.items():
        r = got[key]
        assert r.since == since, key
        assert len(r.source) > 10 and len(r.quote) > 10 and r.as_of.year >= 2024, key
        # the release is a release text of its engine (orderable)
        release_order(r.framework, r.since)


def test_floor_of_a_model(cat):
    oss = cat.model("gpt-oss-120b")
    assert release_floor("trtllm", None, oss, cat)[0] == "1.0.0"
    assert release_floor("vllm", None, cat.model("gpt-oss-20b"), cat)[0] == "0.10.1"
    # a record limited to some models: Llama 3.1 / 3.3, not Llama 2 or Llama 3 (no rope
    # scaling, same `llama` code path)
    assert release_floor("trtllm", None, cat.model("llama-3.3-70b"), cat)[0] == "0.12.0"
    assert release_floor("trtllm", None, cat.model("llama-3.2-1b"), cat)[0] == "0.15.0"
    assert release_floor("trtllm", None, cat.model("llama-2-70b"), cat) is None
    assert release_floor("trtllm", None, cat.model("llama-3-70b"), cat) is None
    # a served: false record is no floor (the pair is refused instead:
    # tests/test_model_support.py), and no record is no floor (nothing changes)
    assert release_floor("tgi", None, oss, cat) is None
    assert release_floor("llama.cpp", None, oss, cat) is None
    # LMDeploy serves gpt-oss from 0.10.0 (its 0.1.0a1 fit predates it)
    assert release_floor("lmdeploy", None, oss, cat)[0] == "0.10.0"
    # the later of the layout's and the model's: vLLM DEP8 needs 0.8.5 (flags), gpt-oss 0.10.1
    assert release_floor("vllm", Layout(tp=1, ep=8, attention_dp=8), oss, cat)[0] == "0.10.1"
    # DeepSeek on vLLM: 0.6.6 for the model, 0.8.5 for DEP8 -> 0.8.5
    ds = cat.model("deepseek-v3")
    assert release_floor("vllm", Layout(tp=1, ep=8, attention_dp=8), ds, cat)[0] == "0.8.5"
    assert release_floor("vllm", Layout(tp=8), ds, cat)[0] == "0.6.6"


@pytest.fixture(scope="module")
def nodes():
    prof = load_profile()
    return sorted({(n.gpu, n.framework, n.precision) for n in prof.release_nodes
                   if n.framework in ("vllm", "sglang", "trtllm") and n.gpu})  # fmt: skip


def test_no_prediction_for_a_release_below_the_floor(cat, nodes):
    """Property over the bundled profile: for every (GPU, engine, precision) with release
    nodes and every catalog model with a floor there, the release a prediction is for (the
    one requested by the floor, else the node's) is at or above the floor."""
    moved = 0
    for m in cat.models:
        for gpu, fw, prec in nodes:
            fl = release_floor(fw, None, m, cat)
            if fl is None:
                continue
            _, _, ch = resolve_release_params(gpu, fw, prec, catalog=cat,
                                              family=model_family(m), model=m)  # fmt: skip
            rel = (ch.requested or ch.used) if ch is not None else None
            if rel is None:  # the fit over every release: no release named
                continue
            assert release_order(fw, rel) >= release_order(fw, fl[0]), (m.id, gpu, fw, ch)
            if ch.requested == fl[0]:
                moved += 1
                assert f"cannot serve {m.id}" in ch.note, ch.note
    # gpt-oss and Qwen3 on the Hopper TensorRT-LLM 0.17 nodes at least
    assert moved >= 4


def test_a_named_release_older_than_the_model_is_refused(cat):
    with pytest.raises(
        PlannerError, match=r"trtllm 0\.17 cannot serve gpt-oss-120b.*trtllm@1\.0\.0"
    ):
        resolve_release_params("nvidia-h100-sxm", "trtllm", "fp8", "0.17", catalog=cat,
                               model=cat.model("gpt-oss-120b"))  # fmt: skip
    # the same release for a model it serves is fine (Llama-2: no floor)
    resolve_release_params("nvidia-h100-sxm", "trtllm", "fp8", "0.17", catalog=cat,
                           model=cat.model("llama-2-70b"))  # fmt: skip


def test_estimate_refuses_in_one_line_naming_the_flag():
    r = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", "estimate", "--model", "gpt-oss-120b",
         "--gpu", "nvidia-h100-sxm", "--framework", "trtllm@0.17", "--precision", "fp8",
         "--tp", "2", "--batch", "8", "--input-len", "1000", "--output-len", "100"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    err = [ln for ln in r.stderr.splitlines() if "cannot serve" in ln]
    assert len(err) == 1 and "--framework" in err[0] and "trtllm@1.0.0" in err[0], r.stderr


def test_published_rows_agree_with_the_floors(cat):
    """Data check: every benchmark row naming a final release is at or above its model's
    floor; the only rows below one are development builds (TensorRT-LLM's 0.17.post1.dev
    DeepSeek-R1 rows, a main-branch build before 0.19.0 listed DeepSeek V3/R1)."""
    rows = pd.concat(pd.read_csv(f, dtype=str, keep_default_na=False)
                     for f in public_files_default())  # fmt: skip
    checked, below = 0, set()
    ids = {m.id for m in cat.models}
    for r in rows.to_dict("records"):
        if r["model"] not in ids or (rel := row_release(r)) is None:
            continue
        fw = cat.framework(r["framework"]).id
        fl = release_floor(fw, None, cat.model(r["model"]), cat)
        if fl is None:
            continue
        checked += 1
        if release_order(fw, rel.release) < release_order(fw, fl[0]):
            below.add((fw, rel.release))
    assert checked > 1000
    assert below == {("trtllm", "0.17.post1.dev")}


def test_gpt_oss_recommend_no_longer_offers_trtllm_017():
    """The command of docs/changes/2026-12-07b/gptossnative.md: before, rank 1 was
    ``nvidia-h100-sxm trtllm@0.17 fp8 TP1`` (and rank 4 the same on H200)."""
    r = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", "recommend", "--model", "gpt-oss-20b",
         "--peak-rps", "10", "--input-tokens", "1000", "--output-tokens", "1000",
         "--ttft-p99", "2", "--tpot-p99", "0.05", "--gpus", "nvidia-h200-sxm,nvidia-h100-sxm",
         "--format", "json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    recs = json.loads(r.stdout)["recommendations"]
    trt = [x for x in recs if x["framework"] == "trtllm"]
    assert trt, [(x["framework"], x["release"]) for x in recs]
    for x in trt:  # never a release below the floor; the provenance names the floor
        # a release node's option is labelled with the floor ("predicted for"); one fitted
        # over every release (gpt-oss's native fp4 on Hopper since the eighth pass: no release
        # node) carries no release and says the model needs the floor
        assert x["release"] in ("trtllm@1.0.0", None), x["release"]
        want = "predicted for trtllm@1.0.0" if x["release"] else "needs trtllm >= 1.0.0"
        assert want in x["provenance"], x["provenance"]
        assert "data/model_support.yaml" in x["provenance"]
