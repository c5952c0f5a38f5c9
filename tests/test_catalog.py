"""Catalog validation: ids, sources, benchmark links, typo errors, HF config.json parsing."""

from __future__ import annotations

import csv
import datetime as dt
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import DATA_DIR, FIXTURES

from planner.benchmarks import Predictor
from planner.catalog import load_catalog, model_from_hf_config
from planner.engine import kv_bytes_per_token, param_counts
from planner.errors import MissingDataError, PlannerError, UnknownIdError

KINDS = ("accelerators", "models", "precisions", "kv_precisions", "frameworks")


# --------------------------------------------------------------------------- the bundled data
@pytest.mark.parametrize("kind", KINDS)
def test_ids_and_aliases_unique(catalog, kind):
    keys = []
    for item in getattr(catalog, kind):
        keys += [item.id.lower(), *(a.lower() for a in getattr(item, "aliases", ()))]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    assert not dupes, f"{kind}: duplicate ids/aliases {dupes}"


@pytest.mark.parametrize("kind", [*KINDS, "rental_prices", "purchase_prices"])
def test_every_entry_has_source_and_as_of(catalog, kind):
    for item in getattr(catalog, kind):
        label = getattr(item, "id", None) or getattr(item, "gpu", "?")
        assert item.source and len(item.source.strip()) >= 3, f"{kind} {label}: no source"
        assert isinstance(item.as_of, dt.date), f"{kind} {label}: no as_of"
        assert item.as_of <= dt.date.today(), f"{kind} {label}: as_of in the future"


def test_catalog_is_not_empty(catalog):
    assert len(catalog.accelerators) >= 10
    assert len(catalog.models) >= 10
    assert {"bf16", "fp8", "int4-awq"} <= {p.id for p in catalog.precisions}
    assert {"vllm", "trtllm", "sglang"} <= {f.id for f in catalog.frameworks}


