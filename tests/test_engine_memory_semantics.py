"""Each engine's memory rule (how it sizes its KV pool, and the overhead outside it), pinned
with its source: every expected budget below is derived by hand from the rule the engine's
code or logs state (data/frameworks.yaml memory_semantics / runtime_overhead_source).

Common numbers (Llama-3.1-8B bf16 on one H100 SXM, context 4096):

* card: 81,559 MiB as nvidia-smi reports it = 85,520,809,984 B
* weights: 8,030,261,248 parameters x 2 B = 16,060,522,496 B
* activation workspace (docs/formulas.md): tokens x 2 x (2 x 4096 + 48 x 128 + 2 x 14336)
  = tokens x 86,016 B, plus fp32 logits of max_num_seqs x 128,256 x 4 B
* KV: 32 layers x 2 x 8 heads x 128 x 2 B = 131,072 B per token; 4096 tokens = 536,870,912 B
"""

from __future__ import annotations

import json

import pytest

from planner import cli
from planner.engine import plan_memory

CAP = 81_559 * 2**20  # 85,520,809,984 B
W8B = 2 * 8_030_261_248  # 16,060,522,496 B
SEQ = 4096 * 131_072  # 536,870,912 B
GIB = 2**30


def act(tokens: int, seqs: int) -> int:
    """Activation workspace of Llama-3.1-8B at tp = 1 [B] (formula in the module docstring)."""
    return tokens * 86_016 + seqs * 128_256 * 4


def plan(catalog, fw: str, **kw):
    return plan_memory(
        "llama-3.1-8b", "nvidia-h100-sxm", "bf16", framework=fw, context_len=4096,
        catalog=catalog, **kw,
    )  # fmt: skip


# the rule of each engine, as its source states it: (fraction, of what, overhead at tp = 1 [GB],
# added once tp > 1 [GB], a phrase of the source the number rests on)
RULES = {
    "vllm": (0.92, "total", 1.4, 2.0, "llm-d-planner/blob/875a4fd"),
    "sglang": (0.88, "static", 0.6, 2.1, "sglang/pull/11716"),
    "trtllm": (0.9, "free", 2.6, 2.0, "extra_consumption_mb = 2500"),
    "tgi": (0.9, "total", 0.6, 2.0, "vLLM start-up logs"),
    "llama.cpp": (1.0, "total", 1.6, 0.0, "default: 1024"),
    "lmdeploy": (0.8, "free", 0.6, 2.0, "vLLM start-up logs"),
}


@pytest.mark.parametrize("fw_id", sorted(RULES))
def test_each_engine_states_its_rule_with_a_source(catalog, fw_id):
    util, of, tp1_gb, multi_gb, phrase = RULES[fw_id]
    fw = catalog.framework(fw_id)
    assert (fw.default_memory_utilization, fw.memory_utilization_of) == (util, of)
    assert (fw.runtime_overhead_gb, fw.runtime_overhead_gb_multi_gpu) == (tp1_gb, multi_gb)
    assert phrase in fw.runtime_overhead_source
    assert fw.memory_semantics and "http" in fw.memory_semantics + fw.runtime_overhead_source
    # no engine runs at its whole card with nothing besides weights, activations and KV
    assert util < 1 or fw.runtime_overhead_gb > 0
    assert fw.runtime_overhead_bytes(1) == pytest.approx(tp1_gb * 1e9, rel=1e-12)
    assert fw.runtime_overhead_bytes(8) == pytest.approx((tp1_gb + multi_gb) * 1e9, rel=1e-12)


