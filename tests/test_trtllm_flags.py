"""TensorRT-LLM launch flags per release (data/engine_flags.yaml, trtllm section).

Each read release's ``trtllm-serve`` command uses only options its versioned docs page lists
(quoted below from the pages' Syntax section, as read through the search tool); a release that
lacks a flag refuses in one line, or takes the setting in its LLM-API YAML file where its
``llm_args.py`` has the key; ``recommend --emit`` of examples/moe-r1.yaml for trtllm 1.2.0
writes such a command, for trtllm 0.18.2 (no --ep_size, no YAML file) refuses in one line.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from planner.catalog.layout import layout_of
from planner.deploy import flags as F
from planner.deploy.serve import Knobs, launch
from planner.errors import PlannerError

ROOT = Path(__file__).resolve().parent.parent
DOCS = "https://nvidia.github.io/TensorRT-LLM"

# The options of `trtllm-serve` (from 0.19.0 its default command `serve`) each versioned page
# lists, copied from the page (an alias pair "--a, --b" lists both spellings).
_P0182 = {  # {DOCS}/0.18.2/commands/trtllm-serve.html
    "--tokenizer", "--host", "--port", "--backend", "--max_beam_width", "--max_batch_size",
    "--max_num_tokens", "--max_seq_len", "--tp_size", "--pp_size",
    "--kv_cache_free_gpu_memory_fraction", "--trust_remote_code",
}  # fmt: skip
_P0190 = _P0182 | {  # {DOCS}/0.19.0/commands/trtllm-serve.html
    "--log_level", "--ep_size", "--gpus_per_node", "--num_postprocess_workers",
    "--extra_llm_api_options",
}  # fmt: skip
_P0200 = _P0190 | {"--cluster_size", "--reasoning_parser"}  # .../0.20.0/commands/trtllm-serve.html
_P100 = _P0200 | {  # {DOCS}/1.0.0/commands/trtllm-serve/trtllm-serve.html
    "--metadata_server_config_file", "--server_role", "--fail_fast_on_attention_window_too_large",
}  # fmt: skip
_P110 = set(_P100)  # {DOCS}/1.1.0/commands/trtllm-serve/trtllm-serve.html: the same list
_P120RC1 = _P110 | {"--enable_chunked_prefill"}  # .../1.2.0rc1/commands/trtllm-serve/...
_P120 = _P120RC1 | {  # {DOCS}/1.2.0/commands/trtllm-serve/trtllm-serve.html
    "--custom_tokenizer", "--custom_module_dirs", "--tensor_parallel_size",
    "--pipeline_parallel_size", "--context_parallel_size", "--cp_size",
    "--moe_expert_parallel_size", "--moe_cluster_parallel_size", "--free_gpu_memory_fraction",
    "--revision", "--config", "--tool_parser", "--otlp_traces_endpoint", "--disagg_cluster_uri",
    "--media_io_kwargs", "--chat_template",
}  # fmt: skip
_P130RC14 = _P120 | {  # {DOCS}/1.3.0rc14/commands/trtllm-serve/trtllm-serve.html (part read)
    "--kv_cache_dtype", "--hf_revision", "--telemetry", "--no-telemetry", "--enable_attention_dp",
    "--video_pruning_rate", "--middleware", "--grpc", "--served_model_name",
}  # fmt: skip
PAGE = {
    "0.18.2": _P0182,
    "0.19.0": _P0190,
    "0.20.0": _P0200,
    "1.0.0": _P100,
    "1.1.0": _P110,
    "1.2.0rc1": _P120RC1,
    "1.2.0": _P120,
    "1.3.0rc14": _P130RC14,
}
# LLM-API keys read for a release (the YAML file --extra_llm_api_options passes): class
# LlmArgs / BaseLlmArgs on {DOCS}/<release>/_modules/tensorrt_llm/llmapi/llm_args.html
# (enable_attention_dp, kv_cache_config with KvCacheConfig.enable_block_reuse,
# enable_chunked_prefill) and, for 1.0.0, the DeepSeek-R1 deployment guide's kv_cache_config
# section ("dtype: Sets the data type for the KV cache").
_K019 = {"enable_attention_dp", "kv_cache_config", "enable_block_reuse", "enable_chunked_prefill"}
YAML_KEYS = {"0.19.0": _K019, "0.20.0": _K019, "1.0.0": _K019 | {"dtype"}}


def _knobs(**kw) -> Knobs:
    """DeepSeek-V3 as DEP8 (tp 1 x attention DP 8, EP 8) with every engine setting set."""
    shape = {k: kw.pop(k) for k in ("tp", "pp", "ep", "attention_dp") if k in kw}
    base = dict(model_id="deepseek-v3", hf_repo="deepseek-ai/DeepSeek-V3", framework="trtllm",
                precision="fp8", kv_precision="bf16", max_num_seqs=256,
                max_num_batched_tokens=8192, memory_utilization=0.9, max_model_len=8192,
                chunked_prefill=True, prefix_caching=True)  # fmt: skip
    base.update(kw, layout=layout_of(**(shape or dict(tp=1, ep=8, attention_dp=8))))
    return Knobs(**base)


def _yaml_keys(files: dict[str, str]) -> set[str]:
    """Every key of the emitted LLM-API YAML file, nested ones included."""
    out: set[str] = set()

    def walk(d):
        for k, v in d.items():
            out.add(k)
            if isinstance(v, dict):
                walk(v)

    if "extra_llm_api_options.yaml" in files:
        walk(yaml.safe_load(files["extra_llm_api_options.yaml"]))
    return out


def test_every_page_read_is_a_read_release():
    """The quoted pages are the releases in the data (plus the main-branch read of serve.py),
    oldest first, main@00209af1 between 1.2.0 and 1.3.0rc14."""
    names = [r.release for r in F.load_engine_flags().engines["trtllm"].releases]
    assert names == [*list(PAGE)[:-1], "main@00209af1", "1.3.0rc14"]


@pytest.mark.parametrize("release", list(PAGE))
def test_data_flags_are_the_pages(release):
    """Both ways: every command-line flag the data allows for the release is on its page, and
    every flag of the data's settings that the page lists is allowed for the release."""
    allowed = {f for f in F.all_flags("trtllm", release) if f.startswith("--")}
    assert allowed <= PAGE[release], allowed - PAGE[release]
    eng = F.load_engine_flags().engines["trtllm"]
    spelled = {sp.flag for s in eng.settings.values() for sp in s.spellings}
    assert spelled & PAGE[release] <= allowed, (spelled & PAGE[release]) - allowed


