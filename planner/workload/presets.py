"""Workload presets and bundled length datasets (OpenOrca, MLPerf DeepSeek-R1), plus scenario
path resolution."""

from __future__ import annotations

from typing import Any

from planner.workload.lengths import QuantileLength

_Z90 = 1.2815515655446004  # standard normal quantiles

# --------------------------------------------------------------------------- datasets
# MLPerf Inference Llama-2-70B dataset: OpenOrca, 24,576-sample performance set
# (open_orca_gpt4_tokenized_llama.sampled_24576.pkl, Llama-2 tokenizer). Quantiles of
# ``tok_input_length`` and of the GPT-4 reference ``tok_output_length`` at OPENORCA_PROBS over
# the first 2,162 samples of the per-sample length table in
# github:openshift-psap/performance-dashboard mlperf-data/summaries/llama2-70b-99.csv
# @7cd1065 (input mean 119.1, p90 153, p99 275, max 953; reference output mean 184.5).
OPENORCA_PROBS = (
    0.0,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.55,
    0.6,
    0.65,
    0.7,
    0.75,
    0.8,
    0.85,
    0.9,
    0.95,
    0.97,
    0.98,
    0.99,
    0.995,
    1.0,
)
OPENORCA_INPUT_QUANTILES = (
    48,
    72,
    80,
    87,
    92,
    96,
    101,
    105,
    108,
    112,
    115,
    118,
    122,
    125,
    129,
    133,
    138,
    143,
    153,
    174,
    209,
    231,
    275,
    331,
    953,
)
OPENORCA_REF_OUTPUT_QUANTILES = (
    3,
    23,
    49,
    65,
    77,
    88,
    99,
    113,
    129,
    146,
    164,
    183,
    202,
    218,
    237,
    259,
    284,
    313,
    351,
    403,
    450,
    488,
    544,
    575,
    707,
)
# Llama-2-70B-chat answers are longer than the GPT-4 references: MLPerf v4.1 Server logs give
# ~290 completed tokens per completed sample (e.g. 29,715.28 tok/s / 101.87 samples/s =
# 291.7; calibration.csv: output_tok_s_total / target_qps = 288-290 on every submitter).
# The reference shape is scaled to that mean (an assumption on the shape).
OPENORCA_GENERATED_MEAN_TOKENS = 290.0


def openorca_lengths() -> tuple[QuantileLength, QuantileLength]:
    """(prompt, answer) distributions of the MLPerf Llama-2-70B OpenOrca set (see source)."""
    src = (
        "MLPerf Inference llama2-70b OpenOrca 24,576-sample set; quantiles of 2,162 samples from "
        "github:openshift-psap/performance-dashboard mlperf-data/summaries/llama2-70b-99.csv @7cd1065"
    )
    inp = QuantileLength(
        values=OPENORCA_INPUT_QUANTILES, probs=OPENORCA_PROBS, max_tokens=1024, source=src
    )
    ref = QuantileLength(values=OPENORCA_REF_OUTPUT_QUANTILES, probs=OPENORCA_PROBS, source=src)
    scale = OPENORCA_GENERATED_MEAN_TOKENS / ref.mean_tokens()
    out = QuantileLength(
        values=OPENORCA_REF_OUTPUT_QUANTILES,
        probs=OPENORCA_PROBS,
        scale=scale,
        max_tokens=1024,
        source=src
        + "; answers scaled to the ~290 generated tokens/sample of MLPerf v4.1 Server logs",
    )
    return inp, out


# MLPerf Inference DeepSeek-R1 dataset: the 4,388-sample performance set
# (mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl: AIME, MATH500, GPQA, MMLU-Pro, LiveCodeBench;
# DeepSeek-R1 tokenizer). Quantiles at OPENORCA_PROBS (numpy "inverted_cdf") of
# ``tok_input_len`` and of the reference run's ``tok_ref_output_len`` over all 4,388 samples of
# github:openshift-psap/performance-dashboard mlperf-data/summaries/deepseek-r1.csv @7cd1065
# (input mean 803.8, median 901.5, max 3,140; reference output mean 4,043.4, median 2,194,
# 83 samples at the 32,768-token cap of the reference run). MLPerf caps generation at 20,000
# tokens (mlcommons/inference language/deepseek-r1/utils/backend_registry.py MAX_OSL =
# 20 * 1000; MAX_ISL = 3136 plus 4 template tokens); capped there, the samples' mean is
# 3,886.2274 tokens, the "mean-output-tok-len": 3886.2274 that the reference README prints for
# its 4,388-sample evaluation (language/deepseek-r1/README.md, "Reference Evals"). Submitters'
# runs generate 3,650-3,828 tokens per sample (public_mlperf_moe.csv notes: tokens/s over
# samples/s), 2-6 % fewer; the reference shape is kept unscaled.
DEEPSEEK_R1_INPUT_QUANTILES = (
    52,
    100,
    124,
    155,
    231,
    479,
    759,
    846,
    865,
    884,
    901,
    922,
    952,
    990,
    1037,
    1088,
    1141,
    1212,
    1281,
    1312,
    1334,
    1359,
    1432,
    1480,
    3140,
)
DEEPSEEK_R1_REF_OUTPUT_QUANTILES = (
    209,
    502,
    626,
    736,
    867,
    996,
    1157,
    1363,
    1598,
    1883,
    2192,
    2607,
    3038,
    3583,
    4217,
    4912,
    5950,
    7419,
    9490,
    13859,
    17271,
    19261,
    32768,
    32768,
    32768,
)
#: MLPerf's generation cap for DeepSeek-R1 (reference backend_registry.py MAX_OSL)
DEEPSEEK_R1_MAX_OUTPUT_TOKENS = 20_000


