"""KV reserved at admission per engine policy (data/engine_policies.yaml,
planner/catalog/engine_policies.py; applied in planner/serving/_phases.py ``admit`` /
``decode_only`` and the steady state's count of sequences that fit): TensorRT-LLM's
GUARANTEED_NO_EVICT reserves a request's prompt and whole answer, SGLang its decayed
new_token_ratio of the answer, vLLM nothing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog.engine_policies import _file, admission_policies, kv_reserve_fraction
from planner.errors import PlannerError
from planner.serving import _engine
from planner.serving.replica import build_replica
from planner.serving.steady_state import _constants
from planner.workload.workload import Requests


@pytest.fixture(scope="module")
def rep(catalog):
    return build_replica("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm", catalog=catalog)


def _burst(n, inp, out):
    """``n`` requests arriving at t = 0, no cached prefix."""
    z = np.zeros(n, np.int64)
    return Requests(np.zeros(n), np.full(n, inp, np.int64), np.full(n, out, np.int64), z)


def test_records_are_sourced_and_read_per_framework():
    pol = admission_policies()
    assert pol["trtllm"].policy == "GUARANTEED_NO_EVICT"
    assert kv_reserve_fraction("trtllm") == 1.0
    # SGLang: SGLANG_INIT_NEW_TOKEN_RATIO 0.7 x SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR 0.14 = 0.098
    assert kv_reserve_fraction("sglang") == pytest.approx(0.7 * 0.14)
    assert kv_reserve_fraction("vllm") == 0.0
    assert kv_reserve_fraction("tgi") == 0.0  # no record: nothing reserved
    assert kv_reserve_fraction(None) == 0.0
    for r in pol.values():
        assert len(r.source) > 50 and r.as_of.year >= 2026
    # NVIDIA's MLPerf harness sets batch_scheduler_policy max_util (MAX_UTILIZATION)
    assert kv_reserve_fraction("trtllm", "MLPerf Inference v6.0 DeepSeek-R1") == 0.0
    assert kv_reserve_fraction("trtllm", "dstack benchmark: DeepSeek-R1 on 8xMI300X") == 1.0
    assert kv_reserve_fraction("sglang", "MLPerf Inference v6.0 DeepSeek-R1") == 0.098


def test_a_duplicate_record_is_a_one_line_error(tmp_path):
    rec = (
        "  - framework: trtllm\n    policy: GUARANTEED_NO_EVICT\n    kv_reserve_fraction: 1.0\n"
        "    source: somewhere\n    as_of: 2026-12-07\n"
    )
    (tmp_path / "engine_policies.yaml").write_text("policies:\n" + rec + rec)
    with pytest.raises(PlannerError, match="two admission policies for 'trtllm'"):
        admission_policies(str(tmp_path))
    (tmp_path / "engine_policies.yaml").write_text("policies:\n" + rec.replace("1.0", "1.5"))
    _file.cache_clear()
    with pytest.raises(PlannerError, match="kv_reserve_fraction"):
        admission_policies(str(tmp_path))
    _file.cache_clear()


def test_build_replica_takes_the_frameworks_policy(catalog):
    trt = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "trtllm", catalog=catalog)
    vll = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm", catalog=catalog)
    assert trt.engine.kv_reserve_fraction == 1.0
    assert vll.engine.kv_reserve_fraction == 0.0


def test_no_evict_admits_what_fits_to_completion(rep):
    """9 requests of 100 prompt + 60 answer tokens at t = 0, 16-token blocks, a pool of 35.

    Reserving the whole answer (f = 1): ceil((100 + 60) / 16) = 10 blocks each; 3 x 10 = 30
    <= 35 < 40, so 3 run at once and the other 6 wait for them to finish: three waves, no
    preemption. Reserving nothing (f = 0, vLLM): a prompt takes ceil(100 / 16) = 7 blocks and
    35 - 1 (watermark, max(1, int(0.01 x 35))) = 34 >= 4 x 7 = 28, so 4 start; at 60 tokens
    of answer they need 4 x 10 = 40 > 35 blocks and one is preempted."""
    bs = rep.engine.block_size_tokens
    assert bs == 16
    eng = dict(num_blocks=35, max_num_seqs=256, prefix_caching=False)
    reqs = _burst(9, 100, 60)
    res = _engine._run_continuous(
        rep.with_engine(kv_reserve_fraction=1.0, **eng), reqs.copy(), None
    )
    first, fin = res.first_token_s, res.finish_s
    assert res.preemptions.sum() == 0
    for w in range(3):
        wave = slice(3 * w, 3 * w + 3)
        assert np.unique(first[wave]).size == 1  # the three of a wave start together
        assert np.unique(fin[wave]).size == 1
        if w:  # ... after the previous wave finished
            assert first[3 * w] > fin[3 * w - 1]
    free = _engine._run_continuous(
        rep.with_engine(kv_reserve_fraction=0.0, **eng), reqs.copy(), None
    )
    assert np.unique(free.first_token_s[:4]).size == 1 and free.preemptions.sum() > 0
    assert free.first_token_s[3] < first[3]


def _peak_decoders(res) -> int:
    """Most requests between their first and last token at once."""
    ev = sorted([(t, 1) for t in res.first_token_s] + [(t, -1) for t in res.finish_s])
    n = best = 0
    for _, d in ev:
        n += d
        best = max(best, n)
    return best


@settings(max_examples=12, deadline=None)
@given(
    f_lo=st.sampled_from([0.0, 0.1, 0.5]),
    df=st.sampled_from([0.1, 0.5, 1.0]),
    inp=st.integers(20, 400),
    out=st.integers(10, 300),
    blocks=st.integers(40, 160),
)
def test_a_larger_reservation_never_admits_more_nor_lowers_ttft(rep, f_lo, df, inp, out, blocks):
    """Property: with more of the answer reserved, no more requests decode at once and the
    mean TTFT of a burst does not drop."""
    f_hi = min(1.0, f_lo + df)
    eng = dict(num_blocks=blocks, max_num_seqs=256, prefix_caching=False)
    reqs = _burst(24, inp, out)
    lo = _engine._run_continuous(
        rep.with_engine(kv_reserve_fraction=f_lo, **eng), reqs.copy(), None
    )
    hi = _engine._run_continuous(
        rep.with_engine(kv_reserve_fraction=f_hi, **eng), reqs.copy(), None
    )
    assert _peak_decoders(hi) <= _peak_decoders(lo)
    # mean TTFT within 1 %: not exact, a batching anomaly (hypothesis found one: 2.3006 s
    # vs 2.3015 s, 24 requests, 0.1 -> 0.6 reserved): fewer decoders make shorter steps, so a
    # later prompt can reach its first token a little sooner; a larger reservation never
    # makes the burst's first tokens come meaningfully earlier
    assert np.mean(hi.first_token_s) >= np.mean(lo.first_token_s) * 0.99


def test_steady_state_counts_the_reserved_tokens(rep):
    """1,000 blocks of 16 tokens = 16,000 tokens; requests of 1,000 prompt + 1,000 answer
    tokens, mean running context 1,500. Reserving nothing, a sequence holds 1,500 + 16 / 2 =
    1,508 tokens: 16,000 / 1,508 = 10.61 fit. Reserving the answer (f = 1): 2,000 + 8 =
    2,008 tokens: 16,000 / 2,008 = 7.968. Half of it: max(1,500, 1,000 + 500) + 8 = 1,508."""
    shape = (1000.0, 1000.0, 0.0, 1500.0)
    kw = dict(num_blocks=1000, max_num_seqs=10**6)
    n = {f: _constants(rep.with_engine(kv_reserve_fraction=f, **kw), shape)[3] for f in (0, 0.5, 1)}
    assert n[0] == pytest.approx(16000 / 1508)
    assert n[0.5] == pytest.approx(16000 / 1508)
    assert n[1] == pytest.approx(16000 / 2008)