@pytest.mark.parametrize("release", [r for r in PAGE if r != "0.18.2"])
def test_launch_uses_only_flags_its_page_lists(release):
    """DEP8 with every setting: the command and the YAML keys are the release's own."""
    la = launch(_knobs(), F.resolve("trtllm", release, "test"))
    assert la.command == "trtllm-serve"
    assert set(la.flags()) <= PAGE[release], set(la.flags()) - PAGE[release]
    args = dict(la.args)
    # width = tp x attention_dp = 1 x 8 ranks; EP 8
    assert (args["--tp_size"], args["--ep_size"]) == ("8", "8")
    if release in YAML_KEYS:
        assert _yaml_keys(la.files) <= YAML_KEYS[release]
    extra = yaml.safe_load(la.files["extra_llm_api_options.yaml"])
    assert extra["enable_attention_dp"] is True
    assert extra["kv_cache_config"]["enable_block_reuse"] is True


@pytest.mark.parametrize(
    ("release", "in_yaml"),
    [("0.19.0", True), ("0.20.0", True), ("1.0.0", True), ("1.1.0", True),
     ("1.2.0rc1", False), ("1.2.0", False), ("1.3.0rc14", False)],
)  # fmt: skip
def test_chunked_prefill_before_and_after_the_flag(release, in_yaml):
    """--enable_chunked_prefill is on the pages from 1.2.0rc1 on; before, the LLM-API key
    enable_chunked_prefill (in llm_args.py from 0.19.0) goes into the YAML file."""
    la = launch(_knobs(), F.resolve("trtllm", release, "test"))
    extra = yaml.safe_load(la.files["extra_llm_api_options.yaml"])
    assert ("--enable_chunked_prefill" in la.flags()) is not in_yaml
    assert extra.get("enable_chunked_prefill") is (True if in_yaml else None)


