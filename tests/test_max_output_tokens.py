"""The clients' max_tokens (``workload.max_output_tokens``, default the answers' P99): what an
engine that reserves the answer's KV at admission (TensorRT-LLM's GUARANTEED_NO_EVICT,
SGLang's new_token_ratio; data/engine_policies.yaml) reserves for each request, in the
simulator (planner/serving/_phases.py ``reserved_blocks``) and the steady state's count of
sequences that fit. vLLM reserves nothing: the cap changes none of its answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_admission_reserve import _peak_decoders  # the same count of running decoders

from planner.errors import PlannerError
from planner.scenario import scenario_from_dict
from planner.serving import _engine
from planner.serving.replica import build_replica
from planner.serving.steady_state import _constants, shape_of_requests
from planner.workload.workload import Requests, Workload, make_requests


@pytest.fixture(scope="module")
def rep(catalog):
    return build_replica("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm", catalog=catalog)


def _burst(n, inp, out, max_new=0):
    """``n`` requests arriving at t = 0, no cached prefix, each sending ``max_new``."""
    z = np.zeros(n, np.int64)
    return Requests(
        np.zeros(n), np.full(n, inp, np.int64), np.full(n, out, np.int64), z, max_new_tokens=max_new
    )


def _wl(**kw) -> Workload:
    d = dict(traffic={"peak_rps": 1.0}, input_tokens=_fixed(1000), output_tokens=_fixed(300))
    return Workload.model_validate(d | kw)


def _fixed(n: int) -> dict:
    return {"kind": "fixed", "tokens": n}


# --------------------------------------------------------------------------- the simulator
def test_no_evict_reserves_the_clients_max_tokens(rep):
    """12 requests of 200 prompt + 300 answer tokens at t = 0, 16-token blocks, 600 blocks.

    TensorRT-LLM (f = 1), max_tokens = the answer (a benchmark client): ceil(500 / 16) = 32
    blocks each, 12 x 32 = 384 <= 600: all 12 decode at once. max_tokens = 4,096:
    ceil(4,296 / 16) = 269 blocks each, 2 x 269 = 538 <= 600 < 807 = 3 x 269: two at a
    time. vLLM (f = 0): a prompt takes ceil(200 / 16) = 13 blocks, 12 x 13 = 156 <= 594
    (600 less the watermark max(1, int(0.01 x 600)) = 6) and the full answers 384 <= 600:
    all 12 at once whatever the cap."""
    assert rep.engine.block_size_tokens == 16
    eng = dict(num_blocks=600, max_num_seqs=256, prefix_caching=False)
    trt, vll = (rep.with_engine(kv_reserve_fraction=f, **eng) for f in (1.0, 0.0))
    own = _engine._run_continuous(trt, _burst(12, 200, 300), None)
    cap = _engine._run_continuous(trt, _burst(12, 200, 300, 4096), None)
    assert _peak_decoders(own) == 12
    assert _peak_decoders(cap) == 2
    assert own.preemptions.sum() == cap.preemptions.sum() == 0
    assert np.mean(cap.first_token_s) > np.mean(own.first_token_s)
    # a cap below a request's own answer reserves that answer (the engine would have stopped
    # it there; a sample's tail beyond the P99 keeps its length)
    low = _engine._run_continuous(trt, _burst(12, 200, 300, 100), None)
    np.testing.assert_array_equal(low.first_token_s, own.first_token_s)
    a = _engine._run_continuous(vll, _burst(12, 200, 300), None)
    b = _engine._run_continuous(vll, _burst(12, 200, 300, 4096), None)
    assert _peak_decoders(a) == 12
    np.testing.assert_array_equal(a.first_token_s, b.first_token_s)
    np.testing.assert_array_equal(a.finish_s, b.finish_s)


@settings(max_examples=12, deadline=None)
@given(
    f=st.sampled_from([0.098, 0.5, 1.0]),
    inp=st.integers(20, 400),
    out=st.integers(10, 300),
    cap=st.integers(1, 2000),
    more=st.integers(1, 2000),
    blocks=st.integers(60, 300),
)
def test_a_larger_cap_never_admits_more_nor_lowers_ttft(rep, f, inp, out, cap, more, blocks):
    """Property: with a larger max_tokens no more requests decode at once and the mean TTFT
    of a burst does not drop (an engine that reserves); vLLM's runs are unchanged."""
    eng = dict(num_blocks=blocks, max_num_seqs=256, prefix_caching=False)
    r = rep.with_engine(kv_reserve_fraction=f, **eng)
    lo = _engine._run_continuous(r, _burst(24, inp, out, cap), None)
    hi = _engine._run_continuous(r, _burst(24, inp, out, cap + more), None)
    assert _peak_decoders(hi) <= _peak_decoders(lo)
    # mean TTFT within 1 %: not exact, a batching anomaly (test_admission_reserve.py's
    # property found one for the reserved fraction): fewer decoders make shorter steps, so a
    # later prompt can reach its first token a little sooner
    assert np.mean(hi.first_token_s) >= np.mean(lo.first_token_s) * 0.99
    v = rep.with_engine(kv_reserve_fraction=0.0, **eng)
    a = _engine._run_continuous(v, _burst(24, inp, out, cap), None)
    b = _engine._run_continuous(v, _burst(24, inp, out, cap + more), None)
    np.testing.assert_array_equal(a.finish_s, b.finish_s)