def mlperf_deepseek_r1_lengths() -> tuple[QuantileLength, QuantileLength]:
    """(prompt, answer) distributions of the MLPerf DeepSeek-R1 performance set (see source).

    Answers are the reference run's lengths capped at MLPerf's 20,000-token limit.
    """
    src = (
        "MLPerf Inference DeepSeek-R1 4,388-sample set; quantiles of all samples from "
        "github:openshift-psap/performance-dashboard mlperf-data/summaries/deepseek-r1.csv @7cd1065"
    )
    inp = QuantileLength(
        values=DEEPSEEK_R1_INPUT_QUANTILES, probs=OPENORCA_PROBS, max_tokens=3140, source=src
    )
    out = QuantileLength(
        values=DEEPSEEK_R1_REF_OUTPUT_QUANTILES,
        probs=OPENORCA_PROBS,
        max_tokens=DEEPSEEK_R1_MAX_OUTPUT_TOKENS,
        source=src + "; reference answers capped at MLPerf's 20,000 generated tokens",
    )
    return inp, out


# --------------------------------------------------------------------------- presets
def _preset_batch() -> dict[str, Any]:
    inp, out = openorca_lengths()
    return {
        "name": "offline batch (MLPerf OpenOrca shape)",
        "description": "batch jobs queued at once: instruction-following prompts, medium answers",
        "source": (
            "prompt/answer shape of the MLPerf Inference Llama-2-70B OpenOrca set (workload."
            "openorca_lengths: 2,162-sample quantiles; answers scaled to ~290 generated tokens)"
        ),
        "traffic": {"mean_rps": 10.0, "arrival": "poisson"},
        "input_tokens": inp.model_dump(),
        "output_tokens": out.model_dump(),
        "offline": True,
    }


PRESETS: dict[str, dict[str, Any]] = {
    "chat": {
        "name": "chat",
        "description": "online assistant: short-to-medium prompts, answers of a few hundred tokens",
        "source": (
            "means from ShareGPT as used in the vLLM paper (Kwon et al., SOSP 2023, sec. 6.1: "
            "mean input 161.31, mean output 337.99 tokens) plus a 200-token shared system prompt (assumed); "
            "lognormal spread (p90 ~2.1 x mean) and the caps (prompt 4,096, answer 2,048 tokens, "
            "like the max_tokens of a chat API) are assumptions"
        ),
        "traffic": {"mean_rps": 5.0, "arrival": "poisson"},
        "input_tokens": {"kind": "lognormal", "mean": 361.0, "p90": 750.0, "max_tokens": 4096},
        "output_tokens": {"kind": "lognormal", "mean": 338.0, "p90": 700.0, "max_tokens": 2048},
        "prefix": {"shared_prefix_tokens": 200},
    },
    "rag": {
        "name": "rag",
        "description": "retrieval-augmented answers / long documents: long prompts, short answers",
        "source": (
            "derived, not measured: 5 retrieved chunks x ~700 tokens + question and instructions "
            "(~4,000 prompt tokens, lognormal p90 7,000), answers ~250 tokens; the 2048/128 and "
            "longer-ISL shapes of TensorRT-LLM perf-overview are the measured neighbours; "
            "a 500-token shared instruction prefix assumed"
        ),
        "traffic": {"mean_rps": 2.0, "arrival": "poisson"},
        "input_tokens": {"kind": "lognormal", "mean": 4000.0, "p90": 7000.0},
        "output_tokens": {"kind": "lognormal", "mean": 250.0, "p90": 500.0},
        "prefix": {"shared_prefix_tokens": 500},
    },
    "code": {
        "name": "code completion",
        "description": "IDE completion: long file context, very short completions, bursty",
        "source": (
            "medians of the Azure LLM inference 'coding' trace in Splitwise (Patel et al., ISCA 2024): "
            "prompt ~1,500 tokens, output ~13 tokens; lognormal spread (p90 = 2.5 x / 3 x median), the caps "
            "(8,192-token context window, 256-token completions) and Gamma arrivals with cv 2 are "
            "assumptions; 30% prefix-cache hits for repeated file context assumed"
        ),
        "traffic": {"mean_rps": 10.0, "arrival": "gamma", "cv": 2.0},
        "input_tokens": {"kind": "lognormal", "median": 1500.0, "p90": 3750.0, "max_tokens": 8192},
        "output_tokens": {"kind": "lognormal", "median": 13.0, "p90": 40.0, "max_tokens": 256},
        "prefix": {"cache_hit_rate": 0.3},
    },
    "summarization": {
        "name": "summarization",
        "description": "document summaries: ~2k-token inputs, ~128-token outputs",
        "source": (
            "the ISL/OSL 2048/128 shape of the TensorRT-LLM perf-overview tables (summarization-like); "
            "normal spread with 20% / 25% relative std is an assumption"
        ),
        "traffic": {"mean_rps": 2.0, "arrival": "poisson"},
        "input_tokens": {"kind": "normal", "mean": 2048.0, "std": 400.0, "min_tokens": 64},
        "output_tokens": {"kind": "normal", "mean": 128.0, "std": 32.0, "min_tokens": 8},
    },
    "batch": _preset_batch(),
}
