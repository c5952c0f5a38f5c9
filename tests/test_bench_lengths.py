"""Random-dataset request lengths of benchmark rows (``planner/benchmarks/random_lengths.py``)."""

from __future__ import annotations

import collections
import csv
import re

import numpy as np
import pytest

from planner.benchmarks.random_lengths import (
    random_dataset_lengths,
    random_dataset_tags,
    sglang_random_bounds,
)
from planner.benchmarks.serving_rows import predict_serving_row, serving_row_details
from planner.catalog import DATA_DIR, PRIOR
from planner.workload.lengths import UniformLength

CSV = DATA_DIR / "benchmarks" / "public_nvidia.csv"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    with open(CSV, newline="") as f:
        return list(csv.DictReader(f))


def _tagged(rows):
    return [r for r in rows if not r["isl"] and "random_input_len=" in r["notes"]]


# --------------------------------------------------------------------------- the rule
def test_sglang_bounds_hand_derived():
    # sglang.bench_serving: input randint(max(int(L*r), 1), L + 1), output randint(int(O*r), O + 1)
    # L = 1000, r = 0:   input [max(0, 1), 1000] = [1, 1000]; output [0, 1000]
    assert sglang_random_bounds(1000, 0.0, is_input=True) == (1, 1000)
    assert sglang_random_bounds(1000, 0.0, is_input=False) == (0, 1000)
    # L = 1000, r = 0.5: int(500.0) = 500 -> [500, 1000] for both
    assert sglang_random_bounds(1000, 0.5, is_input=True) == (500, 1000)
    assert sglang_random_bounds(1000, 0.5, is_input=False) == (500, 1000)
    # L = 1024, r = 0.3: int(307.2) = 307 (floor) -> [307, 1024]
    assert sglang_random_bounds(1024, 0.3, is_input=False) == (307, 1024)
    # r = 1: fixed length [L, L]
    assert sglang_random_bounds(8192, 1.0, is_input=True) == (8192, 8192)


def _row(notes: str, framework: str = "sglang", version: str = "0.5.6") -> dict[str, str]:
    return {"notes": notes, "framework": framework, "framework_version": version}


SGL = "python -m sglang.bench_serving --dataset-name random; "


def test_uniform_means_hand_derived():
    # r = 0.5, L = O = 1000: uniform on [500, 1000], mean (500 + 1000) / 2 = 750
    # = (1 + r) * L / 2 = 1.5 * 1000 / 2 = 750
    i, o, note = random_dataset_lengths(
        _row(SGL + "random_input_len=1000; random_output_len=1000; random_range_ratio=0.5")
    )
    assert (i.min_tokens, i.max_tokens, i.mean_tokens()) == (500, 1000, 750.0)
    assert (o.min_tokens, o.max_tokens, o.mean_tokens()) == (500, 1000, 750.0)
    # r = 0, L = 1024, O = 8192: input [1, 1024], mean 1025 / 2 = 512.5; output: the client's
    # [0, 8192] (mean 4096) with the zero-token draw counted as one -> [1, 8192], mean 4096.5,
    # 0.5 token (0.012 %) above the client's mean
    i, o, note = random_dataset_lengths(
        _row(SGL + "random_input_len=1024; random_output_len=8192; random_range_ratio=0.0")
    )
    assert (i.min_tokens, i.max_tokens, i.mean_tokens()) == (1, 1024, 512.5)
    assert (o.min_tokens, o.max_tokens, o.mean_tokens()) == (1, 8192, 4096.5)
    assert "uniform 1..1024" in note and "uniform 1..8192" in note
    # sampling follows the stated mean: 200,000 draws, standard error 2365 / sqrt(2e5) = 5.3
    x = o.sample(200_000, np.random.default_rng(0))
    assert x.min() >= 1 and x.max() <= 8192
    assert abs(x.mean() - 4096.5) < 5 * 5.3


def test_default_ratio_follows_the_sglang_version():
    tags = SGL + "random_input_len=1000; random_output_len=200"
    # 0.5.6 (and every version from 0.2.15): default 0.0 -> [1, 1000]
    i, o, _ = random_dataset_lengths(_row(tags, version="0.5.6 | client sglang.bench_serving"))
    assert (i.min_tokens, o.min_tokens) == (1, 1)
    # 0.2.0: default 1.0 -> fixed lengths
    i, o, _ = random_dataset_lengths(_row(tags, version="v0.2.0"))
    assert (i.min_tokens, i.max_tokens, o.min_tokens, o.max_tokens) == (1000, 1000, 200, 200)
    # between them the default is not known; nor without a version
    assert "not known" in random_dataset_lengths(_row(tags, version="0.2.7"))
    assert "not stated" in random_dataset_lengths(_row(tags, version="not stated"))


