"""Speculative decoding: acceptance data and checks, verify/draft step terms, the simulator's
verify steps, CLI and scenario fields (planner.catalog.speculative, engine.speculative,
serving.speculative)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from conftest import DATA_DIR, IDEAL
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.catalog.speculative import SpecDecode, acceptance_records, spec_decode
from planner.engine import estimate, step_model
from planner.engine.speculative import draft_cost, per_token, with_spec
from planner.errors import PlannerError
from planner.serving.speculative import acceptance_rate, step_tokens_var, verify_steps

_CAT = load_catalog(DATA_DIR)
H100, H200 = "nvidia-h100-sxm", "nvidia-h200-sxm"
PROPS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- data and checks
def test_every_acceptance_row_is_sourced_and_in_range():
    rows = acceptance_records(DATA_DIR)
    assert len(rows) >= 4
    for r in rows:
        assert r.source and r.as_of
        assert 1.0 <= r.acceptance_length <= r.spec_tokens + 1
        if r.acceptance_length_range:
            lo, hi = r.acceptance_length_range
            assert lo <= r.acceptance_length <= hi
        assert _CAT.model(r.model)  # a catalog model


def test_deepseek_mtp_published_acceptance():
    # DeepSeek-V3 report: 2nd-token acceptance 85-90% with one MTP module (K = 1), so
    # AL = 1 + rate in [1.85, 1.90] (midpoint 1.875); TensorRT-LLM tech blog 1 prints 1.92
    # for 'MTP 1'. K defaults to the one MTP module DeepSeek-V3 ships (K = 2..5 are published
    # too). Mean (1.875 + 1.92) / 2 = 1.8975; band 1.85 .. 1.92, spread
    # max(1.8975 - 1.85, 1.92 - 1.8975) = 0.0475
    s = spec_decode(_CAT.model("deepseek-v3"), "mtp", data_dir=DATA_DIR)
    assert s.spec_tokens == 1
    assert s.acceptance_length == pytest.approx(1.8975)
    assert s.spread == pytest.approx(0.0475)
    assert s.al_band == pytest.approx((1.85, 1.945))


def test_llama70b_eagle3_rows_combine_into_one_band():
    # two published heads at K = 7: 3.263 (range 2.88..3.62) and 4.66 -> mean 3.962, band
    # from the lowest low (2.88) to the highest high (4.66): spread max(3.962-2.88, 4.66-3.962)
    s = spec_decode(_CAT.model("llama-3.3-70b"), "eagle3", 7, data_dir=DATA_DIR)
    mean = (3.26 + 4.66) / 2
    assert s.acceptance_length == pytest.approx(mean)
    assert s.spread == pytest.approx(max(mean - 2.88, 4.66 - mean))


def test_acceptance_prior_by_workload_by_hand():
    """DeepSeek-V3 MTP priors by the prompts' kind (data/speculative.yaml)."""
    m = _CAT.model("deepseek-v3")

    def al(k, w=None):
        return spec_decode(m, "mtp", k, workload=w, data_dir=DATA_DIR)

    # K = 3: InferenceX PR #649 prints ~2.50 for random tokens in the chat template and for
    # MT-Bench, ~3.55 for random tokens without the template
    assert al(3, "random").acceptance_length == pytest.approx(2.50)
    assert al(3, "chat").acceptance_length == pytest.approx(2.50)
    assert al(3, "random-raw").acceptance_length == pytest.approx(3.55)
    # no workload: the general natural-text row at K = 3 (TensorRT-LLM blog 1, prompts not
    # named): 2.82; the MT-Bench row answers only for chat
    assert (al(3).acceptance_length, al(3).spread) == pytest.approx((2.82, 0.0))
    # code has no row at K = 3: the general natural-text row
    assert al(3, "code").acceptance_length == pytest.approx(2.82)
    # K = 7: the nebius card's two temperatures, (3.20 + 3.09) / 2 = 3.145 +/- 0.055
    assert (al(7).acceptance_length, al(7).spread) == pytest.approx((3.145, 0.055))
    # random at K = 2 is carried down from K = 3 by the chain rate: 1 + r + r^2 + r^3 = 2.5
    # -> r = 0.6914 (0.6914 + 0.47804 + 0.33052 = 1.49996); K = 2: 1 + r + r^2 = 2.1695
    s2 = al(2, "random")
    assert s2.acceptance_length == pytest.approx(2.1695, abs=2e-3)
    assert s2.basis.startswith("chain rate of K=3") and s2.workload == "random"
    # the label names the prompts' kind and the source's short name (up to its title)
    assert s2.label() == (
        "MTP k=2, AL 2.17 (random, SemiAnalysisAI/InferenceX PR #649, carried from K=3)"
    )
    # nothing measured on random prompts at K >= 4: refused (never carried up)
    with pytest.raises(PlannerError, match="acceptance_length: .* on random prompts"):
        al(4, "random")
    with pytest.raises(PlannerError, match="spec_workload must be one of"):
        al(3, "poetry")


def test_llama8b_eagle3_prior_by_task():
    # nebius card, temperature 1, K = 7: MT-bench 2.77 (chat), HumanEval 3.49 (code), GSM8K
    # 3.34 (math); no workload: their mean 9.60 / 3 = 3.20, spread max(3.20 - 2.77, 3.49 -
    # 3.20) = 0.43
    m = _CAT.model("llama-3.1-8b")
    got = {w: spec_decode(m, "eagle3", 7, workload=w, data_dir=DATA_DIR) for w in
           (None, "chat", "code", "math")}  # fmt: skip
    assert got["chat"].acceptance_length == pytest.approx(2.77)
    assert got["code"].acceptance_length == pytest.approx(3.49)
    assert got["math"].acceptance_length == pytest.approx(3.34)
    assert (got[None].acceptance_length, got[None].spread) == pytest.approx((3.20, 0.43))


