"""The xPyD comparison of ``planner recommend`` does less work for the same rows
(planner/recommend/disagg.py ``compare_disagg``, issue 29's MoE speed target): a pair of pools
that :func:`cannot_beat` the best so far is not sized, a pool's runs are remembered across
the pairs of one option (``pool_rate``'s ``memo``), and only a pair that becomes the best
has its group simulated. Each is checked against ``exhaustive=True``, which sizes and
verifies every pair as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import planner.recommend.disagg as rd
import planner.serving.disagg_sizing as ds
from planner.catalog.catalog import load_catalog
from planner.recommend.disagg import cannot_beat, compare_disagg
from planner.scenario import load_scenario
from planner.serving.disagg import Disaggregated, Pool, build_disagg
from planner.serving.disagg_sizing import DisaggSizing, pool_rate, size_disagg, verify_sizing

ROOT = Path(__file__).resolve().parents[1]
CAT = load_catalog()
SC = load_scenario(ROOT / "examples/moe-r1.yaml")
NEED = 10.0 * 1.2  # peak 10 req/s x (1 + headroom 0.2), as the CLI passes it

#: moe-r1's first and third recommendations (main 049d71c): a TP2 B300 option, whose
#: pairs include wider DEP4 / DEP8 decode pools, and a DEP8 MI300X one
RECS = [
    {"gpu": "nvidia-b300", "framework": "trtllm", "precision": "fp4", "kv_precision": "fp8",
     "tp": 2, "pp": 1, "ep": 1, "attention_dp": 1, "replicas": 1, "num_gpus": 2,
     "usd_per_hour": 15.78, "layout": "TP2",
     "reproduce": "--max-num-seqs 2048 --max-num-batched-tokens 8192"},
    {"gpu": "amd-mi300x", "framework": "vllm", "precision": "fp8", "kv_precision": "fp8",
     "tp": 1, "pp": 1, "ep": 8, "attention_dp": 8, "replicas": 1, "num_gpus": 8,
     "usd_per_hour": 15.92, "layout": "DEP8",
     "reproduce": "--max-num-seqs 1024 --max-num-batched-tokens 8192"},
]  # fmt: skip


def _compare(monkeypatch, exhaustive: bool) -> tuple[list[dict], dict[str, int], list]:
    """compare_disagg on RECS, with its size_disagg calls, group simulations and pool
    runs counted, and each sizing kept with its pools."""
    counts = {"size": 0, "group": 0, "runs": 0}
    sized = []
    size0, group0, run0 = rd.size_disagg, ds.simulate_disagg, ds.run

    def size(d, *a, **k):
        counts["size"] += 1
        s = size0(d, *a, **k)
        sized.append((d, s))
        return s

    def group(*a, **k):
        counts["group"] += 1
        return group0(*a, **k)

    def runs(*a, **k):
        counts["runs"] += 1
        return run0(*a, **k)

    monkeypatch.setattr(rd, "size_disagg", size)
    monkeypatch.setattr(ds, "simulate_disagg", group)
    monkeypatch.setattr(ds, "run", runs)
    rows = compare_disagg(
        SC.model, SC.workload, SC.slo, RECS, NEED, catalog=CAT, engine=SC.serving.kwargs(),
        exhaustive=exhaustive,
    )  # fmt: skip
    monkeypatch.undo()
    return rows, counts, sized


@pytest.fixture(scope="module")
def both():
    mp = pytest.MonkeyPatch()
    try:
        return _compare(mp, exhaustive=True), _compare(mp, exhaustive=False)
    finally:
        mp.undo()


def test_same_rows_as_every_pair_sized_and_verified(both):
    (ex_rows, _, _), (rows, _, _) = both
    assert rows == ex_rows
    # one row per GPU; with the profile of 049d71c: B300 1P(TP2)+1D(DEP2) on 4 GPUs,
    # MI300X 1P(DEP8)+1D(DEP8) on 16
    assert [r["gpu"] for r in rows] == ["nvidia-b300", "amd-mi300x"]
    assert all(r["check_slo_ok"] is not None for r in rows)  # the chosen pair was verified


def test_less_work(both):
    (_, ex, sized), (_, fast, _) = both
    # B300 TP2: 9 pairs of width 2 + 4 with a DEP4 or DEP8 decode pool; MI300X DEP8: 4 pairs
    assert ex["size"] == 13 + 4
    assert ex["group"] == ex["size"]  # exhaustive: every sized pair's group simulated
    # the pairs the bound skips, replayed on the exhaustive sizings in their order: one
    # prefill + one decode replica above the fewest GPUs of a pair sized so far (the best
    # so far has the fewest: GPUs are the first term of the choice). With the profile of
    # 049d71c: TP2 / DEP2 prefill + DEP4 (>= 6) or DEP8 (>= 10) decode against 4 GPUs
    fewest: dict[str, float] = {}
    skipped = 0
    for d, s in sized:
        gpu = d.spec.prefill.gpu
        if d.prefill.num_gpus + d.decode.num_gpus > fewest.get(gpu, float("inf")):
            skipped += 1
        else:
            fewest[gpu] = min(fewest.get(gpu, float("inf")), s.num_gpus)
    assert skipped >= 1
    assert fast["size"] == ex["size"] - skipped
    # one group simulation per new best (each option's first pair, and any pair that beats
    # it), never more than the pairs sized
    assert 2 <= fast["group"] < fast["size"]
    # the pools' repeated runs are read back: far fewer runs
    assert fast["runs"] < ex["runs"] / 2


def test_bound_holds_on_every_sized_pair(both):
    """``cannot_beat``'s premise: a sizing never needs fewer GPUs than one replica of
    each pool (``groups``, ``x``, ``y`` >= 1)."""
    (_, _, sized), _ = both
    assert len(sized) == 17
    for d, s in sized:
        assert s.groups >= 1 and s.x >= 1 and s.y >= 1
        assert s.num_gpus == s.groups * (s.x * d.prefill.num_gpus + s.y * d.decode.num_gpus)
        assert s.num_gpus >= d.prefill.num_gpus + d.decode.num_gpus
        assert not cannot_beat(d, s)  # a sizing never "cannot beat" itself


def _sizing(num_gpus: int) -> DisaggSizing:
    return DisaggSizing(1.0, 1.0, 1, 1, 1.0, 1, num_gpus, 0.0, 0.0, 1.0)


def test_cannot_beat_arithmetic():
    pre = Pool(gpu="nvidia-b300", framework="trtllm", precision="fp4", tp=2)
    dep4 = Pool(gpu="nvidia-b300", framework="trtllm", precision="fp4", tp=1, ep=4,
                attention_dp=4)  # fmt: skip
    d = build_disagg(SC.model, Disaggregated(prefill=pre, decode=dep4), catalog=CAT)
    assert (d.prefill.num_gpus, d.decode.num_gpus) == (2, 4)
    # at least 2 + 4 = 6 GPUs: more than a best of 4 or 5, not more than 6 (a tie may win on
    # rate per GPU, so it is sized)
    assert cannot_beat(d, _sizing(4)) and cannot_beat(d, _sizing(5))
    assert not cannot_beat(d, _sizing(6))


def test_pool_rate_memo_same_answer_no_rerun(monkeypatch):
    d = build_disagg(
        SC.model,
        Disaggregated(prefill=Pool(gpu="nvidia-b300", framework="trtllm", precision="fp4",
                                   tp=2),
                      decode=Pool(gpu="nvidia-b300", framework="trtllm", precision="fp4",
                                  tp=1, ep=2, attention_dp=2)),
        catalog=CAT,
    )  # fmt: skip
    n = [0]
    run0 = ds.run

    def runs(*a, **k):
        n[0] += 1
        return run0(*a, **k)

    monkeypatch.setattr(ds, "run", runs)

    reqs = SC.workload.sample_requests(300, np.random.default_rng(0), 1.0)
    memo: dict = {}
    for i, budget in enumerate((4.70, 4.70, 4.72, 1.0)):  # a prefill pool's TTFT budget
        checks = [("ttft", 99.0, budget)]  # differs between pairs
        n[0] = 0
        plain = pool_rate(d.prefill, reqs, checks)
        runs_plain = n[0]
        n[0] = 0
        kept = pool_rate(d.prefill, reqs, checks, memo=memo)
        assert kept == plain
        if i == 0:
            assert n[0] == runs_plain > 3  # every run made once, and kept
        elif i == 1:
            assert n[0] == 0  # the same call: every run read back
        else:
            assert n[0] < runs_plain  # the rates both paths share are read back
    # another pool never reads the first pool's runs
    n[0] = 0
    other = pool_rate(d.decode, reqs, [("ttft", 99.0, 4.7)], memo=memo)
    assert n[0] > 0 and other == pool_rate(d.decode, reqs, [("ttft", 99.0, 4.7)])


def test_verify_sizing_is_size_disagg_check():
    d = build_disagg(
        SC.model,
        Disaggregated(prefill=Pool(gpu="nvidia-b300", framework="trtllm", precision="fp4",
                                   tp=2),
                      decode=Pool(gpu="nvidia-b300", framework="trtllm", precision="fp4",
                                  tp=2)),
        catalog=CAT,
    )  # fmt: skip
    kw = dict(n_requests=300, seed=3)
    full = size_disagg(d, SC.workload, SC.slo, NEED, **kw)
    bare = size_disagg(d, SC.workload, SC.slo, NEED, verify=False, **kw)
    assert bare.check == {} and full.check
    assert verify_sizing(d, SC.workload, SC.slo, NEED, bare, **kw) == full
