"""Weight formats an engine serves per MoE architecture (data/moe_formats.yaml,
planner/catalog/moe_formats.py): each refusal reached from Catalog.resolve (every command),
from recommend's option search (stage ``model_format``) and from the CLI in one line; formats
no record speaks of are unchanged; no published benchmark row is refused."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from planner.catalog import load_catalog
from planner.catalog.catalog import DATA_DIR
from planner.catalog.compat import model_format_problem
from planner.catalog.moe_formats import read_moe_formats
from planner.cli import main as cli_main
from planner.errors import PlannerError
from planner.recommend import enumerate_options

CAT = load_catalog()


def _model_of(arch: str):
    return next(m for m in CAT.models if m.architecture == arch)


def _refusals():
    return [(r.architecture, r.framework, x.precision) for r in CAT.moe_formats for x in r.refuses]


def test_trtllm_deepseek_int8_is_refused_naming_what_it_serves():
    # TensorRT-LLM examples/models/core/deepseek_v3/README.md: "The minimum hardware
    # requirements for running DeepSeek V3/R1 at FP8/FP4/W4A8"; its fused-MoE INT8 method
    # (INT8WoqPerChannelFusedMoEMethod) is weight-only: "Weight Only Quantization currently
    # only supports INT8". The catalog's int8 is W8A8, so the H200 int8 winner of
    # docs/changes/2026-12-07b/usercheck.md is not a deployment.
    with pytest.raises(PlannerError) as e:
        CAT.resolve("deepseek-v3", "nvidia-h200-sxm", "int8", "trtllm")
    msg = str(e.value)
    assert "\n" not in msg
    for part in ("trtllm serves deepseek-v3", "fp8", "fp4 (NVFP4)", "W4AFP8",
                 "int8 is not among them", "deepseek_v3/README.md"):  # fmt: skip
        assert part in msg, (part, msg)


@pytest.mark.parametrize("arch, framework, precision", _refusals())
def test_every_refusal_is_reached_from_resolve_and_the_search(arch, framework, precision):
    model = _model_of(arch)
    gpu = "nvidia-h100-sxm"  # every refusing engine runs on NVIDIA (frameworks.yaml vendors)
    with pytest.raises(PlannerError, match=f"{precision} is not among them"):
        CAT.resolve(model.id, gpu, precision, framework)
    opts, rej = enumerate_options(
        CAT, model, gpus=(gpu,), frameworks=(framework,), precisions=(precision,)
    )
    assert opts == []
    stages = {r.stage for r in rej if r.precision == precision}
    # a format the engine's record does not offer at all (LMDeploy TurboMind has no W8A8:
    # data/frameworks.yaml) is refused one stage earlier, for every model
    offered = precision in CAT.framework(framework).precisions
    assert stages == ({"model_format"} if offered else {"framework_precision"}), stages


def test_served_and_unrecorded_formats_are_unchanged():
    # served per the records: fp8 / fp4 on TensorRT-LLM, int8 (Meituan's channel INT8 R1,
    # launched with SGLang --quantization w8a8_int8) on SGLang
    assert CAT.resolve("deepseek-v3", "nvidia-h200-sxm", "fp8", "trtllm").precision.id == "fp8"
    assert CAT.resolve("deepseek-v3", "nvidia-b200", "fp4", "trtllm").precision.id == "fp4"
    assert CAT.resolve("deepseek-v3", "nvidia-h200-sxm", "int8", "sglang").precision.id == "int8"
    # no record for dense Llama: TensorRT-LLM int8 (SmoothQuant) stays allowed
    assert CAT.resolve("llama-3.1-70b", "nvidia-h200-sxm", "int8", "trtllm").precision.id == "int8"
    # Qwen3-MoE on TensorRT-LLM: its Qwen guide's support matrix (BF16 / FP8 / NVFP4) refuses
    # the three integer formats (tests/test_model_support.py); nothing else is refused, and
    # no record speaks of Qwen3-MoE on vLLM: nothing refused there
    qwen = CAT.model("qwen3-235b-a22b")
    refused = {p.id for p in CAT.precisions
               if model_format_problem(CAT.moe_formats, qwen, CAT.framework("trtllm"), p)}  # fmt: skip
    assert refused == {"int8", "int4-awq", "int4-gptq"}
    for p in CAT.precisions:
        assert model_format_problem(CAT.moe_formats, qwen, CAT.framework("vllm"), p) is None


def test_dense_model_options_do_not_change():
    """No record speaks of Llama: a dense Llama model's option list has no model_format
    rejection (the dense qwen3 records are the only dense ones)."""
    _, rej = enumerate_options(CAT, CAT.model("llama-3.1-70b"), gpus=("nvidia-h200-sxm",))
    assert not [r for r in rej if r.stage == "model_format"]


def test_h200_deepseek_search_offers_no_trtllm_int8():
    model = CAT.model("deepseek-v3")
    opts, rej = enumerate_options(CAT, model, gpus=("nvidia-h200-sxm",))
    assert not [o for o in opts if o.framework.id == "trtllm" and o.precision.id == "int8"]
    assert [o for o in opts if o.framework.id == "trtllm" and o.precision.id == "fp8"]
    # TensorRT-LLM (int8, int4-awq, int4-gptq) + LMDeploy (int4-awq, int4-gptq; its TurboMind
    # record offers no int8 at all): 5 rejections
    refused = sorted((r.framework, r.precision) for r in rej if r.stage == "model_format")
    assert refused == sorted(
        [("trtllm", "int8")]
        + [(f, p) for f in ("trtllm", "lmdeploy") for p in ("int4-awq", "int4-gptq")]
    )


def test_cli_capacity_refuses_in_one_line(capsys):
    code = cli_main(
        ["capacity", str(Path(__file__).parents[1] / "examples" / "moe-r1.yaml"), "--gpu", "nvidia-h200-sxm", "--framework",
         "trtllm", "--precision", "int8", "--tp", "1", "--ep", "8", "--attention-dp", "8"]
    )  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("planner: error: precision int8: trtllm serves deepseek-v3")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "fp8 (FP8 block scales) / fp4 (NVFP4) / W4AFP8" in err


def _benchmark_triples():
    rows = pd.concat(
        pd.read_csv(f, dtype=str, keep_default_na=False)
        for f in sorted((DATA_DIR / "benchmarks").glob("public*.csv"))
    )
    return sorted(set(zip(rows["model"], rows["framework"], rows["precision"], strict=True)))


def test_no_published_benchmark_row_is_refused():
    """A record may refuse only what nobody measured: every (model, framework, precision) of
    the public benchmark rows passes."""
    checked = 0
    for m, f, p in _benchmark_triples():
        try:
            model, fw, prec = CAT.model(m), CAT.framework(f), CAT.precision(p)
        except PlannerError:
            continue  # an id outside the catalog (or a blank precision): not this rule's
        assert model_format_problem(CAT.moe_formats, model, fw, prec) is None, (m, f, p)
        checked += 1
    assert checked > 50


def test_every_record_is_sourced_and_dated():
    for r in CAT.moe_formats:
        for x in (*r.serves, *r.refuses):
            assert len(x.source) > 10 and x.as_of is not None, (r.architecture, r.framework)


def test_a_format_both_served_and_refused_is_an_error(tmp_path: Path):
    text = (DATA_DIR / "moe_formats.yaml").read_text()
    # make the lmdeploy Mixtral record refuse int4-awq, which it also serves
    bad = text.replace(
        "      - precision: int8\n        why: \"LMDeploy's supported-models table marks W8A8 "
        "'No' for Mixtral",
        "      - precision: int4-awq\n        why: \"LMDeploy's supported-models table marks W8A8 "
        "'No' for Mixtral",
    )
    assert bad != text
    (tmp_path / "moe_formats.yaml").write_text(bad)
    with pytest.raises(PlannerError, match="moe_formats.yaml.*both served and refused"):
        read_moe_formats(tmp_path)


def test_a_repeated_record_is_an_error(tmp_path: Path):
    text = (DATA_DIR / "moe_formats.yaml").read_text()
    first = text.index("  - architecture: deepseek_v3\n    framework: trtllm")
    second = text.index("  - architecture: deepseek_v3\n    framework: lmdeploy")
    (tmp_path / "moe_formats.yaml").write_text(text + "\n" + text[first:second])
    with pytest.raises(PlannerError, match="two records for deepseek_v3 / trtllm"):
        read_moe_formats(tmp_path)
