"""MLPerf Llama-2-70B Server and Interactive (tight TPOT, issue 32): the per-GPU throughput
the planner predicts at each scenario's P99 TTFT / TPOT limits must be within 15% of the
results, and the per-GPU order right, for H100, H200, B200, MI300X, MI325X and MI355X.

Marked xfail (strict) where the bundled profile misses, with the reason; a strict mark
fails as soon as the case is met, so the mark must then go. The decomposition of each miss
is in changes/mlserver.md (issue 32, item 3)."""

from __future__ import annotations

import pandas as pd
import pytest

from planner.benchmarks.io import load_measurements
from planner.benchmarks.mlperf_latency import (
    CONSTRAINTS_S,
    GPUS,
    MAX_UTILIZATION,
    fit_sources,
    mlperf_latency_rows,
    offline_per_gpu,
    scenario_replica,
    stated_chunked_prefill,
    tight_tpot_newest,
    tight_tpot_pooled,
    tight_tpot_records,
    tight_tpot_rounds,
)
from planner.benchmarks.schema import engine_settings, memory_fraction_from_notes
from planner.calibration.accuracy import ordering_pairs
from planner.calibration.fit import public_files_default
from planner.catalog import load_catalog
from planner.catalog.profile import load_profile, resolve_params
from planner.errors import PlannerError


@pytest.fixture(scope="module")
def data():
    cat = load_catalog()
    return cat, load_measurements(public_files_default(), cat), load_profile()


@pytest.fixture(scope="module")
def records(data):
    cat, df, prof = data
    return tight_tpot_records(df, cat, prof)


@pytest.fixture(scope="module")
def table(records):
    return tight_tpot_pooled(records).set_index(["mode", "gpu"])


@pytest.fixture(scope="module")
def newest(records):
    return tight_tpot_newest(records).set_index(["mode", "gpu"])


def test_constraints_are_mlperfs():
    """llama2-70b: Server TTFT P99 2 s, TPOT P99 200 ms; Interactive 450 ms and 40 ms (the
    limits the rows' notes transcribe from the MLPerf rules; NVIDIA's MLPerf v5.0 blog:
    Llama 2 70B Interactive 'more stringent latency constraints of 450 ms TTFT and 40 ms
    TPOT')."""
    assert CONSTRAINTS_S == {"server": (2.0, 0.2), "interactive": (0.45, 0.04)}


def test_bundled_profile_never_saw_an_mlperf_row():
    """The table is out of sample: no node of the bundled profile (release nodes included)
    was fitted on an MLPerf source (the Llama-2-70B rows give no ISL/OSL, so they are not
    fittable; the DeepSeek-R1 rows are predicted, not fitted)."""
    assert not [s for s in fit_sources(load_profile()) if "MLPerf" in s]


def test_records_refuse_a_profile_fitted_on_their_source(data):
    """A profile one of whose nodes holds a row's source must not predict that row."""
    cat, df, prof = data
    n0 = prof.nodes[0]
    leaky = prof.model_copy(
        update={
            "nodes": (
                n0.model_copy(update={"sources": (*n0.sources, "MLPerf Inference v4.1")}),
                *prof.nodes[1:],
            )
        }  # fmt: skip
    )
    rows = mlperf_latency_rows(df)
    one = df.loc[rows.index[rows["source"] == "MLPerf Inference v4.1"][:1]]
    with pytest.raises(PlannerError, match="MLPerf Inference v4.1"):
        tight_tpot_records(one, cat, leaky)


