"""Request lengths of a benchmark client's ``random`` dataset, read from a row's notes tags.

A serving benchmark run with ``--dataset-name random`` does not send fixed lengths: the
client draws each request's input and output length from an integer range set by
``--random-input-len``, ``--random-output-len`` and ``--random-range-ratio``. Rows whose
``isl``/``osl`` are empty for that reason carry the notes tags ``random_input_len=L``,
``random_output_len=O`` and ``random_range_ratio=r``; this module turns them into the length
distributions the client drew, following the client named in the notes (see
``planner/benchmarks/README.md``, "Random-dataset rows").

``sglang.bench_serving`` (``sample_random_requests``; checked in the released wheels
sglang 0.2.0, 0.2.15, 0.3.0, 0.4.1 and 0.5.6, file ``sglang/bench_serving.py``)::

    input_lens  = np.random.randint(max(int(input_len * range_ratio), 1), input_len + 1, n)
    output_lens = np.random.randint(int(output_len * range_ratio), output_len + 1, n)

so input ~ U{max(floor(r*L), 1) .. L} and output ~ U{floor(r*O) .. O} (both ends included;
0.2.0 has ``int(input_len * range_ratio)`` as the input's lower bound, i.e. it can draw 0).
Later sglang (``compute_random_lens``, sgl-project/sglang
``python/sglang/benchmark/datasets/common.py`` @ 2a47406aa8f1f485ab3e966f2e7bf8b9749f8378)
draws both from U{max(floor(r*len), 1) .. len}. The default ``--random-range-ratio`` is 1.0 in 0.2.0 and 0.0
from 0.2.15 on. With the ratio stated, every version listed gives the same distribution once
a zero-token draw (probability 1/(len+1) at r = 0) is counted as one token, which the
simulator needs; without it the default, hence the version, decides.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from planner.benchmarks.schema import cell
from planner.workload.lengths import MAX_TOKENS, UniformLength

#: sglang versions whose ``bench_serving`` default ``--random-range-ratio`` was read from the
#: released wheel (version -> default); between 0.2.0 and 0.2.15 it is not known here
SGLANG_DEFAULT_RANGE_RATIO = {(0, 2, 0): 1.0, (0, 2, 15): 0.0}
#: from this sglang version on the default is 0.0 (checked in 0.2.15, 0.3.0, 0.4.1, 0.5.6)
SGLANG_DEFAULT_ZERO_FROM = (0, 2, 15)

_TAG = {
    "input": re.compile(r"\brandom_input_len=(\d+)"),
    "output": re.compile(r"\brandom_output_len=(\d+)"),
    "ratio": re.compile(r"\brandom_range_ratio=(\d+(?:\.\d+)?)"),
}
_VERSION = re.compile(r"\bv?(\d+)\.(\d+)\.(\d+)")


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


def random_dataset_lengths(
    row: Mapping[str, Any],
) -> tuple[UniformLength, UniformLength, str] | str | None:
    """(input dist, output dist, note) of a random-dataset row, a reason, or None.

    None: the row has no random-dataset tags (another rule applies). A reason string: the
    tags are there but the client's rule for them is not known (client not named, vLLM's
    random dataset, an sglang version whose default ratio is unknown).
    """
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
            "random-dataset tags, but the notes name no benchmark client (sglang.bench_serving"
            " or vllm bench serve) whose length rule is known"
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
    dists = []
    for key, is_input in (("input", True), ("output", False)):
        full = int(tags[key])
        lo, hi = sglang_random_bounds(full, ratio, is_input=is_input)
        dists.append(UniformLength(min_tokens=max(lo, 1), max_tokens=hi))
    i, o = dists
    note = (
        f"sglang.bench_serving random dataset (sglang {vtext}): input uniform "
        f"{i.min_tokens}..{i.max_tokens}, output uniform {o.min_tokens}..{o.max_tokens} "
        f"(range ratio {ratio:g}; means {i.mean_tokens():.1f}/{o.mean_tokens():.1f})"
    )
    return i, o, note