def test_unknown_clients_and_bad_tags_say_why():
    tags = "random_input_len=1000; random_output_len=1000; random_range_ratio=0.0"
    assert random_dataset_lengths(_row("ShareGPT dataset, 1000 prompts")) is None
    r = random_dataset_lengths(_row("a custom load generator; " + tags))
    assert isinstance(r, str) and "no benchmark client" in r
    r = random_dataset_lengths(_row("vllm bench serve --dataset-name random; " + tags, "vllm"))
    assert isinstance(r, str) and "vllm bench serve" in r
    assert "different values" in random_dataset_tags("random_input_len=1000 random_input_len=10")
    assert "random_output_len" in random_dataset_tags("random_input_len=1000")
    assert "between 1 and" in random_dataset_tags("random_input_len=0 random_output_len=5")
    r = random_dataset_lengths(_row(SGL + "random_input_len=10000000000000 random_output_len=5"))
    assert isinstance(r, str) and "between 1 and" in r
    assert "outside" in random_dataset_tags(
        "random_input_len=1; random_output_len=1; random_range_ratio=1.5"
    )


# --------------------------------------------------------------------------- the data
def _uniform(row):
    """The row's lengths without its request count: the distribution, not the replay."""
    return random_dataset_lengths(dict(row, notes=re.sub(r"\d[\d,]* requests", "", row["notes"])))


def test_every_tagged_row_has_the_sglang_rule(rows):
    tagged = _tagged(rows)
    assert len(tagged) >= 100
    for r in tagged:
        tags = random_dataset_tags(r["notes"])
        i, o, note = _uniform(r)
        assert (i.min_tokens, i.max_tokens) == (1, tags["input"]), r["id"]
        assert (o.min_tokens, o.max_tokens) == (1, tags["output"]), r["id"]
        # with "N requests" the client's own draw is replayed, inside the same bounds
        ri, ro, note = random_dataset_lengths(r)
        n = int(re.search(r"(\d+) requests", r["notes"]).group(1))
        assert len(ri.tokens) == len(ro.tokens) == n and "replayed" in note, r["id"]
        assert min(ri.tokens) >= 1 and max(ri.tokens) <= tags["input"]
        assert min(ro.tokens) >= 1 and max(ro.tokens) <= tags["output"]


def test_replay_keeps_pairs_and_follows_seed_and_version():
    notes = SGL + "random_input_len=1000; random_output_len=1000; random_range_ratio=0.0; "
    i, o, _ = random_dataset_lengths(_row(notes + "10 requests"))
    # seed 1, [1, 1000] then [0, 1000]: the cookbook's 10-request means 610.1 / 421.0
    assert (i.mean_tokens(), o.mean_tokens()) == (pytest.approx(610.1), pytest.approx(421.0))
    # sampling more than were drawn cycles in order, so input k and output k stay paired
    rng = np.random.default_rng(0)
    x, y = i.sample(25, rng), o.sample(25, rng)
    assert list(x[10:20]) == list(i.tokens) and list(y[20:]) == list(o.tokens[:5])
    # --seed 7 in the notes: another draw, same bounds
    i7, _, note = random_dataset_lengths(_row(notes + "--seed 7; 10 requests"))
    assert i7.tokens != i.tokens and "--seed 7" in note
    # before 0.2.15 (seed default 0, another input bound) the run is not replayed
    iu, _, note = random_dataset_lengths(_row(notes + "10 requests", version="0.2.0"))
    assert isinstance(iu, UniformLength) and "replayed" not in note
    # stated means the replay does not give: the distribution, and the note says so
    bad = notes + "10 requests; measured means 500.0 and 500.0 tokens over 10 requests"
    iu, ou, note = random_dataset_lengths(_row(bad))
    assert isinstance(iu, UniformLength) and "does not give the stated means" in note


MEANS = re.compile(r"measured means ([\d.]+) and ([\d.]+) tokens over (\d+) requests")