def test_rounds_table_hand_derived():
    """Round 'server v9': GPU A has two systems at 1,000 and 1,100 tok/s per GPU (median
    1,050), both predicted 1,200; B one system at 1,100, predicted 1,000. Measured ranks B 1,
    A 2; predicted A 1, B 2. Errors: A 1,200 / 1,050 - 1 = +14.3%, B 1,000 / 1,100 - 1 =
    -9.1%. The pair is reversed, but B's only system (1,100) is not above A's fastest
    (1,100): the round's systems do not separate them (ranges_overlap). Interactive rows of
    the same round are ranked apart."""
    recs = pd.DataFrame(
        [
            {"mode": m, "gpu": g, "round": "v9", "measured": x, "predicted": p}
            for m, g, x, p in [("server", "A", 1000.0, 1200.0), ("server", "A", 1100.0, 1200.0),
                               ("server", "B", 1100.0, 1000.0),
                               ("interactive", "A", 500.0, 100.0)]
        ]
    )  # fmt: skip
    t = tight_tpot_rounds(recs).set_index(["round", "gpu"])
    a, b = t.loc[("server v9", "A")], t.loc[("server v9", "B")]
    assert (a.systems, a.measured_per_gpu, a.measured_min, a.measured_max) == (2, 1050, 1000, 1100)
    assert (b.measured_rank, a.measured_rank, a.predicted_rank, b.predicted_rank) == (1, 2, 1, 2)
    assert a.error_pct == pytest.approx(14.3, abs=0.05)
    assert b.error_pct == pytest.approx(-9.1, abs=0.05)
    assert t.loc[("interactive v9", "A")].measured_rank == 1
    p = ordering_pairs(t.reset_index())
    assert len(p) == 1 and (p.iloc[0].faster, p.iloc[0].slower) == ("B", "A")
    assert bool(p.iloc[0].ranges_overlap)


#: why the Server misses of the OpenOrca lengths of all 24,576 samples share one cause
_SERVER_LOW = (
    "with the OpenOrca prompts of all 24,576 samples (mean 222.6 tokens; 120 before, the "
    "first 2,162 samples only) a Server step carries ~0.77 prompt tokens per output token, "
    "and the answer is 0.95 x the simulated Offline throughput of the same deployment, "
    "which the fits put below the results: at the runs' own batches (Little's law) the "
    "planner's step is 12-17% long on H200 v5.1 Server (700-790 sequences) and 23-29% long "
    "on B200 (1,430-1,860); nothing of the MLPerf rows is fitted (docs/changes/2026-12-07e/mlpint.md)"
)
#: why every AMD case misses: the node behind all AMD MLPerf rows (tests/test_mlperf_fit_domain.py)
_AMD_DOMAIN = (
    "every AMD MLPerf row runs one engine per GPU (tensor_parallel_size 1, device_count 8 of "
    "AMD's harness YAMLs) and takes the vllm/amd-mi300x/fp8 dense node, fitted on 169 TP4 / "
    "TP8 Llama-3.1-70B / 405B rows and no TP1 row (MI325X and MI355X by transfer); at the "
    "runs' own batches (Little's law from their logs, scripts/mlperf_amd_step.py) its step is "
    "%s; its GEMM term for a whole Llama-2-70B layer at 128 tokens is 1.86x the harness's "
    "hipBLASLt timings (docs/changes/2026-12-07f/mlpamd.md)"
)
_MISSES = {
    ("server", "nvidia-b200"): "pooled -15.3% (10,498 vs 12,396 tok/s per GPU): " + _SERVER_LOW,
    (
        "server",
        "amd-mi355x",
    ): "-23.0% (v6.0, 9,454 vs 12,270 tok/s per GPU; -26.7% before the shard-width factor of the tenth pass): "
    + _AMD_DOMAIN
    % "71% long on MI355X v6.0 Server (1,831 sequences, 247 vs 144 ms; "
    "attention 91 ms at the node's kv_mem_eff 0.21)",
    (
        "interactive",
        "amd-mi325x",
    ): "predicted 52% low (1,095 vs 2,257 tok/s per GPU, v5.1; 60% low before the shard-width factor of the tenth pass; "
    "configs read right: vLLM V1, chunked prefill, max_num_seqs 3840, max_num_batched_tokens "
    "43008, fp8 KV from the harness's base config.yaml; the MLPERF_SCHED patches are V0 "
    "only): "
    + _AMD_DOMAIN
    % "56% long on MI325X v5.1 Interactive (82 sequences, 55 vs 35 ms)"
    + "; with the harness's GEMM timings (--harness-gemm, a what-if) the step is 11% short "
    "and the prediction +23.9%, H200 then below MI325X in v5.1",
}
CASES = [
    ("server", g)
    for g in ("nvidia-h100-sxm", "nvidia-h200-sxm", "nvidia-b200", "amd-mi300x", "amd-mi325x",
              "amd-mi355x")
] + [
    ("interactive", g)
    for g in ("nvidia-h200-sxm", "nvidia-b200", "amd-mi300x", "amd-mi325x", "amd-mi355x")
]  # fmt: skip


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=_MISSES[c]))
        if c in _MISSES
        else c
        for c in CASES
    ],
    ids=lambda c: f"{c[0]}-{c[1]}",
)
def test_per_gpu_throughput_within_15_pct(table, case):
    r = table.loc[case]
    assert abs(r.predicted_per_gpu / r.measured_per_gpu - 1) <= 0.15, r.to_dict()


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param(
            "server",
            marks=pytest.mark.xfail(
                strict=True,
                reason="pooled over rounds: H100 (11 of its 12 systems of v4.1, +7.3%) "
                "predicted above MI300X (v4.1 and v5.1, -15.8%); within each round and in each "
                "GPU's newest round the order is right (test_per_round_order, "
                "test_newest_round_order)",
            ),
        ),
        pytest.param(
            "interactive",
            marks=pytest.mark.xfail(
                strict=True,
                reason="B200 (8,140 tok/s per GPU, +9.2% pooled over v5.0 and v5.1) predicted "
                "above MI355X (8,089, -10.3%), 0.6% apart, where MI355X measures 21% above "
                "B200: the MI355X step at its run's batch is 23% long (attention 16.9 ms at "
                "the MI300X TP8 node's kv_mem_eff; docs/changes/2026-12-09/mlpint.md)",
            ),
        ),
    ],
)
def test_per_gpu_order(table, mode):
    t = table.loc[mode]
    assert list(t.measured_rank) == list(t.predicted_rank), t.to_string()


