"""Engine releases parsed from benchmark rows' ``framework_version`` (issue 31, item 1).

Expectations are written by hand from the texts in ``data/benchmarks/*.csv``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from planner.benchmarks.schema import row_release
from planner.catalog.releases import (
    EngineRelease,
    parse_framework_spec,
    parse_release,
    release_inventory,
    unparsed_versions,
)
from planner.cli.main import main
from planner.errors import PlannerError

DATA = Path(__file__).resolve().parents[1] / "data" / "benchmarks"

# (engine, text as in the data) -> (version, pre, local, release text)
PARSED = [
    ("vllm", "v0.11.0 | vllm server, client vllm bench serve", (0, 11, 0), None, None, "0.11.0"),
    (
        "vllm",
        "vLLM 0.10.1 (rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909, ROCm 6.4.1) | offline "
        "throughput client",
        (0, 10, 1),
        None,
        None,
        "0.10.1",
    ),
    (
        "sglang",
        "0.5.12 (image lmsysorg/sglang:v0.5.12-cu130) | client InferenceX "
        "utils/bench_serving/benchmark_serving.py",
        (0, 5, 12),
        None,
        None,
        "0.5.12",
    ),
    (
        "sglang",
        "image lmsysorg/sglang-rocm:v0.5.12.post1-rocm720-mi35x-20260529 | SGLang "
        "disaggregated serving with AMD MoRI",
        (0, 5, 12),
        "post1",
        None,
        "0.5.12.post1",
    ),
    (
        "sglang",
        "image rocm/sgl-dev:sglang-0.5.6.post1-rocm700-mi35x-mori-0113 | SGLang disaggregated",
        (0, 5, 6),
        "post1",
        None,
        "0.5.6.post1",
    ),
    (
        "sglang",
        "SGLang 0.4.3.post2, CUDA 12.4 | SGLang bench_serving.py",
        (0, 4, 3),
        "post2",
        None,
        "0.4.3.post2",
    ),  # fmt: skip
    (
        "trtllm",
        "1.2.0rc6.post2 (image nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post2) | client",
        (1, 2, 0),
        "rc6.post2",
        None,
        "1.2.0rc6.post2",
    ),
    (
        "trtllm",
        "image nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14 | TensorRT-LLM",
        (1, 3, 0),
        "rc14",
        None,
        "1.3.0rc14",
    ),  # fmt: skip
    ("trtllm", "1.2.0rc5", (1, 2, 0), "rc5", None, "1.2.0rc5"),
    ("trtllm", "0.17 | trtllm-bench throughput, C++ engine", (0, 17), None, None, "0.17"),
    ("trtllm", "TensorRT-LLM 0.16.0 | trtllm-bench throughput", (0, 16, 0), None, None, "0.16.0"),
    ("trtllm", "0.7a (pre-release) | static batching", (0, 7), "a", None, "0.7a"),
    ("lmdeploy", "v0.1.0a1 (CUDA 11.8) | TurboMind", (0, 1, 0), "a1", None, "0.1.0a1"),
    ("pytorch", "2.11.0+cu130 | paged KV (block 16)", (2, 11, 0), None, "cu130", "2.11.0"),
    (
        "vllm",
        "vLLM 0.6.3.post2.dev308+gb489fc3c (CUDA 12.4) | benchmark_throughput.py",
        (0, 6, 3),
        "post2.dev308",
        "gb489fc3c",
        "0.6.3.post2.dev308",
    ),
    (
        "vllm",
        "vLLM 0.9.0.2.dev108+g71faa1880 (rocm641), PyTorch 2.7.0, ROCm 6.4.1",
        (0, 9, 0, 2),
        "dev108",
        "g71faa1880",
        "0.9.0.2.dev108",
    ),  # fmt: skip
    ("vllm", "vLLM 0.5.2", (0, 5, 2), None, None, "0.5.2"),
]

UNPARSED = [
    # NVIDIA Dynamo's runtime image: its tag is Dynamo's version, not TensorRT-LLM's
    ("trtllm", "image nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1 | TensorRT-LLM"),
    # TensorRT (not TensorRT-LLM) version of an MLPerf harness
    ("trtllm", "TensorRT 10.2.0, CUDA 12.4 | NVIDIA MLPerf harness"),
    ("trtllm", "NVIDIA MLPerf harness (TensorRT-LLM)"),
    ("trtllm", "release/1.2 | trtllm-bench throughput, PyTorch backend"),
    ("trtllm", "version not stated (between 1.0 and release/1.2) | trtllm-bench throughput"),
    ("vllm", "vLLM PR #7117 branch @ 2024-08-04 (after 0.5.3.post1, before 0.5.4; merged)"),
    ("vllm", "vLLM main @ 2024-08-04 (after 0.5.3.post1, before 0.5.4)"),
    ("vllm", "vLLM commit 11b6af52 with AITER 6af8b687 (AMD MLPerf v6.0 harness)"),
    ("vllm", "vLLM (version not stated) | benchmarks/benchmark_latency.py"),
    ("vllm", "vLLM (AMD MLPerf v6.0 harness; release not stated), PyTorch 2.9.1, ROCm 7.0.0"),
    ("sglang", "not stated | sglang.launch_server, client sglang.bench_serving"),
    ("exllama", "exllama c16cf49"),
    ("llama.cpp", "build 32d9f7d9 (1786) | CUDA (llama-bench, ngl 99)"),
    # another engine's name is not this engine's release
    ("sglang", "vLLM 0.10.1"),
    ("vllm", ""),
]


@pytest.mark.parametrize(("engine", "text", "version", "pre", "local", "release"), PARSED)
def test_parse_release(engine, text, version, pre, local, release):
    r = parse_release(engine, text)
    assert r is not None
    assert (r.engine, r.version, r.pre, r.local, r.release) == (
        engine, version, pre, local, release
    )  # fmt: skip
    assert r.text == text


@pytest.mark.parametrize(("engine", "text"), UNPARSED)
def test_unparseable_text_is_not_guessed(engine, text):
    assert parse_release(engine, text) is None


def test_build_notes_keep_the_rest_of_the_text():
    r = parse_release("sglang", "0.5.12 (image lmsysorg/sglang:v0.5.12-cu130) | client X")
    assert r.build_notes == "(image lmsysorg/sglang:v0.5.12-cu130); client X"
    assert parse_release("vllm", "vLLM 0.5.2").build_notes is None


def test_release_key_ignores_trailing_zeros_and_local_label():
    # PEP 440: 0.17 == 0.17.0; the +cu130 build label is not part of the release
    a, b = parse_release("trtllm", "0.17"), parse_release("trtllm", "0.17.0 | x")
    assert a.key == b.key == ((0, 17), "")
    assert parse_release("pytorch", "2.11.0+cu130").key == ((2, 11), "")
    assert parse_release("trtllm", "1.2.0rc5").key != parse_release("trtllm", "1.2.0").key


def test_engine_release_is_frozen_and_strict():
    r = parse_release("vllm", "v0.11.0")
    with pytest.raises(ValidationError):
        r.engine = "sglang"
    with pytest.raises(ValidationError):
        EngineRelease(engine="vllm", version=(0, 11), text="x", surprise=1)


def _data_rows() -> list[dict[str, str]]:
    out = []
    for p in sorted(DATA.glob("*.csv")):
        with open(p, newline="", encoding="utf-8") as fh:
            rd = csv.DictReader(fh)
            if "framework_version" in (rd.fieldnames or ()):
                out.extend(rd)
    return out


def test_every_data_row_is_parsed_or_reported():
    rows = _data_rows()
    assert rows
    inv, bad = release_inventory(rows), unparsed_versions(rows)
    # each row lands in exactly one of the two lists
    assert sum(g["rows"] for g in inv) + sum(u["rows"] for u in bad) == len(rows)
    for r in rows:
        rel = row_release(r)
        if rel is not None:
            # the release's numbers are written in the row's text (nothing invented)
            assert ".".join(map(str, rel.version)) in r["framework_version"], r["id"]
    texts = {u["framework_version"] for u in bad}
    assert "release/1.2 | trtllm-bench throughput, PyTorch backend" in texts
    assert all(u["rows"] > 0 and u["source"] for u in bad)


def test_inventory_groups_by_engine_gpu_release():
    rows = [
        {
            "framework": "vllm",
            "framework_version": "v0.11.0 | a",
            "hardware": "h",
            "as_of": "2026-02-01",
            "source": "S1",
        },  # fmt: skip
        {
            "framework": "vllm",
            "framework_version": "vLLM 0.11.0 (x)",
            "hardware": "h",
            "as_of": "2026-01-06",
            "source": "S2",
        },  # fmt: skip
        {
            "framework": "vllm",
            "framework_version": "v0.11.0",
            "hardware": "h",
            "as_of": "",
            "source": "S1",
        },  # fmt: skip
        {
            "framework": "vllm",
            "framework_version": "v0.11.0",
            "hardware": "g",
            "as_of": "",
            "source": "S1",
        },  # fmt: skip
        {
            "framework": "vllm",
            "framework_version": "main",
            "hardware": "h",
            "as_of": "",
            "source": "S3",
        },  # fmt: skip
    ]
    inv = release_inventory(rows)
    assert inv == [
        {
            "engine": "vllm",
            "gpu": "g",
            "release": "0.11.0",
            "rows": 1,
            "first_as_of": None,
            "last_as_of": None,
            "sources": 1,
        },  # fmt: skip
        {
            "engine": "vllm",
            "gpu": "h",
            "release": "0.11.0",
            "rows": 3,
            "first_as_of": "2026-01-06",
            "last_as_of": "2026-02-01",
            "sources": 2,
        },  # fmt: skip
    ]
    assert unparsed_versions(rows) == [
        {"engine": "vllm", "framework_version": "main", "rows": 1, "source": "S3"}
    ]


HAVE = {"vllm": [parse_release("vllm", "v0.11.0"), parse_release("vllm", "v0.10.2")]}


def test_parse_framework_spec():
    assert parse_framework_spec("vllm", ["vllm", "sglang"], HAVE) == ("vllm", None)
    eng, rel = parse_framework_spec("vllm@0.11.0", ["vllm", "sglang"], HAVE)
    assert eng == "vllm" and rel.version == (0, 11, 0)
    # v prefix and trailing zeros name the same release
    assert parse_framework_spec("vllm@v0.11", ["vllm"], HAVE)[1].key == ((0, 11), "")
    # without the data, any well-formed release is accepted
    assert parse_framework_spec("sglang@0.5.12.post1", ["sglang"])[1].pre == "post1"


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("vlm@0.11.0", ["--framework", "unknown engine 'vlm'", "known: sglang, vllm"]),
        ("vllm@abc", ["--framework", "release 'abc' is not a version"]),
        ("vllm@", ["--framework", "is not a version"]),
        ("vllm@0.99", ["--framework", "no benchmark rows for vllm 0.99", "0.10.2, 0.11.0"]),
    ],
)
def test_parse_framework_spec_errors(spec, words):
    with pytest.raises(PlannerError) as e:
        parse_framework_spec(spec, ["vllm", "sglang"], HAVE)
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg


def test_cli_releases_filter(capsys):
    assert main(["frameworks", "--releases", "--framework", "vllm@0.11.0", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["engine"] for r in out} == {"vllm"} and {r["release"] for r in out} == {"0.11.0"}
    # the data's only vLLM 0.11.0 text is "v0.11.0 | vllm server, client vllm bench serve",
    # on 192 rows (grep -c 'v0.11.0 | vllm server' over data/benchmarks/*.csv)
    assert sum(r["rows"] for r in out) == 192


def test_cli_unparsed_and_errors(capsys):
    assert main(["frameworks", "--releases", "--unparsed", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any(r["framework_version"] == "exllama c16cf49" and r["rows"] == 4 for r in out)
    assert main(["frameworks", "--releases", "--framework", "vllm@0.99"]) != 0
    err = capsys.readouterr().err
    assert "no benchmark rows for vllm 0.99" in err and len(err.strip().splitlines()) == 1
    assert main(["frameworks", "--unparsed"]) != 0
    assert "--releases" in capsys.readouterr().err
