"""Attention-DP balance (issue 29): a deployment says whether the engine spreads prompt work
over its attention data-parallel ranks (TensorRT-LLM ``attention_dp_config.enable_balance``),
the step then leaves no prompt work on one rank; rows read the setting from their notes, and
the knob travels from the scenario to the replica and into the emitted extra LLM-API YAML."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.benchmarks.schema import adp_balance_setting, row_parallel_layout
from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.layout import ADP_BALANCE_DEFAULT, check_framework_layout, layout_of
from planner.deploy import flags as F
from planner.deploy.serve import Knobs, launch
from planner.engine.adp import busiest_rank_extra, prompt_share
from planner.engine.step import step_model
from planner.errors import PlannerError
from planner.scenario import scenario_from_dict

ROOT = Path(__file__).resolve().parent.parent
CAT = load_catalog()
KW = dict(model="deepseek-v3", gpu="nvidia-b200", precision="fp8", catalog=CAT)


def _dep8(balance: bool | None, u: float = 1.0):
    return step_model(
        **KW,
        layout=layout_of(1, 1, 8, 8, attention_dp_balance=balance),
        params=PRIOR.with_(adp_prompt_imbalance=u),
    )


#: DEP8, 64 decoding sequences per rank (contexts 1,000) and one fresh 1,024-token prompt:
#: new_tokens 512 + 1,024 = 1,536; sequences 513; logits 513; KV reads 512 x 1,000 + 1,024 =
#: 513,024; query-key pairs 512,000 + 1,024 x 1,025 / 2 = 1,036,800
ONE_PROMPT = (1536, 513, 513, 513_024, 1_036_800)


def test_balance_leaves_no_prompt_work_on_one_rank_hand_derived():
    """Unbalanced (the engine default, u = 1): P = 1,536 - 513 = 1,023 prompt tokens, one
    chunk (n_eff = 2 X / P = 2 x 523,776 / 1,023 = 1,024 >= P), so the busiest rank holds all
    of it: extra tokens (8 - 1) x 1,023 = 7,161, i.e. (1,536 + 7,161) / 8 = 1,087.125 tokens on
    the busiest rank (513 / 8 = 64.125 one-token sequences + the 1,023 prompt tokens) instead
    of 1,536 / 8 = 192. Balanced
    (enable_balance): u = 0, no extra work, every rank runs 192."""
    T, seqs, _, kv, pairs = ONE_PROMPT
    off, on = _dep8(None), _dep8(True)
    assert not ADP_BALANCE_DEFAULT and not off.adp_balanced and on.adp_balanced
    assert prompt_share(off.adp_balanced, off.params) == 1.0
    assert prompt_share(on.adp_balanced, on.params) == 0.0
    dT, _ = busiest_rank_extra(8, prompt_share(False, off.params), T, seqs, kv, pairs)
    assert (T + float(dT)) / 8 == pytest.approx(1_087.125)
    dT0, dX0 = busiest_rank_extra(8, prompt_share(True, on.params), T, seqs, kv, pairs)
    assert (T + float(dT0)) / 8 == 192.0 and float(dX0) == 0.0
    # the step: the balanced one is the share-0 step, and faster than the unbalanced one
    share0 = _dep8(False, u=0.0)
    assert on.step(*ONE_PROMPT).time_s == share0.step(*ONE_PROMPT).time_s
    assert on.step_time(*ONE_PROMPT) == pytest.approx(share0.step_time(*ONE_PROMPT), rel=1e-12)
    assert on.step(*ONE_PROMPT).time_s < off.step(*ONE_PROMPT).time_s


@settings(max_examples=40, deadline=None)
@given(
    dec=st.integers(0, 2_000),
    chunks=st.lists(st.integers(1, 8_192), min_size=0, max_size=6),
    ctx=st.integers(1, 8_000),
    u=st.floats(0.0, 1.0),
)
def test_balance_never_slows_a_step_and_equals_share_zero(dec, chunks, ctx, u):
    """Any step (``dec`` decoders of context ``ctx``, fresh prompt chunks): the balanced
    layout's step equals the unbalanced layout's at share 0 and is never slower than the
    unbalanced one at any share u (vector and scalar paths)."""
    if dec + len(chunks) == 0:
        return
    T = dec + sum(chunks)
    seqs = dec + len(chunks)
    kv = dec * ctx + sum(chunks)
    pairs = dec * ctx + sum(n * (n + 1) // 2 for n in chunks)
    args = (T, seqs, seqs, kv, pairs)
    on, off, zero = _dep8(True, u), _dep8(False, u), _dep8(False, 0.0)
    t_on = on.step(*args).time_s
    assert t_on == zero.step(*args).time_s
    assert t_on <= off.step(*args).time_s * (1 + 1e-12)
    assert on.step_time(*args) == pytest.approx(zero.step_time(*args), rel=1e-12)
    assert on.step_time(*args) <= off.step_time(*args) * (1 + 1e-12)


def test_rows_read_the_balance_from_their_notes():
    """``enable_balance: true`` (a server YAML, a harness-flags note) -> balanced; ``false``
    -> explicitly off; silent -> the engine default (None, off); a plain layout ignores it."""
    assert adp_balance_setting("attention_dp_config: enable_balance: true, timeout_iters: 60")
    assert adp_balance_setting('{"enable_balance": false}') is False
    assert adp_balance_setting("enable_attention_dp: true, no attention_dp_config") is None
    row = {"tp": "1", "ep": "8", "attention_dp": "8", "n_gpus": "8"}
    tagged = {**row, "notes": "harness flags (x): enable_balance: true, timeout_iters: 60"}
    assert row_parallel_layout(tagged).attention_dp_balance is True
    assert row_parallel_layout({**row, "notes": ""}).attention_dp_balance is None
    plain = {"tp": "8", "n_gpus": "8", "notes": "enable_balance: true"}
    assert row_parallel_layout(plain).attention_dp_balance is None


def test_perf_overview_rows_carry_the_pages_config():
    """TensorRT-LLM perf-overview's llm_options.yml: DeepSeek R1 with ``attention_dp_config:
    enable_balance: true``, GPT-OSS and Qwen3 MoE with attention DP only (balance off): every
    attention-DP row of the page reads so."""
    seen = {True: set(), False: set()}
    with (ROOT / "data/benchmarks/public_nvidia.csv").open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if "perf-overview" not in r["source"] or (r["attention_dp"] or "1") == "1":
                continue
            bal = row_parallel_layout(r).balanced
            assert bal == (r["model"] == "deepseek-v3"), r["id"]
            seen[bal].add(r["model"])
    assert seen[True] == {"deepseek-v3"}
    assert {"qwen3-235b-a22b", "gpt-oss-120b"} <= seen[False]


def test_bad_balance_settings_are_one_line_errors():
    with pytest.raises(PlannerError, match="attention_dp_balance: .*attention_dp=1"):
        layout_of(8, attention_dp_balance=True)
    with pytest.raises(PlannerError, match="attention_dp_balance must be true or false"):
        layout_of(1, 1, 8, 8, attention_dp_balance="yes")
    with pytest.raises(PlannerError, match="attention_dp_balance: SGLang"):
        check_framework_layout(CAT.framework("sglang"), layout_of(1, 1, 8, 8, None, True))
    # explicitly off is allowed everywhere (it is every engine's default)
    check_framework_layout(CAT.framework("sglang"), layout_of(1, 1, 8, 8, None, False))


def test_the_knob_round_trips_scenario_replica_yaml():
    """``deployment: {attention_dp_balance: true}`` -> the replica's layout and step model ->
    ``attention_dp_config: {enable_balance: true}`` in extra_llm_api_options.yaml; unset, the
    YAML leaves attention_dp_config out (the engine default)."""
    dep = dict(gpu="nvidia-b200", framework="trtllm", precision="fp4", tp=1, ep=8,
               attention_dp=8)  # fmt: skip
    base = {
        "model": "deepseek-v3",
        "workload": {
            "traffic": {"peak_rps": 1},
            "input_tokens": {"kind": "fixed", "tokens": 1000},
            "output_tokens": {"kind": "fixed", "tokens": 1000},
        },
    }
    res = F.resolve("trtllm", None, "test")
    for bal, want in ((True, {"enable_balance": True}), (None, None)):
        d = dep if bal is None else {**dep, "attention_dp_balance": bal}
        sc = scenario_from_dict({**base, "deployment": d})
        rep = sc.build_replica(catalog=CAT)
        assert rep.the_layout.attention_dp_balance is bal
        assert rep.sm.adp_balanced is bool(bal)
        k = Knobs(model_id="deepseek-v3", hf_repo=None, framework="trtllm", precision="fp4",
                  kv_precision="fp8", layout=rep.the_layout)  # fmt: skip
        extra = yaml.safe_load(launch(k, res).files["extra_llm_api_options.yaml"])
        assert extra["enable_attention_dp"] is True
        assert extra.get("attention_dp_config") == want
    # the command line overrides the file: --no-attention-dp-balance
    sc = scenario_from_dict({**base, "deployment": {**dep, "attention_dp_balance": True}})
    assert sc.resolve_deployment(attention_dp_balance=False).layout.attention_dp_balance is False