def test_measured_server_stays_below_offline(data):
    """The rule behind the Offline bound, on the results themselves: per round and GPU, the
    median Server result per GPU is 0.88-1.00 of the median Offline result (v4.1 H100
    2,666 / 3,017 = 0.884 the lowest; v5.0 B200 98,443.3 / 8 = 12,305.4 against the median
    of 98,858 / 8 = 12,357.25 and 12,269.3, i.e. 12,313.3: 0.9994 the highest), so never
    above it and never far below: MAX_UTILIZATION (0.95) lies inside that range."""
    cat, df, _ = data
    d = df[df["source"].astype(str).str.startswith("MLPerf Inference")
           & (df["model"] == "llama-2-70b") & (df["metric"] == "output_tok_s_total")
           & df["hardware"].isin(list(GPUS)) & df["mode"].isin(["offline", "server"])]  # fmt: skip
    d = d.assign(per_gpu=d["value"] / d["n_gpus"])
    m = d.groupby(["source", "hardware", "mode"])["per_gpu"].median().unstack().dropna()
    ratio = m["server"] / m["offline"]
    assert len(ratio) >= 8, ratio
    assert ratio.min() == pytest.approx(2665.9 / 3016.7, abs=0.002)
    assert ratio.max() == pytest.approx(12305.4 / 12313.3, abs=0.001)
    assert ((ratio > 0.85) & (ratio < 1.0)).all(), ratio
    assert ratio.min() < MAX_UTILIZATION < ratio.max()


def test_server_prediction_is_bounded_by_the_offline_one(records, data):
    """H200 v4.1 Server (TP1 assumed, as in NVIDIA's v4.1 Server config): the search's
    bound (95% of the analytic saturation rate) lies above the simulated Offline throughput
    of the same deployment, so the answer is 0.95 x that Offline throughput."""
    cat, _, prof = data
    r = records[(records["gpu"] == "nvidia-h200-sxm") & (records["mode"] == "server")
                & (records["round"] == "v4.1")]  # fmt: skip
    assert r["provenance"].str.contains("limited by the Offline throughput").all()
    params, _ = resolve_params("nvidia-h200-sxm", "trtllm", "fp8", catalog=cat, profile=prof,
                               family="dense")  # fmt: skip
    # the source names NVIDIA's harness: MAX_UTILIZATION admission (data/engine_policies.yaml)
    row = {"source": "MLPerf Inference v4.1", "hardware": "nvidia-h200-sxm", "n_gpus": "8",
           "tp": "1", "pp": "1", "model": "llama-2-70b", "precision": "fp8", "framework": "trtllm",
           "framework_version": "NVIDIA MLPerf harness (TensorRT-LLM)",  # its own loop
           "mode": "server", "metric": "output_tok_s_total",
           "notes": "dataset OpenOrca (24,576-sample perf set), variable ISL/OSL; "
                    "CUDA graphs off"}  # fmt: skip
    off = offline_per_gpu(row, cat, params)
    assert r["predicted"].median() == pytest.approx(MAX_UTILIZATION * off, rel=1e-6)


