"""Request lengths of a benchmark client's ``random`` dataset, read from a row's notes tags.

A serving benchmark run with ``--dataset-name random`` does not send fixed lengths: the
client draws each request's input and output length from an integer range set by
``--random-input-len``, ``--random-output-len`` and ``--random-range-ratio``. Rows whose
``isl``/``osl`` are empty for that reason carry the notes tags ``random_input_len=L``,
``random_output_len=O`` and ``random_range_ratio=r``; this module turns them into the length
distributions the client drew, following the client named in the notes (see
``planner/benchmarks/README.md``, "Random-dataset rows").

``sglang.bench_serving`` (``sample_random_requests``; checked in the PyPI wheels
sglang 0.2.0, 0.2.15, 0.3.0, 0.4.1 and 0.5.6, file ``sglang/bench_serving.py``)::

    input_lens  = np.random.randint(max(int(input_len * range_ratio), 1), input_len + 1, n)
    output_lens = np.random.randint(int(output_len * range_ratio), output_len + 1, n)

so input ~ U{max(floor(r*L), 1) .. L} and output ~ U{floor(r*O) .. O} (both ends included;
0.2.0 has ``int(input_len * range_ratio)`` as the input's lower bound, i.e. it can draw 0).
Later sglang (``compute_random_lens``, sgl-project/sglang
``python/sglang/benchmark/datasets/common.py`` @ 2a47406aa8f1f485ab3e966f2e7bf8b9749f8378)
draws both from U{max(floor(r*len), 1) .. len}. The default ``--random-range-ratio`` is 1.0
in 0.2.0 and 0.0 from 0.2.15 on. With the ratio stated, every version listed gives the same
distribution once a zero-token draw (probability 1/(len+1) at r = 0) is counted as one token,
which the simulator needs; without it the default, hence the version, decides.

The client seeds numpy first (``--seed``, default 1 from 0.2.15), so with the request count
known the very lengths it drew are replayed (:class:`DrawnLengths`), not resampled.

The SemiAnalysis InferenceX harness runs its own copy of vLLM's client,
``utils/bench_serving/benchmark_serving.py`` (SemiAnalysisAI/InferenceX, in the repository
from d053ae24e, 2026-01-21, ported from kimbochen/bench_serving; unchanged rule through
1780296b0 and 843c6254f): ``np.random.seed(args.seed)`` (``--seed`` default 0), then
``sample_random_requests`` draws ``np.random.randint(0, vocab, size=prefix_len)`` (prefix_len
0: no draw), then ``sample_uniform(input_len)`` and ``sample_uniform(output_len)``, each
``np.random.randint(int(len * range_ratio), len + 1, size=num_prompts)``: input and output
~ U{floor(r*L) .. L}. The prompt is re-tokenized and padded to exactly the drawn length, and
``--ignore-eos`` makes every output the drawn length. Rows name the client as
``InferenceX utils/bench_serving/benchmark_serving.py`` in ``notes`` and tag the ratio.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np

from planner.benchmarks.schema import cell, request_count
from planner.catalog.records import Frozen
from planner.workload.lengths import MAX_TOKENS, UniformLength

#: sglang versions whose ``bench_serving`` default ``--random-range-ratio`` was read from the
#: released wheel (version -> default); between 0.2.0 and 0.2.15 it is not known here
SGLANG_DEFAULT_RANGE_RATIO = {(0, 2, 0): 1.0, (0, 2, 15): 0.0}
#: from this sglang version on the default is 0.0 (checked in 0.2.15, 0.3.0, 0.4.1, 0.5.6)
SGLANG_DEFAULT_ZERO_FROM = (0, 2, 15)

#: ``--seed`` default of sglang.bench_serving, which seeds numpy before drawing the lengths:
#: 1 from 0.2.15 (checked in 0.2.15, 0.3.0, 0.4.1, 0.5.6; 0 in 0.2.0, whose input bound also
#: differs, so older runs are not replayed)
SGLANG_SEED_ONE_FROM = (0, 2, 15)
#: a replay must match the means a row states to this many tokens (``compute_random_lens``
#: draws outputs from 1 instead of 0: the same draws shifted by at most one token)
REPLAY_MEAN_TOL_TOKENS = 1.05
#: runs longer than this are simulated from the distribution, not replayed
MAX_REPLAYED_REQUESTS = 100_000

#: how rows name the InferenceX client (lower case) and its ``--seed`` default
INFERENCEX_CLIENT = "inferencex utils/bench_serving/benchmark_serving.py"
INFERENCEX_DEFAULT_SEED = 0

_TAG = {
    "input": re.compile(r"\brandom_input_len=(\d+)"),
    "output": re.compile(r"\brandom_output_len=(\d+)"),
    "ratio": re.compile(r"\brandom_range_ratio=(\d+(?:\.\d+)?)"),
}
_VERSION = re.compile(r"\bv?(\d+)\.(\d+)\.(\d+)")
_SEED = re.compile(r"--seed[ =](\d+)")
_MEANS = re.compile(r"measured means ([\d.]+) and ([\d.]+) tokens")


class DrawnLengths(Frozen):
    """The lengths a benchmark client drew, replayed in order (cyclically past the end) [tokens].

    Input and output of request k are ``tokens[k]`` of the two replays, so a pair stays a pair
    when both are sampled with the same ``n``.
    """

    tokens: tuple[int, ...]

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        t = np.asarray(self.tokens, dtype=np.int64)
        return t[np.arange(int(n)) % len(t)]

    def mean_tokens(self) -> float:
        return float(np.mean(self.tokens))


def random_dataset_tags(notes: str) -> dict[str, float] | str | None:
    """``{"input": L, "output": O[, "ratio": r]}`` from a row's notes tags.

    None when the notes carry no ``random_input_len=`` tag; a reason string when the tags
    are incomplete or contradict each other (the same tag with two values).
    """
    found: dict[str, float] = {}
    for key, pat in _TAG.items():
        vals = {float(v) for v in pat.findall(notes)}
        if len(vals) > 1:
            return f"the notes give random_{key} tags with different values {sorted(vals)}"
        if vals:
            found[key] = vals.pop()
    if "input" not in found:
        return None
    if "output" not in found:
        return "random_input_len is tagged but random_output_len is not"
    if not all(1 <= found[k] <= MAX_TOKENS for k in ("input", "output")):
        return f"random_input_len and random_output_len must be between 1 and {MAX_TOKENS:,}"
    if "ratio" in found and not 0.0 <= found["ratio"] <= 1.0:
        return f"random_range_ratio={found['ratio']:g} is outside [0, 1]"
    return found


def sglang_random_bounds(
    full_len: int,
    range_ratio: float,
    *,
    is_input: bool,
    rule: Literal["sample_random_requests", "compute_random_lens"] = "sample_random_requests",
) -> tuple[int, int]:
    """Inclusive integer range sglang.bench_serving draws one length from [tokens].

    ``np.random.randint(lo, hi + 1)`` with ``hi = full_len`` and ``lo = int(full_len *
    range_ratio)``, raised to 1 for the input (rule ``sample_random_requests``, releases
    0.2.15 .. 0.5.6: the output can draw 0) or for both (rule ``compute_random_lens``, main
    after 0.5.6). E.g. L = 1000, r = 0: input [1, 1000]; output [0, 1000] or [1, 1000].
    """
    lo = int(full_len * range_ratio)
    if is_input or rule == "compute_random_lens":
        lo = max(lo, 1)
    return lo, int(full_len)


def _sglang_version(row: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """The sglang.bench_serving client's version: the framework version of an sglang row."""
    if cell(row, "framework").lower() != "sglang":
        return None
    m = _VERSION.search(cell(row, "framework_version"))
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def sglang_random_draw(
    n: int, seed: int, bounds_in: tuple[int, int], bounds_out: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """(input, output) lengths sglang.bench_serving draws for ``n`` requests [tokens].

    ``main`` calls ``np.random.seed(args.seed)`` and the random dataset then draws
    ``np.random.randint(lo, hi + 1, n)`` for the inputs, then for the outputs (0.2.15 ..
    0.5.6, and ``compute_random_lens`` later, whose outputs from 1 differ by at most a token).
    The InferenceX client draws in the same order after ``np.random.seed(args.seed)`` (its
    zero-length prefix draw consumes no state), so the same replay serves it.
    """
    state = np.random.RandomState(seed)
    i = state.randint(bounds_in[0], bounds_in[1] + 1, size=n)
    o = state.randint(bounds_out[0], bounds_out[1] + 1, size=n)
    return i, o


def _sglang_seed(notes: str, version: tuple[int, int, int] | None) -> int | None:
    m = _SEED.search(notes)
    if m:
        return int(m.group(1))
    return 1 if version is None or version >= SGLANG_SEED_ONE_FROM else None


def random_dataset_lengths(
    row: Mapping[str, Any],
) -> tuple[UniformLength | DrawnLengths, UniformLength | DrawnLengths, str] | str | None:
    """(input lengths, output lengths, note) of a random-dataset row, a reason, or None.

    None: the row has no random-dataset tags (another rule applies). A reason string: the
    tags are there but the client's rule for them is not known (client not named, vLLM's
    random dataset, an sglang version whose default ratio is unknown). With the request count
    known (``"N requests"`` in the notes) and the client's seed (``--seed`` in the notes or
    the version's default), the very lengths the client drew are replayed
    (:class:`DrawnLengths`); otherwise the :class:`UniformLength` they were drawn from.
    """
    rule = _client_rule(row)
    if rule is None or isinstance(rule, str):
        return rule
    bounds_in, bounds_out, note, seed = rule
    i = UniformLength(min_tokens=max(bounds_in[0], 1), max_tokens=bounds_in[1])
    o = UniformLength(min_tokens=max(bounds_out[0], 1), max_tokens=bounds_out[1])
    note += (
        f"input uniform {i.min_tokens}..{i.max_tokens}, output uniform "
        f"{o.min_tokens}..{o.max_tokens} (means {i.mean_tokens():.1f}/{o.mean_tokens():.1f})"
    )
    notes = cell(row, "notes")
    n = request_count(notes)
    if n is None or seed is None or not 0 < n <= MAX_REPLAYED_REQUESTS:
        return i, o, note
    di, do = sglang_random_draw(n, seed, bounds_in, bounds_out)
    # a zero-token output (probability 1 / (O + 1) at r = 0) still runs its prefill: one token
    ri = DrawnLengths(tokens=tuple(int(x) for x in np.maximum(di, 1)))
    ro = DrawnLengths(tokens=tuple(int(x) for x in np.maximum(do, 1)))
    stated = _MEANS.search(notes)
    if stated and (
        abs(ri.mean_tokens() - float(stated.group(1))) > REPLAY_MEAN_TOL_TOKENS
        or abs(ro.mean_tokens() - float(stated.group(2))) > REPLAY_MEAN_TOL_TOKENS
    ):
        return i, o, note + f"; a --seed {seed} replay does not give the stated means"
    note += (
        f"; the {n} lengths it drew with --seed {seed} replayed (means "
        f"{ri.mean_tokens():.1f}/{ro.mean_tokens():.1f})"
    )
    return ri, ro, note


def inferencex_random_bounds(full_len: int, range_ratio: float) -> tuple[int, int]:
    """Inclusive integer range the InferenceX client draws one length from [tokens].

    ``sample_uniform``: ``np.random.randint(int(full_len * range_ratio), full_len + 1)``, the
    same for input and output. E.g. L = 1024, r = 0.8: [819, 1024]; L = 8192: [6553, 8192].
    """
    return int(full_len * range_ratio), int(full_len)


def _client_rule(
    row: Mapping[str, Any],
) -> tuple[tuple[int, int], tuple[int, int], str, int | None] | str | None:
    """(input bounds, output bounds, note, seed or None) of the row's client, a reason, or None."""
    notes = cell(row, "notes")
    if INFERENCEX_CLIENT not in notes.lower():
        rule = _sglang_rule(row)
        if rule is None or isinstance(rule, str):
            return rule
        return (*rule, _sglang_seed(notes, _sglang_version(row)))
    tags = random_dataset_tags(notes)
    if tags is None or isinstance(tags, str):
        return tags
    if "ratio" not in tags:
        return (
            "random_range_ratio is not tagged: the InferenceX client's --random-range-ratio has "
            "no default the row can rely on (the harness passes 0.8)"
        )
    ratio = tags["ratio"]
    bounds = [inferencex_random_bounds(int(tags[key]), ratio) for key in ("input", "output")]
    m = _SEED.search(notes)
    seed = int(m.group(1)) if m else INFERENCEX_DEFAULT_SEED
    note = f"InferenceX benchmark_serving.py random dataset (range ratio {ratio:g}): "
    return bounds[0], bounds[1], note, seed


def _sglang_rule(
    row: Mapping[str, Any],
) -> tuple[tuple[int, int], tuple[int, int], str] | str | None:
    """(input bounds, output bounds, note) sglang.bench_serving drew from, a reason, or None."""
    notes = cell(row, "notes")
    tags = random_dataset_tags(notes)
    if tags is None or isinstance(tags, str):
        return tags
    low = notes.lower()
    if "sglang.bench_serving" not in low:
        if "vllm bench serve" in low or "benchmark_serving" in low:
            return (
                "random-dataset lengths of vllm bench serve are not modelled (its rule changed "
                "across versions: [r*L, L] with default ratio 1.0 in benchmarks/"
                "benchmark_serving.py, later [L(1-r), L(1+r)] less the tokenizer's special "
                "tokens); give isl/osl"
            )
        return (
            "random-dataset tags, but the notes name no benchmark client (sglang.bench_serving,"
            " InferenceX utils/bench_serving/benchmark_serving.py or vllm bench serve) whose"
            " length rule is known"
        )
    version = _sglang_version(row)
    vtext = ".".join(map(str, version)) if version else "not stated"
    ratio = tags.get("ratio")
    if ratio is None:
        if version is None:
            return (
                "random_range_ratio is not tagged and the sglang version is not stated: the "
                "default ratio was 1.0 in 0.2.0 and 0.0 from 0.2.15"
            )
        if version >= SGLANG_DEFAULT_ZERO_FROM:
            ratio = 0.0
        elif version in SGLANG_DEFAULT_RANGE_RATIO:
            ratio = SGLANG_DEFAULT_RANGE_RATIO[version]
        else:
            return (
                f"random_range_ratio is not tagged and sglang {vtext}'s default is not known "
                "(1.0 in 0.2.0, 0.0 from 0.2.15)"
            )
    bounds = [
        sglang_random_bounds(int(tags[key]), ratio, is_input=key == "input")
        for key in ("input", "output")
    ]
    note = f"sglang.bench_serving random dataset (sglang {vtext}, range ratio {ratio:g}): "
    return bounds[0], bounds[1], note