def test_kv_dtype_key_from_1_0_0():
    """fp8 KV: kv_cache_config.dtype (read from 1.0.0) is written for 1.0.0; 0.20.0 has no key
    read for it, so the emitter refuses in one line naming where it exists."""
    la = launch(_knobs(kv_precision="fp8"), F.resolve("trtllm", "1.0.0", "test"))
    assert yaml.safe_load(la.files["extra_llm_api_options.yaml"])["kv_cache_config"] == {
        "dtype": "fp8", "enable_block_reuse": True}  # fmt: skip
    with pytest.raises(PlannerError) as e:
        launch(_knobs(kv_precision="fp8"), F.resolve("trtllm", "0.20.0", "test"))
    msg = str(e.value)
    assert "trtllm 0.20.0 has no flag for the KV-cache dtype" in msg and "dtype in 1.0.0+" in msg
    assert len(msg.splitlines()) == 1


def test_0_18_2_has_no_ep_and_no_yaml_file():
    """0.18.2's page lists no --ep_size and no --extra_llm_api_options: an EP layout refuses in
    one line; so does any setting that only the YAML file carries (chunked prefill, block
    reuse); a dense TP2 replica without them uses only the page's options and writes no file."""
    res = F.resolve("trtllm", "0.18.2", "test")
    with pytest.raises(PlannerError) as e:
        launch(_knobs(), res)
    assert str(e.value) == (
        "trtllm 0.18.2 has no flag for expert parallelism (flags read at 0.18.2; --ep_size in "
        "0.19.0+); emit for a release that has it"
    )
    dense = dict(tp=2, model_id="llama-3.1-8b", hf_repo="meta-llama/Llama-3.1-8B")
    for kw, what in ((dict(prefix_caching=True, chunked_prefill=None), "KV block reuse"),
                     (dict(prefix_caching=None, chunked_prefill=True), "chunked prefill")):  # fmt: skip
        with pytest.raises(PlannerError, match=f"trtllm 0.18.2 has no flag for {what}"):
            launch(_knobs(**dense, **kw), res)
    la = launch(_knobs(**dense, prefix_caching=None, chunked_prefill=None), res)
    assert set(la.flags()) <= PAGE["0.18.2"] and not la.files
    assert dict(la.args)["--tp_size"] == "2"


def test_release_floor():
    """A release between two read ones takes the older's flags; main@00209af1 (a commit) sorts
    just after 1.2.0, so 1.2.1 takes it; below 0.18.2 there is nothing to emit for."""
    known = ("0.17.0.post1", "0.21.0", "1.2.0rc6.post2", "1.2.1", "1.3.0rc14")
    read = {r: F.resolve("trtllm", r, "t", known).read for r in known[1:]}
    assert read == {"0.21.0": "0.20.0", "1.2.0rc6.post2": "1.2.0rc1", "1.2.1": "main@00209af1",
                    "1.3.0rc14": "1.3.0rc14"}  # fmt: skip
    with pytest.raises(PlannerError, match="older than every release whose flags were read"):
        F.resolve("trtllm", "0.17.0.post1", "t", known)
    assert F.resolve("trtllm", None, "t").read == "1.3.0rc14"


def _moe_r1(out: Path, release: str) -> list[str]:
    return ["recommend", str(ROOT / "examples" / "moe-r1.yaml"), "--gpus", "b200",
            "--precisions", "fp4", "--frameworks", "trtllm", "--emit", str(out),
            "--emit-top", "1", "--emit-release", f"trtllm@{release}", "--disagg", "off",
            "--format", "json"]  # fmt: skip