def test_every_round_has_its_gpus(records):
    """The rounds and GPUs the per-round check covers."""
    got = set(zip(records["mode"] + " " + records["round"], records["gpu"], strict=True))
    for need in [("server v4.1", "nvidia-b200"), ("server v4.1", "nvidia-h200-sxm"),
                 ("server v4.1", "nvidia-h100-sxm"), ("server v4.1", "amd-mi300x"),
                 ("server v5.0", "nvidia-b200"), ("server v5.0", "nvidia-h200-sxm"),
                 ("server v5.0", "nvidia-h100-sxm"), ("server v5.0", "amd-mi325x"),
                 ("interactive v5.0", "nvidia-b200"), ("interactive v5.0", "nvidia-h200-sxm"),
                 ("server v5.1", "nvidia-b200"), ("server v5.1", "amd-mi325x"),
                 ("server v5.1", "amd-mi300x"), ("interactive v5.1", "nvidia-b200"),
                 ("interactive v5.1", "amd-mi325x"), ("interactive v5.1", "amd-mi300x"),
                 ("server v5.1", "nvidia-h200-sxm"), ("interactive v5.1", "nvidia-h200-sxm")]:  # fmt: skip
        assert need in got, (need, sorted(got))


#: (scenario round) -> why the bundled profile orders a separated pair of it wrongly
KNOWN_WRONG_ROUNDS: dict[str, str] = {}


@pytest.mark.parametrize(
    "rnd",
    [
        pytest.param(r, marks=pytest.mark.xfail(strict=True, reason=KNOWN_WRONG_ROUNDS[r]))
        if r in KNOWN_WRONG_ROUNDS
        else r
        for r in (
            "server v4.1",
            "server v5.0",
            "server v5.1",
            "interactive v5.0",
            "interactive v5.1",
        )  # fmt: skip
    ],
)
def test_per_round_order(records, rnd):
    """Every pair of GPUs of one scenario and round whose measured systems do not overlap
    (the faster GPU's slowest system beats the slower GPU's fastest) is predicted in the
    measured order (the rule of the Offline ordering check, tests/test_mlperf_ordering.py)."""
    pairs = ordering_pairs(tight_tpot_rounds(records))
    wrong = pairs[~pairs["ranges_overlap"] & (pairs["round"] == rnd)]
    assert not len(wrong), wrong.to_string()


def test_newest_table_hand_derived():
    """GPU A ran rounds v4.1 (two systems at 1,000 and 1,100 tok/s per GPU) and v5.0 (one at
    2,000, predicted 1,800); B ran v10.0 only (one at 1,500, predicted 1,700). Newest rounds:
    A v5.0 (not v4.1; and v10.0 sorts after v5.0 as a version, not as text), B v10.0.
    Errors 1,800 / 2,000 - 1 = -10.0%, 1,700 / 1,500 - 1 = +13.3%; measured ranks A 1, B 2;
    predicted A 1, B 2."""
    recs = pd.DataFrame(
        [
            {"mode": "server", "gpu": g, "round": r, "measured": x, "predicted": p}
            for g, r, x, p in [("A", "v4.1", 1000.0, 1800.0), ("A", "v4.1", 1100.0, 1800.0),
                               ("A", "v5.0", 2000.0, 1800.0), ("B", "v10.0", 1500.0, 1700.0)]
        ]
    )  # fmt: skip
    t = tight_tpot_newest(recs).set_index("gpu")
    assert (t.loc["A", "round"], t.loc["B", "round"]) == ("v5.0", "v10.0")
    assert (t.loc["A", "systems"], t.loc["A", "measured_per_gpu"]) == (1, 2000)
    assert t.loc["A", "error_pct"] == pytest.approx(-10.0, abs=0.05)
    assert t.loc["B", "error_pct"] == pytest.approx(13.3, abs=0.05)
    assert list(t.loc[["A", "B"], "measured_rank"]) == [1, 2]
    assert list(t.loc[["A", "B"], "predicted_rank"]) == [1, 2]