@PROPS
@given(k=st.integers(1, 3))
def test_random_prompt_prior_never_above_natural_text(k):
    # InferenceX PR #649: random tokens in the chat template accept like MT-Bench (~2.50), and
    # without the template more (~3.55, "inflated"); the TensorRT-LLM / DeepSeek rows are
    # natural text. At K = 1..3 the random prior is <= the natural prior <= random-raw's.
    m = _CAT.model("deepseek-v3")
    rnd = spec_decode(m, "mtp", k, workload="random", data_dir=DATA_DIR).acceptance_length
    nat = spec_decode(m, "mtp", k, data_dir=DATA_DIR).acceptance_length
    raw = spec_decode(m, "mtp", k, workload="random-raw", data_dir=DATA_DIR).acceptance_length
    assert 1.0 <= rnd <= nat + 1e-12
    assert rnd <= raw <= k + 1


@PROPS
@given(k=st.integers(1, 8), frac=st.floats(0.0, 1.0))
def test_chain_rate_inverts_chain_length(k, frac):
    from planner.catalog.speculative import chain_acceptance_length, chain_rate

    al = 1.0 + frac * k
    r = chain_rate(al, k)
    assert 0.0 <= r <= 1.0
    assert chain_acceptance_length(r, k) == pytest.approx(al, abs=1e-9)


def test_row_workload_from_notes():
    from planner.benchmarks.speculative_rows import row_workload

    ix = {"notes": "InferenceX fixed-seq-len sweep, spec 'mtp'; random dataset: nominal input "
          "1024 / output 1024 tokens, range ratio 0.8"}  # fmt: skip
    assert row_workload(ix) == "random"
    assert row_workload({"notes": "--dataset-name random --random-input-len 1024"}) == "random"
    assert row_workload({"notes": "ISL 1k / OSL 2k, batch 1"}) is None
    # SGLang's own client: its "random" dataset is ShareGPT text cut / repeated to length
    # (random token ids are its "random-ids"), so chat prompts
    sgl = "sglang.bench_serving --backend sglang --dataset-name random --random-input-len 1024"
    assert row_workload({"notes": sgl}) == "chat"
    assert row_workload({"notes": sgl.replace("name random", "name random-ids")}) == "random"


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(method="mtp", spec_tokens=3, acceptance_length=4.5), "acceptance_length"),
        (dict(method="mtp", spec_tokens=3, acceptance_length=0.9), "acceptance_length"),
        (dict(method="mtp", spec_tokens=6), "acceptance_length"),  # no data at K = 6
        (dict(method="medusa"), "spec_method"),
        (dict(method="none", spec_tokens=2), "spec_tokens"),
        (dict(method="draft", spec_tokens=2, acceptance_length=2.0), "draft_model"),
        (dict(method="mtp", spec_tokens=0, acceptance_length=1.0), "spec_tokens"),
    ],
)
def test_bad_spec_input_is_one_line_naming_the_field(kw, field):
    m = _CAT.model("deepseek-v3")
    with pytest.raises(PlannerError) as e:
        spec_decode(
            m, kw.pop("method"), kw.get("spec_tokens"), kw.get("acceptance_length"),
            data_dir=DATA_DIR,
        )  # fmt: skip
    msg = str(e.value)
    assert "\n" not in msg and field in msg


def test_refusal_lists_what_exists():
    with pytest.raises(PlannerError, match=r"deepseek-v3 mtp K=1 \(AL 1\.88\)"):
        spec_decode(_CAT.model("deepseek-v3"), "mtp", 6, data_dir=DATA_DIR)


def test_mtp_needs_mtp_modules_and_engine_support():
    with pytest.raises(PlannerError, match="spec_method: mtp needs .*llama-3.1-8b has none"):
        spec_decode(_CAT.model("llama-3.1-8b"), "mtp", 1, 1.5, data_dir=DATA_DIR)
    with pytest.raises(PlannerError, match="spec_method: no source says tgi runs eagle3"):
        spec_decode(
            _CAT.model("llama-3.1-8b"), "eagle3", 7, framework=_CAT.framework("tgi"),
            data_dir=DATA_DIR,
        )  # fmt: skip


# --------------------------------------------------------------------------- acceptance arithmetic
def test_acceptance_rate_by_hand():
    # K = 1: AL = 1 + a  ->  a = 0.875 for AL 1.875
    assert acceptance_rate(1, 1.875) == pytest.approx(0.875, abs=1e-12)
    # K = 3, a = 0.5: AL = (1 - 0.5^4) / (1 - 0.5) = 0.9375 / 0.5 = 1.875
    assert acceptance_rate(3, 1.875) == pytest.approx(0.5, abs=1e-12)
    assert acceptance_rate(3, 1.0) == 0.0 and acceptance_rate(3, 4.0) == 1.0


def test_step_tokens_variance_by_hand():
    # K = 1: A = 2 with p = a, else 1 -> var = a (1 - a) = 0.875 x 0.125 = 0.109375
    assert step_tokens_var(1, 1.875) == pytest.approx(0.109375, rel=1e-9)
    # K = 3, a = 0.5: P(1..4) = .5, .25, .125, .125; E = 1.875, E[A^2] = .5 + 1 + 1.125 + 2
    # = 4.625 -> var = 4.625 - 1.875^2 = 1.109375
    assert step_tokens_var(3, 1.875) == pytest.approx(1.109375, rel=1e-9)


def test_verify_steps_mean_and_bounds():
    spec = SpecDecode(method="ngram", spec_tokens=3, acceptance_length=2.5)
    rng = np.random.default_rng(1)
    out = np.full(20_000, 1001)
    s = verify_steps(out, spec, rng)
    # 1000 tokens after the first, 2.5 per step: 400 steps on average
    assert s.mean() == pytest.approx(400, rel=0.01)
    assert s.min() >= 250 and s.max() <= 1000  # ceil(1000 / 4) .. 1000
    assert verify_steps(np.array([1]), spec, rng)[0] == 0