# --------------------------------------------------------------------------- steady state
def test_steady_state_fits_fewer_sequences_with_a_large_cap(rep):
    """10,000 blocks of 16 tokens = 160,000 tokens; 1,000 prompt + 300 answer tokens, running
    context 1,150. TensorRT-LLM reserving the answer (max_tokens = 300): max(1,150, 1,300) +
    16 / 2 = 1,308 tokens a sequence, 160,000 / 1,308 = 122.3 fit. max_tokens = 4,096:
    1,000 + 4,096 + 8 = 5,104 tokens, 160,000 / 5,104 = 31.35 fit. vLLM: 1,150 + 8 = 1,158,
    160,000 / 1,158 = 138.2 either way."""
    kw = dict(num_blocks=10_000, max_num_seqs=10**6)
    trt, vll = (rep.with_engine(kv_reserve_fraction=f, **kw) for f in (1.0, 0.0))
    own, cap = (1000.0, 300.0, 0.0, 1150.0), (1000.0, 300.0, 0.0, 1150.0, 4096.0)
    assert _constants(trt, own)[3] == pytest.approx(160_000 / 1308)
    assert _constants(trt, cap)[3] == pytest.approx(160_000 / 5104)
    assert _constants(vll, own)[3] == _constants(vll, cap)[3] == pytest.approx(160_000 / 1158)


def test_the_shape_takes_the_larger_of_answer_and_cap():
    """Answers 100 and 500 with max_tokens 300: reserved max(100, 300) = 300 and 500, mean
    400 (the answers' mean stays 300)."""
    r = make_requests([0.0, 0.0], [10, 10], [100, 500], max_new_tokens=300)
    sh = shape_of_requests(r)
    assert sh[1] == 300.0 and sh[4] == 400.0
    assert shape_of_requests(make_requests([0.0], [10], [100]))[4] == 100.0  # 0: own length


@settings(max_examples=8, deadline=None)
@given(cap=st.integers(300, 8000), more=st.integers(1, 8000))
def test_steady_capacity_never_rises_with_the_cap(catalog, cap, more):
    """Property: the saturation rate and the sequences that fit never rise with max_tokens
    (TensorRT-LLM); vLLM's are the same at any cap."""
    from planner.serving.steady_state import steady_state

    for fw in ("trtllm", "vllm"):
        r = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "bf16", fw, catalog=catalog)
        lo = steady_state(r, (1000.0, 300.0, 0.0, 1150.0, float(cap)), 1.0)
        hi = steady_state(r, (1000.0, 300.0, 0.0, 1150.0, float(cap + more)), 1.0)
        assert hi.max_concurrency <= lo.max_concurrency
        assert hi.saturation_rps <= lo.saturation_rps
        if fw == "vllm":
            assert hi.saturation_rps == lo.saturation_rps