#: (scenario, GPU) cases that miss 15% in the GPU's newest round, with the reason
#: (Server H200 v5.1 -11.3% and MI300X v5.1 -10.3%, Interactive H200 v5.1 -5.3% are within)
_NEWEST_MISSES = dict(_MISSES)
_NEWEST_MISSES[("server", "amd-mi325x")] = (
    "v5.1 -15.3% (3,344 vs 3,947 tok/s per GPU; pooled with v5.0 -14.8%, within; -24.6% before "
    "the tenth pass's shard-width factor, planner/engine/gemm_width.py): "
    + _AMD_DOMAIN
    % "58% long on MI325X v5.1 Server (597 sequences, 235 vs 149 ms) before it"
)
_NEWEST_MISSES[("server", "nvidia-h100-sxm")] = (
    "v5.0 -18.1% (one system, TP1 x PP2 pipelined; -26.0% under the assumed TP2 before "
    "planner/engine/pipeline.py; its Offline row is simulated 14.3% low, 3,352 vs 3,913 tok/s "
    "per GPU): " + _SERVER_LOW
)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=_NEWEST_MISSES[c]))
        if c in _NEWEST_MISSES
        else c
        for c in CASES
    ],
    ids=lambda c: f"{c[0]}-{c[1]}",
)
def test_newest_round_within_15_pct(newest, case):
    """Per GPU in its newest round (:func:`tight_tpot_newest`, `scripts/mlperf_tight_tpot.py`,
    bundled profile of the tenth pass, OpenOrca lengths of all 24,576 samples, each engine's
    round-robin share of the system's stream): Server H200 v5.1 (-11.3%, eight systems) and
    MI300X v5.1 (-1.3%), Interactive H200 v5.1 (-5.4%), B200 v5.1 (+8.8%, 16-bit KV as its
    config leaves it; +24.6% with fp8 KV), MI300X v5.1 (-3.1%) and MI355X v6.0 (-10.3%) are
    within 15%; the misses carry their reasons."""
    r = newest.loc[case]
    assert abs(r.predicted_per_gpu / r.measured_per_gpu - 1) <= 0.15, r.to_dict()


@pytest.mark.parametrize(
    "mode",
    [
        "server",
        pytest.param(
            "interactive",
            marks=pytest.mark.xfail(
                strict=True,
                reason="B200 v5.1 (8,140 tok/s per GPU, +8.8%) predicted above MI355X v6.0 "
                "(8,089, -10.3%), 0.6% apart, where MI355X measures 20% above B200 (9,015 vs "
                "7,485): the MI355X step at its run's batch is 23% long (docs/changes/2026-12-09/mlpint.md)",
            ),
        ),
    ],
)
def test_newest_round_order(newest, mode):
    """Server, each GPU's newest round: measured B200 > MI355X > H200 > MI325X > H100 >
    MI300X (12,397 > 12,270 > 4,162 > 3,947 > 3,888 > 3,084 tok/s per GPU; B200 and H200 of
    v5.1 since the v5.1 rows of public_mlperf51_nvidia.csv), and predicted in that order
    (10,501 > 9,454 > 3,692 > 3,344 > 3,184 > 3,044; H100 v5.0 at its stated TP1 x PP2 with
    pipelined stages, planner/engine/pipeline.py; 2,878 < 3,044 under the assumed TP2 and
    stage-after-stage PP before)."""
    t = newest.loc[mode]
    assert list(t.measured_rank) == list(t.predicted_rank), t.to_string()


@pytest.mark.parametrize(
    "row_id, seqs",
    [("mlp51-0006", 1024), ("mlp51-0002", 650), ("mlp51-0003", 600)],
)
def test_amd_v51_rows_carry_their_stated_engine_config(data, row_id, seqs):
    """AMD's own v5.1 Server MI325X / Server MI300X / Interactive MI300X rows: the yaml the
    Performance command names (closed/AMD/measurements/<system>/llama2-70b-99/<scenario>/
    README.md: --config-name server_mi325x / server_mi300x / interactive_mi300x) states
    tensor_parallel_size 1, max_num_seqs 1024 / 650 / 600, max_num_batched_tokens 40960,
    gpu_memory_utilization 1.0; the MI325X Server run's target_qps is 109 (user_mi325x.conf
    and its mlperf_log_summary.txt). Without them the MI325X row ran at vLLM's default 256
    sequences (-26.7%)."""
    _, df, _ = data
    row = df[df["id"] == row_id].iloc[0]
    notes = str(row["notes"])
    s = engine_settings(notes)
    assert (s.max_num_seqs, s.max_num_batched_tokens, s.kv_cache_dtype) == (seqs, 40960, "fp8")
    assert memory_fraction_from_notes(notes) == 1.0
    assert int(row["tp"]) == 1 and row["n_gpus"] == 8
    if row_id == "mlp51-0006":
        assert float(row["request_rate"]) == 109