# --------------------------------------------------------------------------- step terms
def test_verify_step_is_a_plain_step_of_k_plus_1_tokens_per_decoder():
    # n-gram drafts cost nothing: a verify step of B decoders at context c is exactly a plain
    # step of B (K + 1) tokens, B (K + 1) logits, the same KV read (B c) and (K + 1) B c
    # query-key pairs; weights are read once
    sm = step_model("llama-3.1-8b", H100, "bf16", params=IDEAL, catalog=_CAT)
    spec = SpecDecode(method="ngram", spec_tokens=3, acceptance_length=2.0)
    ss = with_spec(sm, spec, _CAT)
    B, c, K = 8, 2000, 3
    got = ss.step_time(B, B, B, B * c, B * c)
    want = sm.step_time(B * (K + 1), B, B * (K + 1), B * c, B * c * (K + 1))
    assert got == pytest.approx(want, rel=1e-12)
    assert (
        ss.step(B, B, B, B * c, B * c).weight_bytes == sm.step(B, B, B, B * c, B * c).weight_bytes
    )


def test_deepseek_mtp_module_size_against_published():
    # HF checkpoint 685B incl. the MTP module vs 671B without (models.yaml source): ~14B,
    # of which the embedding and head copies are 2 x 129,280 x 7,168 = 1.853B; the rest,
    # ~12.1B, is the module's one MoE decoder layer and eh_proj (bf16: 2 B per parameter)
    sm = step_model("deepseek-v3", H200, "bf16", tp=1, catalog=_CAT)
    d = draft_cost(sm, SpecDecode(method="mtp", spec_tokens=1, acceptance_length=1.9), _CAT)
    published = (685e9 - 671.03e9) - 2 * 129_280 * 7_168
    assert d.held_bytes / 2 == pytest.approx(published, rel=0.10)
    assert d.layers == 1.0 and d.kv_bytes_per_token == sm.kv_bytes_per_token_layer


@pytest.mark.parametrize(
    "model, gpu, prec, tp, method, draft",
    [
        ("deepseek-v3", H200, "fp8", 8, "mtp", None),
        ("llama-3.1-8b", H100, "bf16", 2, "eagle3", None),
        ("llama-3.1-70b", H100, "fp8", 4, "draft", "llama-3.1-8b"),
        ("llama-3.1-8b", H100, "bf16", 1, "ngram", None),
    ],
)
def test_scalar_path_equals_vector_path_with_spec(model, gpu, prec, tp, method, draft):
    sm = step_model(model, gpu, prec, tp=tp, catalog=_CAT)
    ss = with_spec(sm, SpecDecode(method=method, spec_tokens=3, acceptance_length=2.2,
                                  draft_model=draft), _CAT)  # fmt: skip
    for B, c, pf in [(1, 100, 0), (16, 3000, 0), (64, 8000, 0), (4, 1000, 512)]:
        args = (B + pf, B + (1 if pf else 0), B + (1 if pf else 0), B * c + pf,
                B * c + pf * (pf + 1) / 2)  # fmt: skip
        assert ss.step_time(*args) == pytest.approx(ss.step(*args).time_s, rel=1e-12)
        assert ss.step_time(*args) > sm.step_time(*args)


def test_plain_step_model_is_untouched_by_spec_off():
    sm = step_model("deepseek-v3", H200, "fp8", tp=8, catalog=_CAT)
    assert with_spec(sm, None) is sm
    assert sm._coeffs[35:45] == (0.0,) * 10  # speculative coefficients off


@PROPS
@given(
    batch=st.integers(1, 256),
    ctx=st.integers(16, 16_000),
    k=st.integers(1, 7),
    method=st.sampled_from(["mtp", "ngram"]),
)
def test_acceptance_length_one_never_speeds_decoding(batch, ctx, k, method):
    # with AL = 1 every verify step yields one token, and a verify step costs at least a
    # plain step (more tokens, the same weights, plus draft passes)
    sm = step_model("deepseek-v3", H200, "fp8", tp=8, catalog=_CAT)
    spec = SpecDecode(method=method, spec_tokens=k, acceptance_length=1.0)
    ss = with_spec(sm, spec, _CAT)
    a = (batch, batch, batch, batch * ctx, batch * ctx)
    assert ss.step_time(*a) / 1.0 >= sm.step_time(*a)
    e0 = estimate(sm, batch, ctx, 64)
    e1 = per_token(estimate(ss, batch, ctx, 64), spec, batch, 64)
    assert e1.tpot_s >= e0.tpot_s and e1.output_tok_s <= e0.output_tok_s * (1 + 1e-12)


# --------------------------------------------------------------------------- simulator, CLI
def test_simulation_counts_real_tokens_and_gains_at_batch_one():
    from planner.serving import build_replica
    from planner.serving.probe import run
    from planner.workload.workload import Requests

    kw = dict(tp=8, spec_method="mtp", spec_tokens=1)
    r0 = build_replica("deepseek-v3", H200, "fp8", "sglang", tp=8, catalog=_CAT)
    r1 = build_replica("deepseek-v3", H200, "fp8", "sglang", catalog=_CAT, **kw)
    ra = build_replica("deepseek-v3", H200, "fp8", "sglang", catalog=_CAT,
                       acceptance_length=1.0, **kw)  # fmt: skip
    assert r1.memory.weight_bytes_per_gpu > r0.memory.weight_bytes_per_gpu  # the MTP module
    n = 8
    reqs = Requests(np.zeros(n), np.full(n, 1000), np.full(n, 500), np.zeros(n, dtype=np.int64))
    s0, s1, sa = (run(r, reqs, 1) for r in (r0, r1, ra))
    assert (s1.output_tokens == 500).all()
    e2e = [float(np.mean(s.finish_s - s.first_token_s)) for s in (s0, s1, sa)]
    # AL 1.875: each verify step gives 1.875 tokens for at most ~1.4x a plain step's time
    assert e2e[1] < e2e[0] / 1.3
    assert e2e[2] >= e2e[0]  # AL 1 never faster