def _benchmark_csvs() -> list[Path]:
    """CSVs in the benchmark schema (micro-benchmark files have another schema)."""
    out = []
    for p in sorted((DATA_DIR / "benchmarks").glob("*.csv")):
        with open(p, newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
        if {"hardware", "model", "metric", "value", "unit"} <= set(header):
            out.append(p)
    return out


def test_benchmark_files_present():
    assert _benchmark_csvs(), "data/benchmarks/*.csv missing"


@pytest.mark.parametrize("path", _benchmark_csvs(), ids=lambda p: p.name)
def test_benchmark_ids_resolve(catalog, path):
    pred = Predictor(catalog, csv_dir=path.parent)
    bad: dict[str, list[str]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            for col, lookup in (("hardware", catalog.gpu), ("model", pred.model)):
                try:
                    lookup(row[col])
                except PlannerError as e:
                    bad.setdefault(f"{col}={row[col]}: {e}", []).append(row["id"])
            if row.get("precision"):
                try:
                    catalog.precision(row["precision"])
                except PlannerError as e:
                    bad.setdefault(f"precision={row['precision']}: {e}", []).append(row["id"])
    assert not bad, "\n".join(f"{k} (rows {v[:3]}...)" for k, v in bad.items())


def test_lookup_by_alias_and_case(catalog):
    g = catalog.gpu("nvidia-h100-sxm")
    assert catalog.gpu("NVIDIA-H100-SXM") is g
    for alias in g.aliases:
        assert catalog.gpu(alias) is g


def test_unknown_id_lists_close_matches(catalog):
    with pytest.raises(UnknownIdError) as ei:
        catalog.gpu("nvidia-h100-sx")
    assert "nvidia-h100-sxm" in ei.value.suggestions
    assert "Did you mean" in str(ei.value)
    with pytest.raises(UnknownIdError) as ei:
        catalog.model("llama-3.1-7b")
    assert "llama-3.1-8b" in ei.value.suggestions or "llama-3.1-70b" in ei.value.suggestions


def test_peak_fallback_and_missing(catalog):
    a100 = catalog.gpu("nvidia-a100-80gb-sxm")
    assert a100.peak_tflops("bf16") == 312
    assert a100.peak_tflops("fp16") == 312  # one rate for both on Ampere
    with pytest.raises(MissingDataError, match="fp8"):
        a100.peak_tflops("fp8")


# --------------------------------------------------------------------------- typo -> error
def _copy_data(tmp_path: Path) -> Path:
    dst = tmp_path / "data"
    shutil.copytree(DATA_DIR, dst, ignore=shutil.ignore_patterns("benchmarks", "calibration"))
    return dst


def _edit_yaml(path: Path, key: str, index: int, edit) -> str:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    entry = raw[key][index]
    edit(entry)
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return entry.get("id", entry.get("gpu"))


def test_yaml_field_typo_names_file_entry_and_field(tmp_path):
    data = _copy_data(tmp_path)

    def typo(e):
        e["hiden_size"] = e.pop("hidden_size")

    ident = _edit_yaml(data / "models.yaml", "models", 2, typo)
    with pytest.raises(PlannerError) as ei:
        load_catalog(data)
    msg = str(ei.value)
    assert "models.yaml" in msg and ident in msg and "hiden_size" in msg
    assert "\n" not in msg


def test_yaml_wrong_type_names_field(tmp_path):
    data = _copy_data(tmp_path)
    ident = _edit_yaml(
        data / "hardware.yaml", "accelerators", 1, lambda e: e.update(memory_gb="eighty")
    )
    with pytest.raises(PlannerError) as ei:
        load_catalog(data)
    msg = str(ei.value)
    assert "hardware.yaml" in msg and ident in msg and "memory_gb" in msg and "eighty" in msg


def test_yaml_missing_source_is_an_error(tmp_path):
    data = _copy_data(tmp_path)
    ident = _edit_yaml(data / "frameworks.yaml", "frameworks", 0, lambda e: e.pop("source"))
    with pytest.raises(PlannerError) as ei:
        load_catalog(data)
    assert "frameworks.yaml" in str(ei.value) and ident in str(ei.value)
    assert "source" in str(ei.value)


def test_yaml_syntax_error(tmp_path):
    data = _copy_data(tmp_path)
    (data / "precisions.yaml").write_text("precisions: [\n  - id: bf16\n", encoding="utf-8")
    with pytest.raises(PlannerError, match="precisions.yaml.*not valid YAML"):
        load_catalog(data)


def test_missing_catalog_file(tmp_path):
    data = _copy_data(tmp_path)
    (data / "frameworks.yaml").unlink()
    with pytest.raises(PlannerError, match="frameworks.yaml"):
        load_catalog(data)


def test_price_for_unknown_gpu_is_an_error(tmp_path):
    data = _copy_data(tmp_path)
    if not (data / "prices.yaml").exists():
        pytest.skip("no prices.yaml")
    _edit_yaml(data / "prices.yaml", "rental", 0, lambda e: e.update(gpu="nvidia-h1000"))
    with pytest.raises(PlannerError, match="nvidia-h1000"):
        load_catalog(data)


# --------------------------------------------------------------------------- HF config.json
def _fx(name: str):
    return model_from_hf_config(FIXTURES / f"{name}.json")


def test_hf_llama():
    m = _fx("llama")
    assert (m.architecture, m.num_hidden_layers, m.num_key_value_heads, m.head_dim) == (
        "llama", 32, 8, 4096 // 32,
    )  # fmt: skip
    assert not m.tie_word_embeddings and not m.is_moe and m.num_sliding_layers == 0
    assert param_counts(m).total == 8_030_261_248  # the hand count of test_memory


def test_hf_qwen2_has_qkv_bias_and_no_window_when_disabled():
    m = _fx("qwen2")
    assert m.attention_bias and not m.attention_out_bias
    assert m.num_sliding_layers == 0  # use_sliding_window: false
    pc = param_counts(m)
    # 28 layers x (q 3584x3584 + k,v 2 x 3584x512 + o 3584x3584 + qkv bias 3584+2x512
    # + MLP 3 x 3584 x 18944 + 2 norms) + embedding + lm head (152064 x 3584) + final norm
    layer = 2 * 3584 * 3584 + 2 * 3584 * 512 + (3584 + 1024) + 3 * 3584 * 18944 + 2 * 3584
    assert pc.total == 28 * layer + 2 * 152_064 * 3584 + 3584 == 7_615_616_512


def test_hf_mixtral_moe():
    m = _fx("mixtral")
    assert (m.num_experts, m.num_experts_per_tok, m.moe_intermediate_size) == (8, 2, 14336)
    pc = param_counts(m)
    assert pc.total / 1e9 == pytest.approx(46.70, abs=0.01)
    assert pc.active / 1e9 == pytest.approx(12.88, abs=0.01)


def test_hf_deepseek_v3_mla():
    m = _fx("deepseek_v3")
    assert m.is_mla and m.is_moe
    assert (m.kv_lora_rank, m.qk_rope_head_dim, m.num_dense_layers) == (512, 64, 3)
    assert (m.num_experts, m.num_shared_experts, m.num_experts_per_tok) == (256, 1, 8)
    assert kv_bytes_per_token(m, 16) == 61 * (512 + 64) * 2
    assert round(param_counts(m).total / 1e9, 1) == 671.0


def test_hf_gpt_oss_sliding_layers_and_native_fp4():
    m = _fx("gpt_oss")
    assert (m.sliding_window, m.num_sliding_layers) == (128, 12)  # layer_types alternate
    assert (m.num_experts, m.num_experts_per_tok) == (32, 4)
    assert m.native_precision == "fp4" and m.attention_bias and m.router_bias
    assert param_counts(m).total / 1e9 == pytest.approx(21, rel=0.03)  # "21B parameters"


def test_hf_gemma2_alternating_window_and_tied():
    m = _fx("gemma2")
    assert (m.sliding_window, m.num_sliding_layers) == (4096, 21)  # every other of 42
    assert m.tie_word_embeddings and m.head_dim == 256 and m.norms_per_layer == 4
    assert param_counts(m).lm_head == 0


def test_hf_gptj_field_names():
    m = _fx("gptj")  # n_embd / n_layer / n_head naming
    assert (m.hidden_size, m.num_hidden_layers, m.num_attention_heads) == (4096, 28, 16)
    assert (m.intermediate_size, m.mlp_gated, m.norm) == (4 * 4096, False, "layernorm")
    # model card: 6,053,381,344 parameters
    assert param_counts(m).total == pytest.approx(6_053_381_344, rel=0.001)


def test_hf_falcon_new_decoder_architecture():
    m = _fx("falcon")
    assert (m.num_key_value_heads, m.head_dim) == (8, 14848 // 232)
    assert m.intermediate_size == 4 * 14848 and not m.mlp_gated
    assert param_counts(m).total / 1e9 == pytest.approx(180, rel=0.03)


def test_hf_unknown_architecture_is_an_error():
    with pytest.raises(PlannerError, match="unsupported model_type 'mamba'") as ei:
        _fx("unknown_arch")
    assert "llama" in str(ei.value)  # lists what is supported


def test_hf_errors(tmp_path):
    with pytest.raises(PlannerError, match="not found"):
        model_from_hf_config(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(PlannerError, match="not valid JSON"):
        model_from_hf_config(bad)
    lacking = tmp_path / "config.json"
    lacking.write_text('{"model_type": "llama", "hidden_size": 64}', encoding="utf-8")
    with pytest.raises(PlannerError, match="lacks"):
        model_from_hf_config(tmp_path)  # a folder holding config.json


def test_catalog_model_accepts_config_path(catalog):
    m = catalog.model(str(FIXTURES / "mixtral.json"))
    assert m.num_experts == 8


# --------------------------------------------------------------------------- device memory
def test_gpu_memory_is_the_bytes_the_device_has(catalog):
    # H100 SXM "80 GB": nvidia-smi reports 81,559 MiB (Modal's NVML table,
    # https://thundergolfer.com/blog/nvidia-gpu-memory-capacity) = 81,559 x 1,048,576 B
    # = 85,520,809,984 B, 6.9 % more than 80e9
    h100 = catalog.gpu("nvidia-h100-sxm")
    assert h100.memory_gb == 80  # the capacity as sold, for display
    assert h100.memory_bytes == 85_520_809_984
    # H200 SXM "141 GB": nvidia-smi shows 143,771 MiB on the project's own H200 machines
    # (driver 580.159.04, 2026-10-29; the same figure in Modal's table) = 143,771 x 1,048,576 B
    # = 150,754,820,096 B
    assert catalog.gpu("nvidia-h200-sxm").memory_bytes == 150_754_820_096
    assert "143,771 MiB" in catalog.gpu("nvidia-h200-sxm").memory_basis()
    # no driver reading: HBM "N GB" is N GiB (MI300X 192 GiB = 192 x 1,073,741,824 B),
    # other memory N decimal GB (A10G, 24 GB GDDR6 with ECC, no reading = 24e9 B)
    assert catalog.gpu("amd-mi300x").memory_mib is None
    assert catalog.gpu("amd-mi300x").memory_bytes == 206_158_430_208
    assert catalog.gpu("nvidia-a10g").memory_bytes == 24e9
    # ECC GDDR reports about N decimal GB: A10 "24 GB" = 23,028 MiB = 24,146,608,128 B
    assert catalog.gpu("nvidia-a10").memory_bytes == 24_146_608_128


def test_every_memory_reading_names_its_source(catalog):
    for g in catalog.accelerators:
        if g.memory_mib is not None:
            assert g.memory_mib_source and "MiB" in g.memory_mib_source, g.id
            # a driver reading lies within 10 % of the capacity as sold, taken in GiB
            assert 0.9 < g.memory_mib / 1024 / g.memory_gb < 1.02, g.id
    bad = catalog.gpu("nvidia-h100-sxm").model_dump()
    bad["memory_mib_source"] = None
    with pytest.raises(ValueError, match="memory_mib needs memory_mib_source"):
        type(catalog.gpu("nvidia-h100-sxm")).model_validate(bad)


# --------------------------------------------------------------------------- default KV precision
@pytest.mark.parametrize(
    ("fw", "prec", "model", "kv", "why"),
    [
        # vLLM and TensorRT-LLM follow the checkpoint: ModelOpt fp8 / NVFP4 checkpoints
        # declare kv_cache_quant_algo FP8 (vLLM PR #29980; TensorRT-LLM quantization docs)
        ("vllm", "fp8", "llama-3.1-70b", "fp8", "#29980"),
        ("trtllm", "fp8", "llama-3.1-70b", "fp8", "TensorRT-LLM docs"),
        ("trtllm", "fp4", "llama-3.1-70b", "fp8", "trtllm with an fp4 checkpoint"),
        # SGLang keeps the model dtype unless --kv-cache-dtype is given (SGLang docs)
        ("sglang", "fp8", "llama-3.1-70b", "bf16", "SGLang docs"),
        # gpt-oss's own MXFP4 release and DeepSeek-V3's own fp8 release declare no KV quant
        ("vllm", "fp4", "gpt-oss-120b", "bf16", "own fp4 release"),
        ("vllm", "fp8", "deepseek-v3", "bf16", "own fp8 release"),
        # bf16 weights, and no framework at all: the format's kv_default
        ("vllm", "bf16", "llama-3.1-70b", "bf16", "declare no KV quantization"),
        (None, "fp8", "llama-3.1-70b", "bf16", "no framework given"),
    ],
)
def test_default_kv_precision_follows_the_framework_and_checkpoint(
    catalog, fw, prec, model, kv, why
):
    from planner.catalog import default_kv_precision

    d = default_kv_precision(
        catalog.precision(prec), fw and catalog.framework(fw), catalog.model(model)
    )
    assert d.id == kv and why in d.basis, d
    # resolve() applies the same default wherever no KV precision is given
    assert catalog.resolve(model, "nvidia-h200-sxm", prec, fw).kv.id == kv


def test_a_checkpoint_kv_must_be_sourced_and_offered(catalog):
    fp8 = catalog.precision("fp8")
    assert fp8.checkpoint_kv == "fp8" and "kv_cache_quant_algo" in fp8.checkpoint_kv_source
    bad = fp8.model_dump()
    bad["checkpoint_kv_source"] = None
    with pytest.raises(ValueError, match="checkpoint_kv needs checkpoint_kv_source"):
        type(fp8).model_validate(bad)
    for f in ("vllm", "trtllm", "sglang"):  # the three engines whose behaviour was read
        assert catalog.framework(f).kv_default_source, f


def test_a_checkpoints_own_kv_declaration_decides_the_default(catalog, tmp_path):
    import json

    from planner.catalog import default_kv_precision

    base = json.loads((FIXTURES / "llama.json").read_text())
    vllm, sglang, fp8 = (
        catalog.framework("vllm"),
        catalog.framework("sglang"),
        catalog.precision("fp8"),
    )

    def model(name, extra=None, modelopt=None):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps({**base, **(extra or {})}))
        if modelopt is not None:
            (d / "hf_quant_config.json").write_text(json.dumps(modelopt))
        return model_from_hf_config(d)

    # compressed-tensors with an fp8 kv_cache_scheme (an "FP8-KV" checkpoint)
    ct = model("ct", {"quantization_config": {"quant_method": "compressed-tensors",
                                              "kv_cache_scheme": {"num_bits": 8, "type": "float"}}})  # fmt: skip
    assert ct.checkpoint_kv == "fp8"
    d = default_kv_precision(fp8, vllm, ct)
    assert d.id == "fp8" and "this checkpoint" in d.basis
    assert default_kv_precision(fp8, sglang, ct).id == "bf16"  # SGLang does not follow it
    # weight-only fp8 (FP8-dynamic): a quantization config without a KV entry
    wo = model("wo", {"quantization_config": {"quant_method": "fp8", "kv_cache_scheme": None}})
    assert wo.checkpoint_kv == "none"
    d = default_kv_precision(fp8, vllm, wo)
    assert d.id == "bf16" and "declares no KV quantization" in d.basis
    # Model Optimizer: hf_quant_config.json beside config.json
    mo = model("mo", modelopt={"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}})
    assert mo.checkpoint_kv == "fp8"
    # no quantization config at all: the format's rule applies (fp8 checkpoints carry fp8 KV)
    plain = model("plain")
    assert plain.checkpoint_kv is None and default_kv_precision(fp8, vllm, plain).id == "fp8"


# --------------------------------------------------------------------------- scale-up / scale-out
# (gpu id, GPUs in one NVLink / Infinity Fabric domain, scale-out GB/s per GPU one way, a phrase
# of the source). A NIC's line rate in Gb/s over 8 bits per byte: 200 Gb/s = 25 GB/s, 400 Gb/s =
# 50 GB/s, 800 Gb/s = 100 GB/s.
TOPOLOGY = [
    ("nvidia-h100-sxm", 8, 400 / 8, "eight single-port NVIDIA ConnectX-7 VPI"),  # DGX H100
    ("nvidia-h200-sxm", 8, 400 / 8, "Four NVIDIA NVSwitch chips"),  # DGX H200
    ("nvidia-b200", 8, 400 / 8, "8 x NVIDIA ConnectX-7 Single Port Cards"),  # DGX B200
    ("nvidia-b300", 8, 800 / 8, "Eight single-port ConnectX-8 adapters"),  # DGX B300
    ("nvidia-gb200", 72, 4 * 400 / 8 / 4, "72-GPU NVL domains"),  # 4 NICs per tray of 4 GPUs
    ("nvidia-gb300", 72, 4 * 800 / 8 / 4, "4 ConnectX-8 Host Channel Adapters"),
    ("nvidia-a100-80gb-sxm", 8, 200 / 8, "ConnectX-6 VPI 200Gb/s HDR"),  # DGX A100
    ("amd-mi300x", 8, 400 / 8, "8x400 Gigabit NDR"),  # Azure ND MI300X v5
    ("amd-mi355x", 8, 400 / 8, "Pollara 400 AI NICs per node"),
]


@pytest.mark.parametrize(("gpu", "domain", "gbs", "phrase"), TOPOLOGY)
def test_scale_up_domain_and_scale_out_per_gpu_with_source(catalog, gpu, domain, gbs, phrase):
    a = catalog.gpu(gpu)
    assert a.nvlink_domain_gpus == domain
    assert a.scaleout_gbs_per_gpu == pytest.approx(gbs, rel=1e-12)
    assert phrase in a.source
    assert a.scaleout and a.as_of >= dt.date(2026, 12, 6)  # dated when the figure was added


def test_scale_out_is_an_order_below_nvlink(catalog):
    """Scale-out per GPU is about a tenth of NVLink on every sourced NVIDIA part (MLE-NET: 'about
    an order of magnitude apart per accelerator'); a GB/s vs Gb/s slip would break this."""
    for a in catalog.accelerators:
        if a.scaleout_gbs_per_gpu and a.vendor == "nvidia":
            assert 4 <= a.interconnect_gbs_unidir / a.scaleout_gbs_per_gpu <= 18, a.id


def test_unsourced_topology_stays_empty(catalog):
    # no platform's NICs were read for these: null, never a guess
    assert catalog.gpu("amd-mi325x").scaleout_gbs_per_gpu is None
    assert catalog.gpu("amd-mi325x").nvlink_domain_gpus == 8  # the 8-GPU Infinity Fabric board
    for gpu in ("nvidia-h20", "nvidia-gh200", "nvidia-l40s", "nvidia-rtx-4090"):
        a = catalog.gpu(gpu)
        assert a.nvlink_domain_gpus is None and a.scaleout_gbs_per_gpu is None, gpu