def test_measured_means_are_the_clients_draw(rows):
    """The rows' measured means are what sglang.bench_serving drew with its default --seed 1.

    bench_serving seeds numpy with ``np.random.seed(args.seed)`` (default 1) and then draws
    input_lens, then output_lens with ``np.random.randint``; reproducing that draw with the
    bounds of :func:`sglang_random_bounds` gives the published means to the printed 0.1 token
    (e.g. L = O = 1000, 10 requests: 610.1 and 421.0 with outputs from 0; 422.0 with outputs
    from 1), so each row pins which of the two rules its client ran, not only the range.
    """
    checked = collections.Counter()
    for r in _tagged(rows):
        m = MEANS.search(r["notes"])
        if not m:
            continue
        tags = random_dataset_tags(r["notes"])
        n, got_i, got_o = int(m.group(3)), float(m.group(1)), float(m.group(2))
        matches = []
        for rule in ("sample_random_requests", "compute_random_lens"):
            lo_i, hi_i = sglang_random_bounds(int(tags["input"]), tags["ratio"], is_input=True)
            lo_o, hi_o = sglang_random_bounds(
                int(tags["output"]), tags["ratio"], is_input=False, rule=rule
            )
            state = np.random.RandomState(1)
            i = state.randint(lo_i, hi_i + 1, size=n)
            o = state.randint(lo_o, hi_o + 1, size=n)
            if abs(i.mean() - got_i) < 0.051 and abs(o.mean() - got_o) < 0.051:
                matches.append(rule)
        assert len(matches) == 1, (r["id"], matches)
        checked[matches[0]] += 1
        # the replay the simulator runs gives the stated means within a token
        ri, ro, _ = random_dataset_lengths(r)
        assert abs(ri.mean_tokens() - got_i) <= 1.05 and abs(ro.mean_tokens() - got_o) <= 1.05
        # the distribution's mean is within sampling error of the measured one:
        # sd of U{1..L} ~ L / sqrt(12); 4 standard errors of an n-request mean
        di, do, _ = _uniform(r)
        for d, got in ((di, got_i), (do, got_o)):
            se = d.max_tokens / np.sqrt(12) / np.sqrt(n)
            assert abs(d.mean_tokens() - got) < 4 * se, r["id"]
        # 500 requests: within 3 % (e.g. 499.7 against 500.5)
        if n >= 500:
            assert di.mean_tokens() == pytest.approx(got_i, rel=0.03), r["id"]
            assert do.mean_tokens() == pytest.approx(got_o, rel=0.03), r["id"]
    # both rules occur in the cookbook (the Llama 3.1 page drew outputs from 1, the others
    # from 0); the simulator's distribution is the same for both (a 0 counts as 1 token)
    assert checked["sample_random_requests"] >= 60 and checked["compute_random_lens"] >= 20


def test_input_output_throughput_ratio_is_the_clients_draw(rows):
    """Rows giving both output and total tok/s of one run pin the drawn lengths too.

    Every request of a run is counted in both throughputs over the same duration, so
    (total - output) / output = sum(input lengths) / sum(output lengths) of the draw. The
    sglang attention-backend table (200 requests, --seed 1 default): for L = O = 1024 the
    draw gives 0.9772 and the table 4485.64 / 2268.68 - 1 = 0.9772; outputs drawn from 1
    instead of 0 would give 1.0391.
    """
    runs = collections.defaultdict(dict)
    for r in _tagged(rows):
        if r["mode"] == "rate" and r["metric"] in ("output_tok_s_total", "total_tok_s"):
            conf = re.search(r"configuration '([^']*)'", r["notes"])
            key = (r["source_detail"], r["model"], conf.group(1) if conf else r["id"])
            runs[key][r["metric"]] = (r, float(r["value"]))
    checked = 0
    for run in runs.values():
        if len(run) != 2:
            continue
        r, out = run["output_tok_s_total"]
        total = run["total_tok_s"][1]
        tags = random_dataset_tags(r["notes"])
        n = int(re.search(r"--num-prompts (\d+)", r["notes"]).group(1))
        lo_i, hi_i = sglang_random_bounds(int(tags["input"]), tags["ratio"], is_input=True)
        lo_o, hi_o = sglang_random_bounds(int(tags["output"]), tags["ratio"], is_input=False)
        state = np.random.RandomState(1)
        i = state.randint(lo_i, hi_i + 1, size=n)
        o = state.randint(lo_o, hi_o + 1, size=n)
        # the table prints 2 decimals of tok/s in the thousands: 0.01 % agreement or better
        assert (total - out) / out == pytest.approx(i.sum() / o.sum(), rel=2e-4), r["id"]
        checked += 1
    assert checked >= 12


def test_tagged_rows_are_predicted(catalog, rows):
    by_id = {r["id"]: r for r in rows}
    # B200 x8 Qwen3-235B, closed loop, 1 client, 10 requests, L = O = 1000 (sglang 0.5.6)
    r = by_id["sglcb-0045"]
    v, reason = predict_serving_row(r, catalog, PRIOR)
    assert reason == "" and v is not None and v > 0
    note = serving_row_details(r, catalog, PRIOR)["note"]
    assert "uniform 1..1000" in note and "sglang 0.5.6" in note and "replayed" in note
    # before this rule the row gave "isl/osl are empty ..."; a copy without the client says why
    r2 = dict(r, notes=r["notes"].replace("sglang.bench_serving", "a load generator"))
    v2, reason2 = predict_serving_row(r2, catalog, PRIOR)
    assert v2 is None and "no benchmark client" in reason2
