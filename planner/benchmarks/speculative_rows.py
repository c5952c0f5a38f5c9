"""Benchmark rows measured with speculative decoding: method and K from their notes, the
same rows without it, and the predicted vs measured speed-up.

Rows tagged ``layout_unsupported: speculative decoding (...)`` stay unfitted and unpredicted
by :class:`planner.benchmarks.predict.Predictor`; this module reads their method (and K
where the notes print it, e.g. SGLang's ``3 steps, topk 1, 4 draft tokens``: K = 3), pairs
each with the rows of the same hardware, engine, precision, layout, lengths and concurrency
measured without speculative decoding (:func:`spec_pairs`), and predicts both with the
serving simulator (:func:`predicted_ratio`), the speculative one with a given acceptance
length. The measured ratio of a pair is the median over its baselines (InferenceX re-runs
a configuration on several dates).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import median
from typing import Any

from planner.benchmarks.schema import (
    cell,
    engine_settings,
    layout_unsupported,
    number,
    workload_mismatch,
)
from planner.benchmarks.serving_rows import predict_serving_row
from planner.catalog.catalog import Catalog
from planner.catalog.efficiency import EfficiencyParams
from planner.catalog.speculative import chain_acceptance_length

__all__ = [
    "INFERENCEX_SPEC_MAX_RUNNING",
    "INFERENCEX_SPEC_TOKENS",
    "SGLANG_PRINTED_CAP_ON",
    "SGLANG_SPEC_DEFAULT_MAX_RUNNING",
    "SpecPair",
    "chain_acceptance_length",
    "held_out_ratios",
    "predict_spec_row",
    "predicted_ratio",
    "row_workload",
    "spec_of_row",
    "spec_pairs",
]

_DRAFT_TOKENS = re.compile(r"(\d+) draft tokens")

#: K of InferenceX's single-node DeepSeek-R1 MTP runs, whose notes do not print it:
#: SemiAnalysisAI/InferenceX benchmarks/single_node/fixed_seq_len/dsr1_*_mtp.sh @ 843c6254f
#: (SGLang --speculative-num-steps / --speculative-num-draft-tokens, chain topk 1;
#: TensorRT-LLM num_nextn_predict_layers: 3, or 1 with attention DP): (hardware, framework,
#: attention DP) -> K
INFERENCEX_SPEC_TOKENS = {
    ("amd-mi325x", "sglang", False): 3,  # dsr1_fp8_mi325x_mtp.sh: steps 3, draft tokens 4
    ("amd-mi355x", "sglang", False): 3,  # dsr1_fp8/fp4_mi355x_mtp.sh: steps 3, draft tokens 4
    ("nvidia-h200-sxm", "sglang", False): 2,  # dsr1_fp8_h200_mtp.sh: steps 2, draft tokens 3
    ("nvidia-b200", "sglang", False): 2,  # dsr1_fp8_b200_mtp.sh (the template of H200's)
    ("nvidia-b200", "trtllm", False): 3,  # dsr1_fp8_b200_trt_mtp.sh: MTP=3
    ("nvidia-b200", "trtllm", True): 1,  # ... MTP=1 with DP attention
    # the same scripts at the last commits on or before the runs of 2026-04-17, 05-18 and
    # 05-22 (dd9c285b3, f3dbc40c9, d4948f993; benchmarks/single_node/) and @ 843c6254f:
    ("nvidia-b300", "sglang", False): 2,  # dsr1_fp8_b300_mtp.sh: steps 2, draft tokens 3
    ("nvidia-h200-sxm", "trtllm", False): 3,  # dsr1_fp8_h200_trt_mtp.sh: MTP=3
    ("nvidia-h200-sxm", "trtllm", True): 1,  # ... MTP=1 with DP attention
}
#: the running-request cap of InferenceX's single-node SGLang MTP runs whose script leaves
#: ``--max-running-requests`` unset: SGLang then resets it to 48 for EAGLE / NEXTN / MTP
#: ("Max running requests is reset to 48 for speculative decoding. You can override this by
#: explicitly setting --max-running-requests.": sglang 0.5.12 wheel from PyPI,
#: sglang/srt/server_args.py ServerArgs._handle_speculative_decoding, line 3742; the runs
#: used image lmsysorg/sglang:v0.5.12-rocm700-*). Every version of these two scripts
#: (SemiAnalysisAI/InferenceX benchmarks/single_node/dsr1_fp8_mi325x_mtp.sh @ 8283444dd,
#: 2026-05-18; dsr1_fp4_mi355x_mtp.sh @ 8a16828e6, 2026-05-20; both moved to fixed_seq_len/
#: @ 1b234994f unchanged) passes no --max-running-requests; the other SGLang MTP scripts set
#: it (H200 512 / 256, B200 / B300 the concurrency or 512, MI355X fp8 the concurrency from
#: its first version c178e2822): (hardware, precision, framework) -> running requests
INFERENCEX_SPEC_MAX_RUNNING = {
    ("amd-mi325x", "fp8", "sglang"): 48,
    ("amd-mi355x", "mxfp4", "sglang"): 48,
}
#: SGLang's running-request cap when EAGLE / NEXTN (DeepSeek MTP) is on and
#: ``--max-running-requests`` is not passed: "if self.max_running_requests is None:
#: self.max_running_requests = 48" (sglang 0.5.0rc0 wheel from PyPI,
#: sglang/srt/server_args.py ServerArgs.__post_init__, lines 620-627, "NEXTN shares the same
#: implementation of EAGLE"; the same default, with its "Max running requests is reset to 48
#: for speculative decoding" warning, in 0.5.12: :data:`INFERENCEX_SPEC_MAX_RUNNING`)
SGLANG_SPEC_DEFAULT_MAX_RUNNING = 48
#: whether :func:`spec_max_running` caps a SGLang speculative row of any source whose notes
#: print the server command (``sglang.launch_server``) without ``--max-running-requests``
#: (today the AMD ROCm blog's MI300X MTP rows, SGLang 0.5.0rc0) at
#: :data:`SGLANG_SPEC_DEFAULT_MAX_RUNNING`
SGLANG_PRINTED_CAP_ON = True
#: the KV-cache precision of InferenceX's single-node DeepSeek-R1 MTP runs, whose rows carry
#: none (``kv_precision`` empty): every version of each launch script in
#: SemiAnalysisAI/InferenceX benchmarks/single_node/[fixed_seq_len/]dsr1_*_mtp.sh up to
#: @ 843c6254f that predates or equals the rows' run dates passes it (SGLang
#: ``--kv-cache-dtype fp8_e4m3``; TensorRT-LLM ``kv_cache_config: dtype: fp8``):
#: dsr1_fp8_mi325x_mtp.sh @ 8283444dd; dsr1_fp8_mi355x_mtp.sh @ c178e2822;
#: dsr1_fp4_mi355x_mtp.sh @ 8a16828e6; dsr1_fp8_b200_mtp.sh @ e62c6acdf .. 1b234994f;
#: dsr1_fp4_b200_mtp.sh @ 292726bb8; dsr1_fp{8,4}_b200_trt_mtp.sh @ b0c4ed21b .. 1b234994f;
#: dsr1_fp8_b300_mtp.sh @ f8543f9d1 .. 1b234994f; dsr1_fp8_h200_trt_mtp.sh @ b0c4ed21b ..
#: 1b234994f. dsr1_fp8_h200_mtp.sh (cd5f6dd26, 1b234994f) passes none: SGLang's default, the
#: model's 16-bit dtype, so no entry: (hardware, precision, framework) -> KV precision
INFERENCEX_SPEC_KV_PRECISION = {
    ("amd-mi325x", "fp8", "sglang"): "fp8",
    ("amd-mi355x", "fp8", "sglang"): "fp8",
    ("amd-mi355x", "mxfp4", "sglang"): "fp8",
    ("nvidia-b200", "fp8", "sglang"): "fp8",
    ("nvidia-b200", "nvfp4", "sglang"): "fp8",
    ("nvidia-b200", "fp8", "trtllm"): "fp8",
    ("nvidia-b200", "nvfp4", "trtllm"): "fp8",
    ("nvidia-b300", "fp8", "sglang"): "fp8",
    ("nvidia-h200-sxm", "fp8", "trtllm"): "fp8",
}
#: whether :func:`predict_spec_row` fills a single-node InferenceX MTP row's empty
#: ``kv_precision`` from :data:`INFERENCEX_SPEC_KV_PRECISION` (the run's launch script)
SPEC_ROW_KV_FROM_SCRIPT = False
_STEPS = re.compile(r"(\d+) steps")
_GRAPH_MAX = re.compile(r"--cuda-graph-max-bs[ =](\d+)")


def spec_of_row(row: Mapping[str, Any]) -> tuple[str, int | None] | None:
    """(method, K or None) of a row measured with speculative decoding, None otherwise (and
    None for a row tagged ``workload_mismatch``: it is never predicted nor paired)."""
    notes = cell(row, "notes") or ""
    if workload_mismatch(notes) is not None:
        return None
    why = layout_unsupported(notes) or ""
    if "speculative decoding" not in why and "spec 'mtp'" not in notes:
        return None
    low = why.lower()
    method = "eagle3" if "eagle3" in low or "eagle-3" in low else "mtp"
    k = None
    if m := _DRAFT_TOKENS.search(why):  # SGLang chain: draft tokens = steps + 1
        k = int(m.group(1)) - 1
    elif m := _STEPS.search(why):
        k = int(m.group(1))
    elif "InferenceX" in (cell(row, "source") or "") and "multi-node" not in notes:
        dpa = "DP-attention=true" in notes
        k = INFERENCEX_SPEC_TOKENS.get((cell(row, "hardware"), cell(row, "framework"), dpa))
    return method, k


def row_workload(row: Mapping[str, Any]) -> str | None:
    """The workload kind of a row's prompts (``planner.catalog.speculative.WORKLOADS``):
    ``random`` for a random-token dataset (InferenceX's speculative runs wrap it in the
    chat template: ``--use-chat-template`` in every ``dsr1_*_mtp.sh``, InferenceX PR #649),
    ``random-raw`` where the notes say the template was off; ``chat`` for SGLang's own
    client (``sglang.bench_serving --dataset-name random``), whose ``random`` dataset is
    ShareGPT conversations cut or repeated to the length (``random_sample`` is true for
    ``random``; random token ids are its ``random-ids``: sglang
    python/sglang/benchmark/datasets/random.py, ``sample_random_requests``); None (natural
    text or not named) otherwise."""
    notes = (cell(row, "notes") or "").lower()
    if not any(t in notes for t in _RANDOM):
        return None
    if "sglang.bench_serving" in notes and "random-ids" not in notes:
        return "chat"
    return "random-raw" if "without chat template" in notes else "random"


_RANDOM = ("random dataset", "dataset-name random", "random_input_len", "--random-input-len")


def _layout_key(notes: str) -> tuple:
    tp = re.search(r"TP=(\d+)", notes)
    ep = re.search(r"EP=(\d+)", notes)
    dpa = "DP-attention=true" in notes or (
        "attention data-parallel" in notes and "no attention data-parallel" not in notes
    )
    isl = re.search(r"nominal input (\d+)", notes) or re.search(r"random_input_len=(\d+)", notes)
    osl = re.search(r"output (\d+) tokens", notes) or re.search(r"random_output_len=(\d+)", notes)
    g = lambda x: int(x.group(1)) if x else None  # noqa: E731
    return g(tp), g(ep), dpa, g(isl), g(osl), "multi-node" in notes


def _key(row: Mapping[str, Any]) -> tuple:
    """What a speculative row and its baseline share: the source, deployment, layout (columns
    and notes), workload (mode, rate, concurrency, lengths) and metric."""
    return (
        cell(row, "source"),
        cell(row, "mode"),
        cell(row, "request_rate"),
        cell(row, "tp"),
        cell(row, "ep"),
        cell(row, "attention_dp"),
        cell(row, "hardware"),
        cell(row, "framework"),
        cell(row, "precision"),
        cell(row, "model"),
        number(row, "n_gpus"),
        number(row, "concurrency"),
        number(row, "isl"),
        number(row, "osl"),
        cell(row, "metric"),
        *_layout_key(cell(row, "notes") or ""),
    )


def spec_max_running(row: Mapping[str, Any]) -> int | None:
    """The engine's running-request cap of a speculative row whose notes state none: an
    InferenceX single-node run (:data:`INFERENCEX_SPEC_MAX_RUNNING`), or a SGLang run whose
    notes print its ``sglang.launch_server`` command without ``--max-running-requests``
    (:data:`SGLANG_SPEC_DEFAULT_MAX_RUNNING`; :data:`SGLANG_PRINTED_CAP_ON`); None
    otherwise."""
    notes = cell(row, "notes") or ""
    if engine_settings(notes).max_num_seqs is not None:
        return None
    if (
        SGLANG_PRINTED_CAP_ON
        and cell(row, "framework") == "sglang"
        and "sglang.launch_server" in notes
        and "--max-running-requests" not in notes
        and "multi-node" not in notes
        and spec_of_row(row) is not None
    ):
        return SGLANG_SPEC_DEFAULT_MAX_RUNNING
    if "InferenceX" not in (cell(row, "source") or "") or "multi-node" in notes:
        return None
    key = (cell(row, "hardware"), cell(row, "precision"), cell(row, "framework"))
    return INFERENCEX_SPEC_MAX_RUNNING.get(key)


def spec_row_kv_precision(row: Mapping[str, Any]) -> Any:
    """The KV-cache precision to simulate a speculative row with: its own ``kv_precision``
    where given; else, with :data:`SPEC_ROW_KV_FROM_SCRIPT` on, its InferenceX single-node
    launch script's (:data:`INFERENCEX_SPEC_KV_PRECISION`); else the empty cell."""
    own = cell(row, "kv_precision")
    if own or not SPEC_ROW_KV_FROM_SCRIPT:
        return row.get("kv_precision")
    notes = cell(row, "notes") or ""
    if "InferenceX" not in (cell(row, "source") or "") or "multi-node" in notes:
        return row.get("kv_precision")
    key = (cell(row, "hardware"), cell(row, "precision"), cell(row, "framework"))
    return INFERENCEX_SPEC_KV_PRECISION.get(key, row.get("kv_precision"))


def _capped(sim_row: dict[str, Any], spec_row: Mapping[str, Any]) -> dict[str, Any]:
    """``sim_row`` (the row simulated with speculative decoding) with the running-request
    cap of ``spec_row``'s engine as a ``max_num_seqs`` tag, where one applies."""
    cap = spec_max_running(spec_row)
    if cap is None or engine_settings(cell(sim_row, "notes") or "").max_num_seqs is not None:
        return sim_row
    note = f"; max_num_seqs={cap} (SGLang's running-request cap under speculative decoding)"
    return {**sim_row, "notes": (cell(sim_row, "notes") or "") + note}


def graph_max_of_row(row: Mapping[str, Any]) -> int | None:
    """SGLang's ``--cuda-graph-max-bs`` of a row (its notes), None when not given."""
    m = _GRAPH_MAX.search(cell(row, "notes") or "")
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class SpecPair:
    """A row measured with speculative decoding and its baselines (same key, no spec)."""

    spec_row: dict[str, Any]
    base_rows: tuple[dict[str, Any], ...]
    method: str
    spec_tokens: int | None

    @property
    def measured_ratio(self) -> float:
        """Speculative value / median baseline value (a speed: > 1 is faster)."""
        v = float(cell(self.spec_row, "value"))
        return v / median(float(cell(r, "value")) for r in self.base_rows)

    @property
    def concurrency(self) -> float | None:
        return number(self.spec_row, "concurrency")


def spec_pairs(rows: Iterable[Mapping[str, Any]]) -> list[SpecPair]:
    """Pair every speculative row with the rows of the same key measured without it."""
    rows = [dict(r) for r in rows]
    spec = [(r, spec_of_row(r)) for r in rows]
    base: dict[tuple, list[dict[str, Any]]] = {}
    for r, s in spec:
        notes = cell(r, "notes") or ""
        if s is None and not layout_unsupported(notes) and workload_mismatch(notes) is None:
            base.setdefault(_key(r), []).append(r)
    out = []
    for r, s in spec:
        if s is not None and _key(r) in base:
            out.append(SpecPair(r, tuple(base[_key(r)]), s[0], s[1]))
    return out


def predicted_ratio(
    pair: SpecPair,
    acceptance_length: float,
    catalog: Catalog,
    params: EfficiencyParams,
    spec_tokens: int | None = None,
) -> tuple[float | None, str]:
    """(predicted speculative / baseline ratio of the pair's metric, reason when None).

    Both are simulated from the pair's first baseline row (its notes carry the client's
    length distribution and the engine settings), the speculative one with
    ``acceptance_length`` and K = the speculative row's own (from its notes), else
    ``spec_tokens``: the ratio isolates speculative decoding. The speculative run keeps its
    engine's running-request cap (:func:`spec_max_running`), which the baseline does not
    have."""
    k = spec_tokens or pair.spec_tokens
    if k is None:
        return None, "K (draft tokens) not in the row's notes and none given"
    brow = pair.base_rows[0]  # its notes carry the client's lengths and engine settings
    srow = {
        **brow,
        "_spec_method": pair.method,
        "_spec_tokens": int(k),
        "_acceptance_length": float(acceptance_length),
        "_spec_graph_max_seqs": graph_max_of_row(pair.spec_row),
    }
    srow = _capped(srow, pair.spec_row)
    v1, why1 = predict_serving_row(srow, catalog, params)
    v0, why0 = predict_serving_row(brow, catalog, params)
    if v1 is None or v0 is None:
        return None, why1 or why0
    return v1 / v0, ""


#: per-position acceptance probabilities the held-out fit tries
RATE_GRID = tuple(round(0.30 + 0.025 * i, 3) for i in range(27))  # 0.30 .. 0.95


def held_out_ratios(
    pairs: list[SpecPair],
    catalog: Catalog,
    params_of,
    fit_max_concurrency: float = 16,
) -> list[dict[str, Any]]:
    """Leave-one-hardware-out check of the speed-up's shape over concurrency.

    Acceptance is a property of the model, drafter and data, not of the GPU, and runs differ
    in K: the fitted quantity is the per-position acceptance ``rate`` of the chain (grid
    :data:`RATE_GRID`, least median absolute log error of the ratio), giving each pair
    ``AL = chain_acceptance_length(rate, K)``. For each hardware the rate is fitted on the
    OTHER hardware's pairs at concurrency <= ``fit_max_concurrency``, then every pair of the
    held-out hardware is predicted with it. ``params_of``: row -> EfficiencyParams. Result
    rows: id, hardware, precision, concurrency, K, measured and predicted ratio, the rate and
    AL used, and the error ``predicted / measured - 1``."""
    curves: dict[str, dict[float, float]] = {}
    for p in pairs:
        if p.spec_tokens is None:
            continue
        params = params_of(p.base_rows[0])
        c = {}
        for rate in RATE_GRID:
            al = chain_acceptance_length(rate, p.spec_tokens)
            v, _ = predicted_ratio(p, al, catalog, params)
            if v is None:
                break
            c[rate] = v
        if len(c) == len(RATE_GRID):
            curves[cell(p.spec_row, "id")] = c
    ok = [p for p in pairs if cell(p.spec_row, "id") in curves]
    out = []
    for hw in sorted({cell(p.spec_row, "hardware") for p in ok}):
        train = [
            p
            for p in ok
            if cell(p.spec_row, "hardware") != hw and (p.concurrency or 0) <= fit_max_concurrency
        ]
        if not train:
            continue

        def loss(rate: float, train: list[SpecPair] = train) -> float:
            return median(
                abs(math.log(curves[cell(p.spec_row, "id")][rate] / p.measured_ratio))
                for p in train
            )

        rate = min(RATE_GRID, key=loss)
        for p in ok:
            if cell(p.spec_row, "hardware") != hw:
                continue
            pred = curves[cell(p.spec_row, "id")][rate]
            out.append(
                {
                    "id": cell(p.spec_row, "id"),
                    "hardware": hw,
                    "precision": cell(p.spec_row, "precision"),
                    "concurrency": p.concurrency,
                    "spec_tokens": p.spec_tokens,
                    "measured_ratio": p.measured_ratio,
                    "predicted_ratio": pred,
                    "rate": rate,
                    "acceptance_length": chain_acceptance_length(rate, p.spec_tokens),
                    "error": pred / p.measured_ratio - 1.0,
                }
            )
    return out


_NOMINAL = re.compile(
    r"nominal input (\d+) / output (\d+) tokens, range ratio ([0-9.]+)", re.IGNORECASE
)


def predict_spec_row(
    row: Mapping[str, Any],
    acceptance_length: float,
    catalog: Catalog,
    params: EfficiencyParams,
) -> tuple[float | None, str]:
    """Predict a speculative row's own value (its metric and unit) with ``acceptance_length``
    and K from :func:`spec_of_row`. InferenceX's "nominal input I / output O tokens, range
    ratio r" is read as the client's ``random_input_len`` / ``random_output_len`` /
    ``random_range_ratio``."""
    spec = spec_of_row(row)
    if spec is None or spec[1] is None:
        return None, "not a speculative row with a known K"
    notes = cell(row, "notes") or ""
    if m := _NOMINAL.search(notes):
        notes += (
            "; client: InferenceX utils/bench_serving/benchmark_serving.py closed loop; "
            f"random_input_len={m.group(1)}; random_output_len={m.group(2)}; "
            f"random_range_ratio={m.group(3)}"
        )
    r = {
        **row,
        "kv_precision": spec_row_kv_precision(row),
        "notes": notes,
        "_spec_method": spec[0],
        "_spec_tokens": spec[1],
        "_acceptance_length": float(acceptance_length),
        "_spec_graph_max_seqs": graph_max_of_row(row),
    }
    return predict_serving_row(_capped(r, row), catalog, params)
