"""Workload presets and bundled length datasets (OpenOrca, MLPerf DeepSeek-R1), plus scenario
path resolution."""

from __future__ import annotations

from typing import Any

from planner.workload.lengths import QuantileLength

_Z90 = 1.2815515655446004  # standard normal quantiles

# --------------------------------------------------------------------------- datasets
# MLPerf Inference Llama-2-70B dataset: OpenOrca, 24,576-sample performance set
# (open_orca_gpt4_tokenized_llama.sampled_24576.pkl, Llama-2 tokenizer); loadgen draws the
# Server / Interactive queries from all of it. Prompts: quantiles of ``tok_input_length`` at
# OPENORCA_PROBS (numpy "inverted_cdf") over all 24,576 samples of the per-sample length table
# github:openshift-psap/performance-dashboard mlperf-data/summaries/llama2-70b-99.csv @7cd1065
# (mean 222.3, median 152, p90 519, max 1,021). The set is ordered by OpenOrca subset (mean
# prompt ~120, ~188, ~275, ~306 tokens by quarter); until 2026-12-07 these quantiles were of
# its first 2,162 rows only (mean 119.1), the short-prompt quarter.
# Answers: quantiles of the tokens the submitted engines generated, not of the GPT-4 reference:
# loadgen's token_count of every completion in MLPerf v5.1's TEST06 compliance accuracy logs
# (github:mlcommons/inference_results_v5.1 @965182b0,
# closed/*/compliance/*/llama2-70b-99/*/TEST06/accuracy/mlperf_log_accuracy.json: 11,390
# completions of 630 samples by 22 submitters; Cisco's six logs are cut short and skipped).
# Mean 290.0 tokens (the ~290 completed tokens per completed sample of the performance logs),
# 0.55 % under 20 tokens (the GPT-4 reference scaled to the same mean has 5.3 %); those
# completions' prompts average 226.6 tokens, the set's mean. scripts/openorca_lengths.py
# derives both tables.
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
    73,
    85,
    94,
    102,
    109,
    117,
    124,
    132,
    141,
    152,
    167,
    186,
    207,
    232,
    266,
    312,
    390,
    519,
    614,
    652,
    687,
    791,
    878,
    1021,
)
OPENORCA_GENERATED_QUANTILES = (
    11,
    56,
    96,
    117,
    138,
    160,
    177,
    198,
    216,
    233,
    254,
    277,
    299,
    323,
    347,
    376,
    411,
    461,
    533,
    649,
    746,
    821,
    922,
    1012,
    1025,
)
#: the ~290 completed tokens per completed sample of the performance logs (MLPerf v4.1 Server:
#: 29,715.28 tok/s / 101.87 samples/s = 291.7; v5.1 Interactive, Cisco H200: 19,621.88 / 67.01
#: = 292.8); the mean of OPENORCA_GENERATED_QUANTILES (290.0) is checked against it in tests
OPENORCA_GENERATED_MEAN_TOKENS = 290.0
#: the longest answer MLPerf's Llama-2-70B generation config allows [tokens]
OPENORCA_MAX_OUTPUT_TOKENS = 1024


def openorca_lengths() -> tuple[QuantileLength, QuantileLength]:
    """(prompt, answer) distributions of the MLPerf Llama-2-70B OpenOrca set: the prompts of
    all 24,576 samples, and the answers the MLPerf v5.1 submissions generated (see the
    sources above and in each distribution's ``source``)."""
    src = (
        "MLPerf Inference llama2-70b OpenOrca 24,576-sample set; prompt quantiles of all 24,576 "
        "samples of github:openshift-psap/performance-dashboard "
        "mlperf-data/summaries/llama2-70b-99.csv @7cd1065"
    )
    inp = QuantileLength(
        values=OPENORCA_INPUT_QUANTILES, probs=OPENORCA_PROBS, max_tokens=1024, source=src
    )
    out = QuantileLength(
        values=OPENORCA_GENERATED_QUANTILES,
        probs=OPENORCA_PROBS,
        max_tokens=OPENORCA_MAX_OUTPUT_TOKENS,
        source=(
            "MLPerf Inference llama2-70b OpenOrca: tokens generated in 11,390 completions of the "
            "v5.1 TEST06 compliance accuracy logs (github:mlcommons/inference_results_v5.1 "
            "@965182b0, 22 submitters; scripts/openorca_lengths.py)"
        ),
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
            "openorca_lengths: all 24,576 prompts; answers as MLPerf v5.1 engines generated them)"
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