def test_vllm_budget_by_hand(catalog):
    """vLLM: KV = 0.92 x total - weights - activation peak - non-torch - CUDA graphs (graphs in
    the budget since v0.21.0). On >= 70 GiB GPUs the API server batches 8192 tokens of up to
    1024 sequences."""
    p = plan(catalog, "vllm")
    a = act(8192, 1024)  # 704,643,072 + 525,336,576
    assert p.activation_bytes_per_gpu == a == 1_229_979_648
    # non-torch 0.27 GiB + CUDA-graph pool 1.04 GiB (means of 49 vLLM v0.19.0 H100 runs) = 1.4 GB
    assert p.runtime_overhead_bytes_per_gpu == 1.4e9
    # 0.92 x 85,520,809,984 = 78,679,145,185.28; - 16,060,522,496 - 1,229,979,648 - 1.4e9
    budget = 0.92 * CAP - W8B - a - 1.4e9
    assert budget == pytest.approx(59_988_643_041.28, abs=1)
    assert p.kv_budget_bytes_per_gpu == pytest.approx(budget, rel=1e-12)
    assert p.max_concurrent_sequences == 111  # 59,988,643,041 / 536,870,912 = 111.7
    # tp = 2 adds the NCCL / custom all-reduce buffers: 1.4 + 2.0 GB per GPU
    p2 = plan(catalog, "vllm", tp=2)
    assert p2.runtime_overhead_bytes_per_gpu == pytest.approx(3.4e9, rel=1e-12)
    rest = 0.92 * CAP - p2.weight_bytes_per_gpu - p2.activation_bytes_per_gpu - 3.4e9
    assert p2.kv_budget_bytes_per_gpu == pytest.approx(rest, rel=1e-12)


def test_vllm_budget_near_the_published_log(catalog):
    """vLLM v0.19.0 logged 58.11 GiB of KV for Llama-3.1-8B on one H100 at utilization 0.95
    (llm-d-planner accuracy report: 0.95 x 79.19 - 14.99 - 1.89 - 0.25). The planner's budget at
    0.95 is 0.95 x 85,520,809,984 - 16,060,522,496 - 1,229,979,648 - 1.4e9 = 62,554,267,340.8 B
    = 58.26 GiB. Within 3 %: torch's 79.19 GiB total is 0.46 GiB below nvidia-smi's, the
    planner's activation estimate is 0.8 GiB under vLLM's profiled 1.89 GiB, and the 1.04 GiB
    of CUDA graphs counted here were outside the budget in v0.19.0."""
    p = plan(catalog, "vllm", memory_utilization=0.95)
    assert p.kv_budget_bytes_per_gpu == pytest.approx(62_554_267_340.8, abs=1)
    assert p.kv_budget_bytes_per_gpu / GIB == pytest.approx(58.11, rel=0.03)


def test_trtllm_budget_by_hand(catalog):
    """TensorRT-LLM: KV = (total - weights - activations - memory outside torch) x 0.9; its
    scheduler defaults 2048 sequences / 8192 tokens."""
    p = plan(catalog, "trtllm")
    a = act(8192, 2048)
    assert a == 1_755_316_224
    # (85,520,809,984 - 16,060,522,496 - 1,755,316,224 - 2.6e9) x 0.9 = 65,104,971,264 x 0.9
    budget = (CAP - W8B - a - 2.6e9) * 0.9
    assert budget == pytest.approx(58_594_474_137.6, abs=1)
    assert p.kv_budget_bytes_per_gpu == pytest.approx(budget, rel=1e-12)
    assert p.max_concurrent_sequences == 109  # 109.1


def test_tgi_budget_by_hand(catalog):
    """TGI: KV = cuda_memory_fraction (1.0) x TGI_WIGGLE_ROOM (0.90) x total - everything in use
    after the warm-up prefill (weights, activations, CUDA context); 128 sequences / 4096
    prefill tokens by default."""
    p = plan(catalog, "tgi")
    a = act(4096, 128)  # 352,321,536 + 65,667,072
    assert a == 417_988_608
    # 76,968,728,985.6 - 16,060,522,496 - 417,988,608 - 0.6e9
    budget = 0.9 * CAP - W8B - a - 0.6e9
    assert budget == pytest.approx(59_890_217_881.6, abs=1)
    assert p.kv_budget_bytes_per_gpu == pytest.approx(budget, rel=1e-12)
    assert p.max_concurrent_sequences == 111  # 111.6


def test_tgi_wiggle_room_by_release(catalog):
    """TGI_WIGGLE_ROOM was 0.95 through v3.0.x, 0.93 in v3.1-v3.2 (PR #2958), 0.90 from v3.3.0
    (PR #3189)."""
    tgi = catalog.framework("tgi")
    assert tgi.memory_utilization_default("3.0.1") == 0.95
    assert tgi.memory_utilization_default("v3.2.0") == 0.93
    assert tgi.memory_utilization_default("3.3.6") == 0.9
    assert tgi.memory_utilization_default(None) == 0.9