# --------------------------------------------------------------------------- the workload
def test_default_is_the_p99_and_is_stated():
    """A fixed answer of 300 tokens: P99 = 300, sent as every request's max_tokens."""
    w = _wl()
    assert w.max_output_tokens is None and w.max_new_tokens() == 300
    assert "300" in w.max_output_assumption() and "max_tokens" in w.max_output_assumption()
    r = w.sample_requests(50, np.random.default_rng(0))
    assert r.max_new_tokens == 300
    w2 = _wl(max_output_tokens=4096)
    assert w2.max_new_tokens() == 4096 and w2.max_output_assumption() is None
    assert w2.sample_requests(50, np.random.default_rng(0)).max_new_tokens == 4096
    # a context limit of 2,048 caps what a request can ask for: 2,047
    r3 = w2.sample_requests(50, np.random.default_rng(0), context_limit=2048)
    assert r3.max_new_tokens == 2047


@pytest.mark.parametrize("bad", [0, -5])
def test_a_cap_below_one_is_a_one_line_error(bad):
    d = {"model": "llama-3.1-8b", "workload": {"preset": "chat", "max_output_tokens": bad}}
    with pytest.raises(PlannerError, match="max_output_tokens") as e:
        scenario_from_dict(d | {"slo": {"ttft": {"max_s": 1.0}}}, where="x.yaml")
    assert "\n" not in str(e.value)


def test_a_cap_below_the_p99_is_a_one_line_error():
    """Answers of 300 tokens cannot come from clients that send max_tokens 200."""
    d = {
        "model": "llama-3.1-8b",
        "workload": {
            "traffic": {"peak_rps": 1.0},
            "input_tokens": _fixed(1000),
            "output_tokens": _fixed(300),
            "max_output_tokens": 200,
        },
        "slo": {"ttft": {"max_s": 1.0}},
    }
    with pytest.raises(PlannerError, match="max_output_tokens 200 is below the answers' P99"):
        scenario_from_dict(d, where="x.yaml")
    d["workload"]["max_output_tokens"] = 300  # the P99 itself is allowed
    assert scenario_from_dict(d, where="x.yaml").workload.max_output_tokens == 300


# --------------------------------------------------------------------------- the CLI
CHAT = str(__import__("pathlib").Path(__file__).resolve().parent.parent / "examples/chat-8b.yaml")


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["simulate", CHAT, "--max-output-tokens", "0"], "--max-output-tokens"),
        (["capacity", CHAT, "--max-output-tokens", "-3"], "--max-output-tokens"),
        (["recommend", CHAT, "--max-output-tokens", "0"], "--max-output-tokens"),
        # the chat preset's answers reach 1,702 tokens at the P99 (rounded up)
        (["simulate", CHAT, "--max-output-tokens", "100"], "max_output_tokens 100 is below"),
        (["recommend", CHAT, "--max-output-tokens", "100"], "max_output_tokens 100 is below"),
    ],
)
def test_bad_flags_are_one_line_errors(capsys, argv, msg):
    from planner.cli.main import main

    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert msg in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_simulate_states_the_assumed_cap_and_takes_the_flag(capsys):
    """TensorRT-LLM reserves: the assumed P99 (1,702 tokens for the chat preset) is listed
    among the assumptions; with --max-output-tokens it is the user's, not listed. vLLM
    reserves nothing: no line. The chat preset's answers: lognormal, mean 338, p90 700; with
    z90 = 1.28155, z99 = 2.32635: s^2 / 2 - z90 s + ln(700 / 338) = 0 gives s = 1.28155 -
    sqrt(1.28155^2 - 2 x 0.72800) = 0.84984, mu = ln 338 - s^2 / 2 = 5.46194, P99 =
    exp(mu + z99 s) = exp(7.43897) = 1,701.2, sent as 1,702."""
    import json

    from planner.cli.main import main

    base = ["simulate", CHAT, "--requests", "200", "--rate", "5", "--format", "json"]
    runs = {}
    for name, extra in (
        ("trt", ["--framework", "trtllm"]),
        ("trt_cap", ["--framework", "trtllm", "--max-output-tokens", "4096"]),
        ("vllm", []),
    ):
        assert main(base + extra) == 0
        runs[name] = json.loads(capsys.readouterr().out)["assumptions"]
    assert any("max_tokens" in a and "1,702" in a for a in runs["trt"])
    assert not any("max_tokens = the answers' P99" in a for a in runs["trt_cap"])
    assert not any("max_tokens = the answers' P99" in a for a in runs["vllm"])