def test_cli_estimate_spec_fields_and_errors(capsys):
    from planner.cli.main import main

    base = ["estimate", "--model", "deepseek-v3", "--gpu", H200, "--precision", "fp8",
            "--tp", "8", "--framework", "sglang", "--batch", "1", "--input-len", "1000",
            "--output-len", "200", "--format", "json"]  # fmt: skip
    assert main(base) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["spec_method"] is None
    assert main([*base, "--spec-method", "mtp"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["spec_method"], d["spec_tokens"]) == ("mtp", 1)
    # K = 1 rows: DeepSeek-V3 report 1.875 and TensorRT-LLM blog 1 1.92: mean 1.8975
    assert d["acceptance_length"] == pytest.approx(1.8975)
    # TPOT = verify step / AL; the band's slow end uses AL 1.85, its fast end AL 1.945
    assert d["tpot_s"] == pytest.approx(d["verify_step_s"] / 1.8975, rel=1e-9)
    assert d["tpot_s"] < plain["tpot_s"]
    assert d["tpot_s_low"] < d["tpot_s"] < d["tpot_s_high"]
    rc = main([*base, "--spec-method", "mtp", "--spec-tokens", "2", "--acceptance-length", "3.5"])
    err = capsys.readouterr().err
    assert rc != 0 and "acceptance_length must be in [1, K + 1]" in err
    assert len(err.strip().splitlines()) == 1
    # the random-prompt prior (InferenceX PR #649: ~2.50 at K = 3), and its TPOT the slower
    # one: fewer tokens per verify step than the general natural-text row's 2.82
    k3 = [*base, "--spec-method", "mtp", "--spec-tokens", "3"]
    assert main([*k3, "--spec-workload", "random"]) == 0
    rnd = json.loads(capsys.readouterr().out)
    assert (rnd["acceptance_length"], rnd["spec_workload"]) == (pytest.approx(2.50), "random")
    assert main(k3) == 0
    nat = json.loads(capsys.readouterr().out)
    assert nat["acceptance_length"] == pytest.approx(2.82) and nat["spec_workload"] is None
    assert rnd["tpot_s"] > nat["tpot_s"]


def test_scenario_deployment_takes_spec_fields(tmp_path):
    from planner.scenario import load_scenario

    p = tmp_path / "s.yaml"
    p.write_text(
        "model: deepseek-v3\nworkload: {preset: chat, traffic: {mean_rps: 1, peak_rps: 2}}\n"
        "deployment: {gpu: nvidia-h200-sxm, framework: sglang, precision: fp8, tp: 8,\n"
        "  spec_method: mtp, spec_tokens: 1, acceptance_length: 1.8}\n"
    )
    sc = load_scenario(p)
    rep = sc.build_replica(catalog=_CAT)
    assert rep.spec is not None and rep.spec.acceptance_length == 1.8
    assert "MTP k=1, AL 1.80" in rep.label()
    # the prompts' kind picks the prior: K = 2 on random prompts, carried down from K = 3's
    # 2.50 by the chain rate (test_acceptance_prior_by_workload_by_hand): 2.1695
    p.write_text(
        "model: deepseek-v3\nworkload: {preset: chat, traffic: {mean_rps: 1, peak_rps: 2}}\n"
        "deployment: {gpu: nvidia-h200-sxm, framework: sglang, precision: fp8, tp: 8,\n"
        "  spec_method: mtp, spec_tokens: 2, spec_workload: random}\n"
    )
    rep = load_scenario(p).build_replica(catalog=_CAT)
    assert rep.spec.acceptance_length == pytest.approx(2.1695, abs=2e-3)
    assert rep.spec.workload == "random"


# --------------------------------------------------------------------------- bands, benchmark rows
def test_capacity_band_takes_the_acceptance_spread():
    from planner.cli.speculative import acceptance_scaled

    # AL 2.0 +- 0.5 (K = 3): the low end x 1.5 / 2.0 = 0.75, the high end x 2.5 / 2.0 = 1.25
    spec = SpecDecode(method="ngram", spec_tokens=3, acceptance_length=2.0, spread=0.5)
    assert acceptance_scaled(spec, 8.0, 12.0) == pytest.approx((6.0, 15.0))
    assert acceptance_scaled(None, 8.0, 12.0) == (8.0, 12.0)


def test_spec_rows_method_and_k_from_notes():
    from planner.benchmarks.speculative_rows import chain_acceptance_length, spec_of_row

    sgl = {"notes": "x; layout_unsupported: speculative decoding (EAGLE/NextN MTP, 3 steps, "
           "topk 1, 4 draft tokens, --cuda-graph-max-bs 2); y", "source": "SGLang"}  # fmt: skip
    assert spec_of_row(sgl) == ("mtp", 3)
    ix = {"notes": "layout_unsupported: speculative decoding (MTP); InferenceX single-node "
          "fixed-seq-len sweep, spec 'mtp'; TP=8, EP=1, DP-attention=false",
          "source": "SemiAnalysis InferenceX (InferenceMAX) open results",
          "hardware": "nvidia-h200-sxm", "framework": "sglang"}  # fmt: skip
    assert spec_of_row(ix) == ("mtp", 2)  # dsr1_fp8_h200_mtp.sh: 2 steps, 3 draft tokens
    assert spec_of_row({"notes": "TP=8", "source": "x"}) is None
    # chain of K = 2 drafts at rate 0.5: 1 + 0.5 + 0.25 = 1.75
    assert chain_acceptance_length(0.5, 2) == pytest.approx(1.75)


def test_mtp_rows_at_concurrency_16_are_predicted_in_the_measured_ratio():
    """InferenceX DeepSeek-R1 rows with and without MTP (same GPU, engine, precision, layout,
    lengths, concurrency): the per-position acceptance fitted on the OTHER hardware's pairs
    predicts each held-out pair's speed-up at concurrency 16 within 15 % (median; measured
    5.0 % on 5 pairs; 2.2 % after the draft-extend width, changes/specfix.md). Concurrency
    >= 32 is not yet within it (median 25.7 %, 4 of 10 pairs, changes/specfix.md).
    """
    import csv
    from statistics import median

    from planner.benchmarks.speculative_rows import held_out_ratios, spec_pairs
    from planner.catalog.profile import model_family, resolve_efficiency

    with open(DATA_DIR / "benchmarks" / "public_inferencex.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    pairs = [p for p in spec_pairs(rows) if p.spec_row["metric"] == "total_tok_s"]
    assert len(pairs) >= 10

    def params(r):
        fam = model_family(_CAT.model(r["model"]))
        return resolve_efficiency(r["hardware"], r["framework"], r["precision"], None, _CAT, fam)[0]

    res = held_out_ratios(pairs, _CAT, params)
    low = [abs(r["error"]) for r in res if r["concurrency"] <= 16]
    assert len(low) >= 4
    assert median(low) <= 0.15
    # gains fall with batch in the measurements; the model's must not rise without bound
    assert all(r["predicted_ratio"] < r["acceptance_length"] for r in res)


def test_verify_steps_beyond_the_cuda_graph_limit_run_eager():
    # SGLang's --cuda-graph-max-bs 2: a verify step of 4 sequences runs eager, one of 2 not;
    # with eager_layer_s the eager step is the smooth max of GPU time and dispatch time
    params = IDEAL.with_(eager_layer_s=1e-3)
    sm = step_model("llama-3.1-8b", H100, "bf16", params=params, catalog=_CAT)
    spec = SpecDecode(method="ngram", spec_tokens=3, acceptance_length=2.0, graph_max_seqs=2)
    ss, free = (
        with_spec(sm, spec, _CAT),
        with_spec(sm, spec.model_copy(update={"graph_max_seqs": None}), _CAT),
    )
    for B in (2, 4):
        a = (B, B, B, B * 1000, B * 1000)
        assert ss.step_time(*a) == pytest.approx(ss.step(*a).time_s, rel=1e-12)
    a2, a4 = (2, 2, 2, 2000, 2000), (4, 4, 4, 4000, 4000)
    assert ss.step_time(*a2) == free.step_time(*a2)
    # 32 layers x 1 ms of dispatch: the eager step takes at least 32 ms
    assert free.step_time(*a4) < 0.032 <= ss.step_time(*a4)


def test_recommender_searches_published_spec_settings_only_when_asked():
    from planner.recommend.options import enumerate_options, spec_flags

    m = _CAT.model("deepseek-v3")
    kw = dict(gpus=(H200,), frameworks=("sglang",), precisions=("fp8",), tps=(8,))
    off, _ = enumerate_options(_CAT, m, **kw)
    on, _ = enumerate_options(_CAT, m, speculative=True, **kw)
    assert all(o.spec is None for o in off)
    spec = [o for o in on if o.spec is not None]
    # six published settings for DeepSeek-V3 on SGLang (MTP, K = 1..5 and 7: the DeepSeek-V3
    # report at K = 1, TensorRT-LLM tech blog 1 at K = 1..5, the nebius card's original MTP
    # at K = 7): six spec twins per option
    assert len(spec) == 6 * len(off)
    als = {o.spec.spec_tokens: (o.spec.acceptance_length, o.spec.spread) for o in spec}
    assert als[1] == pytest.approx((1.8975, 0.0475))  # (1.875 + 1.92) / 2, band 1.85..1.92
    assert als[2] == pytest.approx((2.58, 0.0))
    # K = 3: the general row (TensorRT-LLM 2.82); InferenceX PR #649's MT-Bench 2.50 is a
    # chat row (--spec-workload chat) and its random-prompt row is not natural text
    assert als[3] == pytest.approx((2.82, 0.0))
    assert als[4] == pytest.approx((2.99, 0.0)) and als[5] == pytest.approx((3.01, 0.0))
    # K = 7: original MTP 3.20 (temperature 0) and 3.09 (temperature 1): 3.145 +/- 0.055
    assert als[7] == pytest.approx((3.145, 0.055))
    # the label carries the AL used, its spread and where it came from: natural text (no
    # workload named), the two K = 1 sources by their short names, sorted
    assert (
        "MTP k=1, AL 1.90±0.05 (natural text, DeepSeek-V3 Technical Report; "
        "TensorRT-LLM tech blog 1)"
    ) in {o.spec.label() for o in spec}
    spec = [o for o in spec if o.spec.spec_tokens == 1]
    ids = spec[0].ids()
    assert (ids["spec_method"], ids["spec_tokens"]) == ("mtp", 1)
    assert off[0].ids()["spec_method"] is None
    assert spec_flags(spec[0].spec).startswith("--spec-method mtp --spec-tokens 1 ")


def test_analytic_paths_count_acceptance_length_tokens_per_step():
    from planner.serving import build_replica, steady_state

    kw = dict(tp=8, catalog=_CAT)
    r0 = build_replica("deepseek-v3", H200, "fp8", "sglang", **kw)
    r2 = build_replica("deepseek-v3", H200, "fp8", "sglang", spec_method="mtp", spec_tokens=1,
                       acceptance_length=2.0, **kw)  # fmt: skip
    s0, s2 = steady_state(r0, (1000, 501), 0.5), steady_state(r2, (1000, 501), 0.5)
    # TPOT = iteration / AL; 500 decode tokens take 250 verify steps: E2E falls
    assert s2.tpot_s == pytest.approx(s2.iteration_s / 2.0)
    assert s2.e2e_s < s0.e2e_s and s2.saturation_rps > s0.saturation_rps


def test_capacity_verdict_judges_tpot_per_token_not_per_verify_step():
    # DeepSeek-V3 fp8 TP8 H200 with MTP at AL 1.875: a verify step takes ~7 ms at low load,
    # a token ~3.8 ms. A p99 TPOT target of 5.5 ms is met per token; the early-stop rule,
    # which would count the loop's per-step TPOT, must not declare a miss
    from planner.serving import CapacityProbe, RequestClass, WorkloadCache, build_replica
    from planner.workload import SLO, FixedLength, Traffic, Workload

    rep = build_replica("deepseek-v3", H200, "fp8", "sglang", tp=8, spec_method="mtp",
                        catalog=_CAT)  # fmt: skip
    wl = Workload(traffic=Traffic(mean_rps=0.1, peak_rps=0.1),
                  input_tokens=FixedLength(tokens=1000), output_tokens=FixedLength(tokens=200))  # fmt: skip
    slo = SLO.model_validate({"tpot": {"max_s": 0.0055, "percentile": "p99"}})
    cache = WorkloadCache([RequestClass("all", wl, slo)])
    for early in (False, True):
        probe = CapacityProbe(rep, cache, n_requests=300, early_stop=early)
        assert probe.ok(0.05)


# --------------------------------------------------------------------------- draft passes, pairs
def test_draft_passes_by_hand():
    # A drafter of 1 GB weights, 1e10 FLOP and 1 kB of KV per token, one layer, on a verify
    # step of B = 64 decoders at context c = 1000 with K = 3 (IDEAL: every efficiency 1, no
    # overheads, one GPU: no collectives). The first draft pass runs the verify width
    # T = B (K + 1) = 256 tokens (the drafter writes its KV for every verified position:
    # SGLang's draft-extend runs speculative_num_steps + 1 tokens per sequence), the other
    # K - 1 = 2 passes one token per decoder:
    #   pass(n) = max(1e9 / bw, 1e10 n / peak) + 1e3 (B c + n) / bw
    #   t_draft = pass(256) + 2 pass(64)
    from dataclasses import replace

    from planner.engine.speculative import DraftCost

    sm = step_model("llama-3.1-8b", H100, "bf16", params=IDEAL, catalog=_CAT)
    d = DraftCost(weight_bytes=1e9, matmul_flops_per_token=1e10, kv_bytes_per_token=1e3, layers=1)
    ss = replace(sm, spec_tokens=3, draft=d)
    bw, peak = sm.bw_bytes_s, sm.peak_flops
    B, c = 64, 1000

    def one(n):
        return max(1e9 / bw, 1e10 * n / peak) + 1e3 * (B * c + n) / bw

    want = one(256) + 2 * one(64)
    got = ss.step(B, B, B, B * c, B * c)
    assert float(got.t_draft_s) == pytest.approx(want, rel=1e-12)
    # the simulator's scalar path charges the same
    assert ss.step_time(B, B, B, B * c, B * c) == pytest.approx(float(got.time_s), rel=1e-12)
    # and the verify step is the plain step of B (K + 1) tokens plus these passes
    plain = sm.step_time(B * 4, B, B * 4, B * c, B * c * 4)
    assert float(got.time_s) == pytest.approx(plain + want, rel=1e-12)


def _pair_ratios(files, min_conc=None, max_conc=None, al=None, source=None):
    """(measured, predicted) speed-ups of the MTP / no-MTP pairs in ``files`` (of ``source``
    only, where given) with the catalog's published AL for the pair's K and prompts' kind (or
    ``al``). A latency pair (unit ms: E2E) gives its ratio inverted (baseline / MTP), so
    every pair reads as a speed-up; pairs of a dataset the simulator has no lengths for
    (ShareGPT) are left out."""
    from planner.benchmarks.io import read_rows
    from planner.benchmarks.schema import TIME_UNITS_S
    from planner.benchmarks.speculative_rows import predicted_ratio, row_workload, spec_pairs
    from planner.catalog.profile import model_family, resolve_efficiency

    rows = [r for f in files for r in read_rows(DATA_DIR / "benchmarks" / f)[0]]
    rows = [r for r in rows if source is None or r["source"] == source]
    out = []
    for p in spec_pairs(rows):
        if "dataset-name sharegpt" in p.spec_row["notes"]:
            continue
        conc = p.concurrency or 1
        if p.spec_tokens is None or (min_conc and conc < min_conc):
            continue
        if max_conc and conc > max_conc:
            continue
        b = p.base_rows[0]
        m = _CAT.model_ref(b["model"], None)
        params = resolve_efficiency(
            b["hardware"], b["framework"], _CAT.precision(b["precision"]).id, None, _CAT,
            model_family(m),
        )[0]  # fmt: skip
        if al is None:  # the prior for the row's prompts (random tokens: InferenceX)
            s = spec_decode(m, p.method, p.spec_tokens, workload=row_workload(p.spec_row))
        a = al if al is not None else s.acceptance_length
        v, why = predicted_ratio(p, a, _CAT, params)
        assert v is not None, why
        meas = p.measured_ratio
        if p.spec_row["unit"] in TIME_UNITS_S:
            meas, v = 1 / meas, 1 / v
        out.append((meas, v))
    return out


def test_mtp_pairs_at_batch_one_in_the_measured_ratio():
    # TensorRT-LLM tech blog 1 (DeepSeek-R1, 8x B200, batch 1): MTP K = 1..5 against the
    # same row without MTP, measured 1.78 .. 2.28x; predicted with the published natural-text
    # AL by K (data/speculative.yaml): each within 15 % (measured +1.2 .. +12.9 %); and a
    # second publisher, AMD's ROCm MTP blog (DeepSeek-V3, 8x MI300X SGLang, c1, K = 2): E2E
    # 17,348.25 / 8,229.37 ms = 2.108x measured, 2.23x predicted (+5.6 %)
    res = _pair_ratios(["public_blogs_moe.csv"], max_conc=1)
    assert len(res) >= 6
    for meas, pred in res:
        assert abs(pred / meas - 1) <= 0.15, (meas, pred)


@pytest.mark.xfail(
    strict=True,
    reason="issue 30: at concurrency >= 32 (InferenceX SGLang / TensorRT-LLM DeepSeek-R1 "
    "pairs, random tokens in the chat template, sourced random-prompt AL 2.50 at K = 3, 2.17 "
    "at K = 2) 3 of 10 pairs are within 15 %, median 23.9 % (main d826917). Against the "
    "baseline run of the same engine image (scripts/mtp_pairs_table.py --tpot) the H200 "
    "SGLang v0.5.12 MTP runs give no TPOT speed-up at any concurrency, c4 included (0.94-0.99 "
    "at 1k, 1.08-1.15 at 8k), where SGLang's own docs claim 1.8x at batch 1 and 1.5x at 32 on "
    "H200 TP8 (the model: 1.73 / 1.49 at K = 1); the AMD SGLang pairs lose gain with batch as "
    "AMD's MI300X runs do (ROCm MTP blog: 2.11x at c1 to 1.25x at c64) while the model's gain "
    "rises again above c16; the missing verify cost is not the MoE (aiter's MI355X kernel "
    "timings) and no source prices it (changes/s8-mtpconc.md)",
)
def test_mtp_pairs_at_concurrency_32_and_above_in_the_measured_ratio():
    from statistics import median

    res = _pair_ratios(["public_inferencex.csv"], min_conc=32)
    assert len(res) >= 10
    assert median(abs(p / m - 1) for m, p in res) <= 0.15


def test_acceptance_length_one_never_speeds_a_measured_pair():
    # property over every published pair (batch 1 to concurrency 256): with AL = 1 each
    # verify step gives one token, so the simulated speed-up is at most 1
    res = _pair_ratios(["public_blogs_moe.csv", "public_inferencex.csv"], al=1.0)
    assert len(res) >= 15
    assert all(pred <= 1.0 + 1e-9 for _, pred in res)


def test_random_prompt_prior_predicts_inferencex_mtp_tpot():
    """InferenceX history's aggregated MTP runs (random tokens in the chat template, K from
    InferenceX's scripts), all 83 TPOT rows: the sourced random-prompt prior (2.50 at
    K = 3, InferenceX PR #649; carried down to K = 2 and 1) predicts the median TPOT with a
    smaller median |error| than the general natural-text prior (2.82 / 2.58 / 1.90), and
    within 20 % (measured 15.1 % vs 24.0 %, changes/acceptance.md); nothing here is
    fitted on these rows."""
    from statistics import median

    from planner.benchmarks.io import read_rows
    from planner.benchmarks.speculative_rows import predict_spec_row, row_workload, spec_of_row
    from planner.catalog.profile import model_family, resolve_efficiency

    rows = read_rows(DATA_DIR / "benchmarks" / "public_inferencex_history.csv")[0]
    tpot = [r for r in rows if r["metric"] == "tpot_ms_median" and spec_of_row(r)
            and spec_of_row(r)[1] and "disaggregated" not in r["notes"]]  # fmt: skip
    assert len(tpot) >= 60
    errs = {"natural": [], "random": []}
    for r in tpot:
        m = _CAT.model_ref(r["model"], None)
        params = resolve_efficiency(
            r["hardware"], r["framework"], _CAT.precision(r["precision"]).id, None, _CAT,
            model_family(m),
        )[0]  # fmt: skip
        method, k = spec_of_row(r)
        assert row_workload(r) == "random"
        for name, wl in (("natural", None), ("random", "random")):
            al = spec_decode(m, method, k, workload=wl).acceptance_length
            v, why = predict_spec_row(r, al, _CAT, params)
            assert v is not None, why
            errs[name].append(abs(v / float(r["value"]) - 1))
    assert median(errs["random"]) < median(errs["natural"])
    assert median(errs["random"]) <= 0.20


def _h200_pair_step_models():
    """The replica of InferenceX's H200 SGLang DeepSeek-R1 pair (ixm-1554 / its baseline: TP8,
    fp8, 1k/1k, concurrency 64; MTP K = 2, dsr1_fp8_h200_mtp.sh), bundled profile, plain and
    with MTP at the random-prompt AL."""
    from planner.catalog.profile import model_family, resolve_efficiency
    from planner.serving.replica import build_replica

    m = _CAT.model_ref("deepseek-v3", None)
    params = resolve_efficiency(H200, "sglang", "fp8", None, _CAT, model_family(m))[0]
    kw = dict(tp=8, params=params, catalog=_CAT)
    plain = build_replica(m, H200, "fp8", "sglang", **kw).sm
    spec = build_replica(m, H200, "fp8", "sglang", spec_method="mtp", spec_tokens=2,
                         spec_workload="random", **kw).sm  # fmt: skip
    return plain, spec


def test_verify_step_of_the_h200_pair_by_hand():
    """The verify step of the H200 1k/1k concurrency-64 pair, term by term (scripts/
    moe_rows_accuracy.py --verify): B = 64 decoding sequences at the run's mean context
    (1 + 0.8) / 2 x (1024 + 1024 / 2) = 1382.4 tokens, K = 2, so 192 verify positions.

    * Routed experts touched per MoE layer (256 experts, top 8, all on each TP8 GPU):
      ``256 (1 - (1 - 8/256)^T)``; 0.96875^64 = exp(64 ln 0.96875) = exp(-2.03192) = 0.131089
      -> 222.44 experts; 0.96875^192 = 0.131089^3 = 0.0022527 -> 255.42. The routed weight
      read grows 255.42 / 222.44 = +14.8 %, the dense weights and the lm head are read once:
      the GEMMs stay weight-bound, so t_gemm grows by (dense + 255.42 E + head + 192 a) /
      (dense + 222.44 E + head + 64 a) only.
    * Attention: each context read once by its K + 1 queries (absorbed MLA); only the KV
      written for the 128 extra positions is added (memory-bound at this context).
    * TP all-reduce: the bytes of 192 tokens instead of 64 (the latency term once).
    * Overheads: the same 64 sequences, once per step.
    * Draft: one MTP pass over 192 positions + K - 1 = 1 pass over 64.
    The pair's measured speed-up, 1.078 at AL 2.17 (2 drafts at the PR #649 rate), says a
    verify iteration costs 2.17 / 1.078 = 2.01 plain ones; these terms give 1.30.
    """
    plain, spec = _h200_pair_step_models()
    assert plain.expected_experts(64) == pytest.approx(222.44, rel=2e-4)
    assert plain.expected_experts(192) == pytest.approx(255.42, rel=2e-4)
    ctx = 1.8 / 2 * (1024 + 512)
    assert ctx == pytest.approx(1382.4)
    B = 64
    p = plain.step(B, B, B, B * ctx, B * ctx)
    v = spec.step(B, B, B, B * ctx, B * ctx)
    assert bool(p.gemm_memory_bound) and bool(v.gemm_memory_bound)
    w = spec.dense_weight_bytes + spec.lm_head_bytes
    e, a = spec.expert_bytes, spec.act_bytes_per_token
    assert float(v.t_gemm_s) / float(p.t_gemm_s) == pytest.approx(
        (w + 255.42 * e + 192 * a) / (w + 222.44 * e + 64 * a), rel=2e-4
    )
    kv_bw = spec.bw_bytes_s * spec.params.kv_mem_eff  # the KV written for 128 more positions
    assert float(v.t_attn_s) - float(p.t_attn_s) == pytest.approx(
        spec.kv_bytes_per_token_layer * (spec.layers_full + spec.layers_sw) * 128 / kv_bw
    )
    link = spec.link_bytes_s * spec.params.comm_eff
    assert float(v.t_comm_s) - float(p.t_comm_s) == pytest.approx(
        spec.ring_factor * spec.comm_bytes_per_token * (192 - 64) / link
    )
    assert float(v.t_overhead_s) == pytest.approx(float(p.t_overhead_s))
    total = sum(float(getattr(v, t)) for t in ("t_gemm_s", "t_attn_s", "t_comm_s",
                                                "t_overhead_s", "t_draft_s"))  # fmt: skip
    assert float(v.time_s) == pytest.approx(total)
    ratio = float(v.time_s) / float(p.time_s)
    assert 1.2 < ratio < 1.4  # 1.30; the measurement implies 2.01 (xfail below)


@PROPS
@given(
    batch=st.integers(1, 512),
    ctx=st.integers(64, 16384),
    k=st.integers(1, 5),
    case=st.sampled_from(
        [("deepseek-v3", H200, "fp8", 8, "mtp"), ("llama-3.1-8b", H100, "bf16", 1, "eagle3")]
    ),  # fmt: skip
)
def test_verify_step_costs_between_one_and_k_plus_1_plain_steps(batch, ctx, k, case):
    """Property: a verify step of B sequences (without its draft passes) costs at least the
    plain step of B (it does the same work and more) and at most K + 1 plain steps (the
    weights, the KV reads and the fixed costs are paid once, not K + 1 times)."""
    model, gpu, prec, tp, method = case
    sm = step_model(model, gpu, prec, tp=tp, catalog=_CAT)
    m = _CAT.model_ref(model, None)
    vm = with_spec(sm, spec_decode(m, method, k, acceptance_length=1.5), _CAT)
    kk = vm.spec_tokens
    args = (batch, batch, batch, batch * ctx, batch * ctx)
    t0 = float(sm.step(*args).time_s)
    v = vm.step(*args)
    t1 = float(v.time_s) - float(v.t_draft_s)
    assert t0 <= t1 * (1 + 1e-12)
    assert t1 <= (kk + 1) * t0 * (1 + 1e-12)


def test_nvfp4_checkpoint_mtp_experts_are_bf16():
    # NVIDIA's FP4 DeepSeek-R1 (nvidia/DeepSeek-R1-0528-FP4-v2, loaded on Blackwell) keeps
    # the NextN module in bf16 (engine/speculative.MTP_16BIT_CHECKPOINTS): its routed experts
    # weigh 16 / 4.5 = 3.5556x the target's NVFP4 experts (4 bits + an 8-bit scale per 16
    # weights = 4.5 bits, models.yaml). DeepSeek-V3 has 58 MoE layers (61 - 3 dense), so one
    # draft layer's expert = the target's per-expert bytes over all layers / 58 x 3.5556.
    spec = SpecDecode(method="mtp", spec_tokens=2, acceptance_length=2.17)
    sm = step_model("deepseek-v3", "nvidia-b200", "fp4", tp=8, catalog=_CAT)
    d = draft_cost(sm, spec, _CAT)
    assert d.expert_bytes * 58 / sm.expert_bytes == pytest.approx(16 / 4.5, rel=1e-9)
    # the same model in fp8 on H200 (DeepSeek's own release): the target's bits, scale 1
    sm8 = step_model("deepseek-v3", H200, "fp8", tp=8, catalog=_CAT)
    assert draft_cost(sm8, spec, _CAT).expert_bytes * 58 == pytest.approx(sm8.expert_bytes)
    # the bf16 module costs time: the speculative step of the fp4 deployment is slower than
    # with the experts at the target's 4.5 bits (B = 16, 1k context), and AL 1 still never
    # speeds decoding up (the verify step is never cheaper than a plain step)
    ss = with_spec(sm, spec, _CAT)
    light = dataclasses.replace(
        ss, draft=dataclasses.replace(d, expert_bytes=d.expert_bytes * 4.5 / 16)
    )
    args = (16, 16, 16, 16 * 1024, 16 * 1024)
    assert ss.step_time(*args) > light.step_time(*args) > sm.step_time(*args)