def test_sglang_budget_by_hand(catalog):
    """SGLang: mem_fraction_static (0.88 at TP1) of the memory free after the CUDA context
    (0.6 GB at tp = 1) holds weights and KV; activations are served from the rest
    (profile_max_num_token: rest = available after weights - total_after_init x (1 - f))."""
    p = plan(catalog, "sglang")
    # 0.88 x (85,520,809,984 - 600,000,000) - 16,060,522,496
    # = 74,730,312,785.92 - 16,060,522,496
    budget = 0.88 * (CAP - 0.6e9) - W8B
    assert budget == pytest.approx(58_669_790_289.92, abs=1)
    assert p.kv_budget_bytes_per_gpu == pytest.approx(budget, rel=1e-12)


def test_llama_cpp_budget_by_hand(catalog):
    """llama.cpp: no fraction; --fit leaves 1024 MiB free per device, plus the CUDA context."""
    p = plan(catalog, "llama.cpp")
    a = act(8192, 4)  # no n_batch default read: the planner's 8192 tokens, 4 slots
    assert a == 706_695_168
    budget = CAP - W8B - a - 1.6e9  # 67,153,592,320
    assert p.kv_budget_bytes_per_gpu == pytest.approx(budget, rel=1e-12)
    assert budget == 67_153_592_320


def test_lmdeploy_budget_by_hand(catalog):
    """LMDeploy (TurboMind, > v0.2.1): 0.8 of the FREE memory after weights goes to KV."""
    p = plan(catalog, "lmdeploy")
    a = act(8192, 64)  # 704,643,072 + 32,833,536
    assert a == 737_476_608
    # (85,520,809,984 - 16,060,522,496 - 737,476,608 - 0.6e9) x 0.8 = 68,122,810,880 x 0.8
    budget = (CAP - W8B - a - 0.6e9) * 0.8
    assert budget == pytest.approx(54_498_248_704, abs=1)
    assert p.kv_budget_bytes_per_gpu == pytest.approx(budget, rel=1e-12)


def test_overhead_grows_only_past_one_gpu_of_tp(catalog):
    """The NCCL buffers come with a TP group: pp alone adds none (vLLM logged 0.07 GiB of
    non-torch memory at PP2, below its TP1 0.27 GiB)."""
    p_pp = plan(catalog, "vllm", pp=2)
    assert p_pp.runtime_overhead_bytes_per_gpu == 1.4e9


@pytest.mark.parametrize(
    "fw_id", sorted(RULES) + ["mlc-llm", "pytorch", "pytorch-naive", "exllama"]
)
def test_deepseek_v3_fp8_on_8_h100_does_not_fit(catalog, fw_id):
    """Issue 29: DeepSeek-V3 fp8 at TP8 on H100 (85.5 GB per card) does not fit under any engine:
    the weights alone are 84.3 GB per GPU, and every engine sets aside more than the 1.2 GB
    left (a memory fraction below 1, or at 1.0 the CUDA context and, for llama.cpp, the --fit
    margin)."""
    p = plan_memory("deepseek-v3", "nvidia-h100-sxm", "fp8", tp=8, framework=fw_id, catalog=catalog)
    assert 84.2e9 < p.weight_bytes_per_gpu < 84.4e9
    assert not p.fits and p.max_concurrent_sequences == 0
    assert "does not fit" in p.reason


def test_cli_memory_deepseek_v3_tgi_says_it_does_not_fit(capsys):
    """The command of issue 29, which said 'fits' at utilization 1.0 with no overhead."""
    argv = ["memory", "--model", "deepseek-v3", "--gpu", "nvidia-h100-sxm", "--precision",
            "fp8", "--tp", "8", "--framework", "tgi", "--format", "json"]  # fmt: skip
    code = cli.main(argv)
    out, err = capsys.readouterr()
    d = json.loads(out)
    assert code == 0 and err == ""
    assert d["fits"] is False and d["memory_utilization"] == 0.9
    # 0.6 GB context + 2.0 GB NCCL buffers at tp = 8
    assert d["runtime_overhead_bytes_per_gpu"] == pytest.approx(2.6e9, rel=1e-12)
    assert "no source" not in " ".join(d["assumptions"])