def test_stated_chunked_prefill_reads_the_notes():
    """The switch as the rows transcribe AMD's harness YAML (``enable_chunked_prefill``):
    mlp51-0003 'num_scheduler_steps 8, enforce_eager, chunked prefill off', mlp51b-0009
    'num_scheduler_steps 1, enforce_eager, chunked prefill on', mlp51-0005 'enforce_eager,
    no chunked prefill'; a row that states nothing keeps the engine's default (None)."""
    assert (
        stated_chunked_prefill("num_scheduler_steps 8, enforce_eager, chunked prefill off,")
        is False
    )
    assert stated_chunked_prefill("enforce_eager, Chunked Prefill ON, block_size 16") is True
    assert (
        stated_chunked_prefill("num_scheduler_steps 7, enforce_eager, no chunked prefill;") is False
    )
    assert stated_chunked_prefill("tp not stated in the files read") is None
    assert stated_chunked_prefill("") is None


def test_stated_chunked_prefill_is_a_what_if(data):
    """AMD's v5.1 Interactive MI300X row (mlp51-0003) states chunked prefill off (vLLM V0):
    with ``stated_chunked`` its replica runs V0's prompt-first steps; by default it keeps
    vLLM's chunked prefill, as before (the what-if moves AMD's V0 rows 20-40% low on the
    bundled profile: docs/changes/2026-12-07b/mlperf.md)."""
    cat, df, prof = data
    row = df[df["id"] == "mlp51-0003"].iloc[0].to_dict()
    row = {k: "" if v is None or (isinstance(v, float) and v != v) else str(v)
           for k, v in row.items()}  # fmt: skip
    on = scenario_replica(row, cat, prof)[0].engine
    off = scenario_replica(row, cat, prof, stated_chunked=True)[0].engine
    assert (on.chunked_prefill, on.prefill_first) == (True, False)
    assert (off.chunked_prefill, off.prefill_first) == (False, True)


@pytest.mark.parametrize(
    ("row_id", "qps", "tok_s"),
    [("mlp50-0009", 67.2, 19424.25), ("mlp50-0011", 220, 59409.3), ("mlp51-0012", 220, 59545.4)],
)
def test_nvidia_interactive_rows_carry_their_target_qps(data, row_id, qps, tok_s):
    """NVIDIA's Interactive runs (H200 v5.0, B200 v5.0 and v5.1): each mlperf_log_summary.txt
    states 'target_qps : 67.2 / 220 / 220' and 'Completed tokens per second' 19,424.25 /
    59,409.25 / 59,545.45. Tokens per request: 19,424.25 / 67.2 = 289.1, 59,409.25 / 220 =
    270.0, 59,545.45 / 220 = 270.7, inside the OpenOrca answers' 250-310 tokens (the v5.0
    B200 results table: TOKENS_PER_SAMPLE 265.005), so rate and result agree."""
    _, df, _ = data
    row = df[df["id"] == row_id].iloc[0]
    assert float(row["request_rate"]) == qps
    assert f"'target_qps : {qps}'" in str(row["notes"])
    assert float(row["value"]) == pytest.approx(tok_s, abs=0.1)
    assert 250 < float(row["value"]) / float(row["request_rate"]) < 310


@pytest.mark.parametrize("row_id", ["mlp50-0005", "mlp50-0006"])
def test_amd_v50_rows_read_their_layout(data, row_id):
    """AMD's v5.0 MI325X Offline / Server Performance commands run 'harness_config.
    data_parallel_size=8' on the system's 8 GPUs: 8 replicas of 1 GPU, tp 1 (read, no
    longer assumed)."""
    _, df, _ = data
    row = df[df["id"] == row_id].iloc[0]
    assert "harness_config.data_parallel_size=8" in str(row["notes"])
    assert (int(row["tp"]), int(row["pp"]), int(row["n_gpus"])) == (1, 1, 8)