def test_emit_moe_r1_for_trtllm_1_2_0(tmp_path, capsys):
    """examples/moe-r1.yaml on B200 fp4 for trtllm 1.2.0: serve.sh runs trtllm-serve with only
    options of the 1.2.0 page, the layout of the ranked option (--tp_size = tp x attention DP,
    --ep_size = EP) and the YAML file with attention DP, the fp8 KV dtype and block reuse."""
    import json

    from planner.cli.main import main

    out = tmp_path / "o"
    assert main(_moe_r1(out, "1.2.0")) == 0
    r = json.loads(capsys.readouterr().out)["recommendations"][0]
    (folder,) = out.iterdir()
    text = (folder / "serve.sh").read_text()
    assert "# flags read at: 1.2.0\n" in text
    cmd = shlex.split(text[text.index("exec ") + 5 :].replace("\\\n", " "))
    assert cmd[:2] == ["trtllm-serve", "$MODEL"]
    flags = [t for t in cmd if t.startswith("--")]
    assert set(flags) <= PAGE["1.2.0"], set(flags) - PAGE["1.2.0"]
    args = {
        a: b
        for a, b in zip(cmd, cmd[1:], strict=False)
        if a.startswith("--") and not b.startswith("--")
    }
    assert int(args["--tp_size"]) == r["tp"] * r["attention_dp"]
    if r["ep"] > 1:
        assert int(args["--ep_size"]) == r["ep"]
    assert "--enable_chunked_prefill" in flags
    extra = yaml.safe_load((folder / "extra_llm_api_options.yaml").read_text())
    assert _yaml_keys({"extra_llm_api_options.yaml": yaml.safe_dump(extra)}) <= YAML_KEYS["1.0.0"]
    assert extra.get("enable_attention_dp", False) is (r["attention_dp"] > 1)
    assert extra["kv_cache_config"]["dtype"] == "fp8" and r["kv_precision"] == "fp8"


def test_emit_moe_r1_for_trtllm_0_18_2_refuses_in_one_line(tmp_path, capsys):
    """The same scenario for trtllm 0.18.2: the ranked option is expert-parallel, which 0.18.2's
    trtllm-serve cannot express; the named release is refused in one line, nothing written."""
    from planner.cli.main import main

    out = tmp_path / "o"
    assert main(_moe_r1(out, "0.18.2")) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "trtllm 0.18.2 has no flag for expert parallelism" in err and "0.19.0+" in err
    assert not out.exists() or not any(out.iterdir())


def test_mtp_goes_into_the_llm_api_yaml_from_1_1_0():
    """TensorRT-LLM MTP (DeepSeek-class): speculative_config: {decoding_type: MTP,
    num_nextn_predict_layers: K} in the extra LLM-API YAML, as InferenceX's
    dsr1_fp4_b200_trt_mtp_slurm.sh passes it on release 1.1.0rc2.post2 (commit bf3456727);
    1.0.0 (the read release below) has no checked YAML key: a one-line refusal."""
    import yaml

    from planner.catalog.layout import layout_of
    from planner.deploy import flags as F
    from planner.deploy.serve import Knobs, launch
    from planner.errors import PlannerError

    k = Knobs(model_id="deepseek-r1", hf_repo="deepseek-ai/DeepSeek-R1", framework="trtllm",
              precision="fp4", kv_precision="fp8", layout=layout_of(1, 1, 8, 8),
              spec_method="mtp", spec_tokens=3)  # fmt: skip
    la = launch(k, F.resolve("trtllm", "1.2.0", "t"))
    cfg = yaml.safe_load(la.files["extra_llm_api_options.yaml"])
    assert cfg["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 3}
    assert cfg["enable_attention_dp"] is True
    with pytest.raises(PlannerError, match="1.0.0"):
        launch(k, F.resolve("trtllm", "1.0.0", "t"))