def test_engine_traffic_is_the_round_robin_share_of_one_poisson_stream():
    """Round robin of a Poisson stream over k engines: each engine's gaps are the sum of k
    exponential gaps, Erlang-k, whose CV is 1/sqrt(k) (8 engines: 0.354); one engine, or the
    what-if, keeps Poisson (CV 1)."""
    import numpy as np

    from planner.benchmarks.mlperf_latency import engine_traffic

    t = engine_traffic(8)
    assert (t.arrival, t.cv) == ("gamma", pytest.approx(8**-0.5))
    gaps = np.diff(t.unit_arrivals(200_000, np.random.default_rng(0)))
    assert gaps.mean() == pytest.approx(1.0, rel=0.01)  # unit rate per engine
    assert gaps.std() / gaps.mean() == pytest.approx(0.354, abs=0.005)
    # the same by construction: every 8th arrival of one unit-rate Poisson stream at 8 req/s
    rr = np.cumsum(np.random.default_rng(1).exponential(1 / 8, 1_600_000))[::8]
    g = np.diff(rr)
    assert g.std() / g.mean() == pytest.approx(gaps.std() / gaps.mean(), abs=0.005)
    assert engine_traffic(1).arrival == "poisson"
    assert engine_traffic(8, poisson_per_engine=True).arrival == "poisson"


def test_amd_predictions_say_their_node_has_no_tp1_row(records):
    """Every AMD record's provenance names the TP4 / TP8 rows of its node and says the row
    (TP1) lies outside them (planner/benchmarks/mlperf_fit_domain.py)."""
    amd = records[records["gpu"].str.startswith("amd-")]
    assert len(amd) and amd["provenance"].str.contains(
        "fitted on 169 rows of TP 4/8", regex=False).all()  # fmt: skip
    assert amd["provenance"].str.contains("this row runs TP1, outside them", regex=False).all()


def test_the_prediction_says_how_the_stream_is_split(records):
    """Every record of an 8-GPU TP1 system names the round-robin split in its provenance."""
    r = records[(records["gpu"] == "nvidia-h200-sxm") & (records["round"] == "v5.1")]
    assert len(r) and r["provenance"].str.contains("dealt round robin over 8 engines").all()


@pytest.mark.parametrize(
    ("row_id", "kv", "kv_bytes"),
    [
        # B200 v5.1 Interactive: the config sets no trtllm_checkpoint_flags kv_cache_dtype
        ("mlp51-0012", "bf16", 327_680.0),
        ("mlp51n-0014", "bf16", 327_680.0),
        # B200 v5.1 Server and H200 v5.1 Interactive: 'kv_cache_dtype': 'fp8' stated
        ("mlp51-0011", "fp8", 163_840.0),
        ("mlp51n-0001", "fp8", 163_840.0),
    ],
)
def test_unstated_kv_dtype_runs_the_checkpoint_dtype(data, row_id, kv, kv_bytes):
    """NVIDIA's harness quantizes with the config's checkpoint flags; TensorRT-LLM's
    quantize.py leaves the KV cache unquantized (fp16) when they name no kv_cache_dtype.
    Llama-2-70B KV a token at TP1: 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 327,680 B
    (16-bit), x 1 B = 163,840 B (fp8). With the switch off, every row keeps its cell (fp8)."""
    from planner.benchmarks import mlperf_latency as ml

    cat, df, prof = data
    row = df[df["id"] == row_id].iloc[0].to_dict()
    row = {k: "" if v is None or (isinstance(v, float) and v != v) else str(v)
           for k, v in row.items()}  # fmt: skip
    assert ml.harness_kv_precision(row) == kv
    rep = scenario_replica(row, cat, prof)[0]
    assert rep.memory.kv_cache_bytes_per_token == pytest.approx(kv_bytes)
    old = ml.UNSTATED_KV_CHECKPOINT_DTYPE
    try:
        ml.UNSTATED_KV_CHECKPOINT_DTYPE = False
        assert ml.harness_kv_precision(row) == "fp8"
    finally:
        ml.UNSTATED_KV_CHECKPOINT_DTYPE = old
