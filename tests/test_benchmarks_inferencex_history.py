"""InferenceX dashboard history (``data/benchmarks/public_inferencex_history.csv``).

Expert-parallel, attention data-parallel, MTP and disaggregated DeepSeek-R1-0528 points with
their TPOT / TTFT / E2E medians, converted from SemiAnalysisAI/InferenceX-app's captured API
fixtures by ``scripts/import_inferencex_history.py`` (sources.yaml says the rules). These tests
check provenance, values against the fixture by hand, the counts by layout kind, that no
measurement repeats one of ``public_inferencex.csv``, and that the layout parsers read the
rows' notes.
"""

from __future__ import annotations

import collections
import csv
import datetime as dt
import importlib.util
import json
import re

import pytest
import yaml

from planner.benchmarks.disagg_rows import disagg_layout, is_disagg_row
from planner.benchmarks.io import load_measurements
from planner.benchmarks.schema import layout_unsupported, row_parallel_layout, workload_mismatch
from planner.benchmarks.speculative_rows import spec_of_row
from planner.catalog import DATA_DIR

CSV = DATA_DIR / "benchmarks" / "public_inferencex_history.csv"
OLD = DATA_DIR / "benchmarks" / "public_inferencex.csv"
SOURCE = "SemiAnalysis InferenceX benchmarks history (InferenceX-app fixtures)"
SCRIPT = DATA_DIR.parent / "scripts" / "import_inferencex_history.py"


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return _read(CSV)


def kind(r: dict[str, str]) -> str:
    """TP+EP, DEP, TP (plain TP with MTP), disagg; +MTP when speculative."""
    n = r["notes"]
    spec = "+MTP" if "spec 'mtp'" in n else ""
    if "disaggregated prefill/decode" in n:
        return "disagg" + spec
    if r["attention_dp"] not in ("", "1"):
        return "DEP" + spec
    return ("TP+EP" if r["ep"] not in ("", "1") else "TP") + spec


def _one(rows, run: str, hardware: str, conc: str, metric: str, *phrases: str):
    (r,) = [
        r
        for r in rows
        if f"runs/{run}/" in r["notes"]
        and r["hardware"] == hardware
        and r["concurrency"] == conc
        and r["metric"] == metric
        and "nominal input 1024 / output 1024 tokens" in r["notes"]
        and all(p in r["notes"] for p in phrases)
    ]
    return r


def test_file_loads_with_the_planners_loader(rows, catalog):
    df = load_measurements(CSV, catalog)
    assert len(df) == len(rows) >= 2000
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"ixh-\d{4}", i) for i in ids)


def test_every_row_has_source_and_as_of(rows):
    url = re.compile(
        r"https://github\.com/SemiAnalysisAI/InferenceX-app/blob/[0-9a-f]{40}/packages/app/"
        r"cypress/fixtures/api/benchmarks(-history)?\.json "
    )
    for r in rows:
        assert r["source"] == SOURCE, r["id"]
        assert url.match(r["source_detail"]), r["id"]
        assert "github.com/SemiAnalysisAI/InferenceX/actions/runs/" in r["notes"], r["id"]
        day = dt.date.fromisoformat(r["as_of"])
        assert dt.date(2026, 1, 21) <= day <= dt.date(2026, 6, 14), r["id"]
        assert f"run date {r['as_of']}" in r["notes"], r["id"]
        assert r["framework_version"].startswith("image "), r["id"]


def test_sources_yaml_lists_the_file_and_its_row_count(rows):
    doc = yaml.safe_load((DATA_DIR / "benchmarks" / "sources.yaml").read_text(encoding="utf-8"))
    (entry,) = [s for s in doc["sources"] if s["source"] == SOURCE]
    assert entry["file"] == CSV.name
    assert entry["rows"] == len(rows)


def test_rows_reproduce_the_fixture_by_hand(rows):
    """Values read by hand from the fixtures (each record's ``metrics``):

    * DEP8, 8x B200, TensorRT-LLM 1.2.0rc6.post2, NVFP4, 1k/1k, conc 128, run 21640806486
      (benchmarks.json @ cac6246e): tput_per_gpu 1388.687071132768, median_tpot
      0.021516713806712794 s, median_ttft 0.774591010005679 s. The fixture's num_decode_gpu
      is 64 (= tp x ep), but the run used 8 GPUs (one node; InferenceX divides by TP):
      total = 1388.687071132768 x 8 = 11109.4966 -> 11109.50 tok/s; TPOT 21.517 ms,
      TTFT 774.591 ms.
    * TP8 EP8, 8x H200, TensorRT-LLM, FP8, 1k/1k, conc 32, run 26016868638 (history @
      528c4146): tput_per_gpu 308.60974502609594 -> x 8 = 2468.8780 -> 2468.88 tok/s;
      output_tput_per_gpu 154.54931245869548 -> x 8 = 1236.3945 -> 1236.39 tok/s.
    * MTP, TP8, 8x MI355X, SGLang, FP8, 1k/1k, conc 16, run 26197707118: median_ttft
      0.1341243078932166 s -> 134.124 ms; median_tpot 0.011562753088368542 s -> 11.563 ms.
    * Disaggregated 1P (TP4, 4 GPUs) + 2D (TP4, 8 GPUs), 12x GB200, Dynamo SGLang, NVFP4,
      1k/1k, run 21793201578, conc 4: tput_per_gpu 96.80178724579065 x 12 = 1161.6214 ->
      1161.62 tok/s; output_tput_per_gpu 72.24806121160516 is per DECODE GPU
      (process_result.py): x 8 = 577.9845 -> 577.98 tok/s (half of the total at 1k/1k:
      577.98 / 1161.62 = 0.498, as the drawn lengths' means 921.5 / 1843 = 0.5 say);
      conc 32: median_tpot 0.011162238389747427 s -> 11.162 ms.
    """
    dep = ("DP-attention=true",)
    r = _one(rows, "21640806486", "nvidia-b200", "128", "total_tok_s", *dep)
    assert (r["tp"], r["ep"], r["attention_dp"], r["n_gpus"]) == ("1", "8", "8", "8")
    assert (r["framework"], r["precision"], r["as_of"]) == ("trtllm", "nvfp4", "2026-02-03")
    assert "1.2.0rc6.post2" in r["framework_version"]
    assert float(r["value"]) == pytest.approx(11109.50, abs=1e-9)
    r = _one(rows, "21640806486", "nvidia-b200", "128", "tpot_ms_median", *dep)
    assert float(r["value"]) == pytest.approx(21.517, abs=1e-9)
    r = _one(rows, "21640806486", "nvidia-b200", "128", "ttft_ms_median", *dep)
    assert float(r["value"]) == pytest.approx(774.591, abs=1e-9)

    ep = ("TP=8, EP=8, DP-attention=false",)
    r = _one(rows, "26016868638", "nvidia-h200-sxm", "32", "total_tok_s", *ep)
    assert (r["tp"], r["ep"], r["attention_dp"], r["n_gpus"]) == ("8", "8", "1", "8")
    assert float(r["value"]) == pytest.approx(2468.88, abs=1e-9)
    r = _one(rows, "26016868638", "nvidia-h200-sxm", "32", "output_tok_s_total", *ep)
    assert float(r["value"]) == pytest.approx(1236.39, abs=1e-9)

    mtp = ("spec 'mtp'",)
    r = _one(rows, "26197707118", "amd-mi355x", "16", "ttft_ms_median", *mtp)
    assert float(r["value"]) == pytest.approx(134.124, abs=1e-9)
    assert layout_unsupported(r["notes"]) == "speculative decoding (MTP)"
    r = _one(rows, "26197707118", "amd-mi355x", "16", "tpot_ms_median", *mtp)
    assert float(r["value"]) == pytest.approx(11.563, abs=1e-9)

    dis = ("1P/2D workers",)
    r = _one(rows, "21793201578", "nvidia-gb200", "4", "total_tok_s", *dis)
    assert (r["n_gpus"], r["tp"], r["ep"]) == ("12", "", "")
    assert float(r["value"]) == pytest.approx(1161.62, abs=1e-9)
    r = _one(rows, "21793201578", "nvidia-gb200", "4", "output_tok_s_total", *dis)
    assert float(r["value"]) == pytest.approx(577.98, abs=1e-9)
    r = _one(rows, "21793201578", "nvidia-gb200", "32", "tpot_ms_median", *dis)
    assert float(r["value"]) == pytest.approx(11.162, abs=1e-9)


def test_counts_by_layout_kind(rows):
    """Points with TPOT by layout kind (and every point has all five metrics but
    total_tok_s, which public_inferencex.csv already holds for 273 of them)."""
    tpot = collections.Counter(kind(r) for r in rows if r["metric"] == "tpot_ms_median")
    assert tpot == {
        "TP+EP": 62,
        "DEP": 8,
        "TP+MTP": 66,
        "TP+EP+MTP": 7,
        "DEP+MTP": 10,
        "disagg": 190,
        "disagg+MTP": 143,
    }
    by_metric = collections.Counter(r["metric"] for r in rows)
    for m in ("output_tok_s_total", "ttft_ms_median", "e2e_ms_median"):
        assert by_metric[m] == sum(tpot.values())
    assert by_metric["total_tok_s"] == sum(tpot.values()) - 273
    assert len({r["hardware"] for r in rows}) >= 7  # H100 .. GB300, MI325X, MI355X


def _point(r: dict[str, str]) -> tuple:
    """A measured point and metric, independent of the converter: run, GPU, concurrency,
    lengths, the layout words of the notes, the disaggregated GPU and worker counts, MTP,
    metric."""
    n = r["notes"]
    lay = re.findall(r"(?:prefill |decode )?TP=\d+,? EP=\d+,? (?:DP-attention=\w+|no attention)", n)
    return (
        re.search(r"runs/(\d+)/", n).group(1),
        r["hardware"],
        r["precision"],
        r["concurrency"],
        re.search(r"(?:nominal input |random_input_len=)(\d+)", n).group(1),
        re.search(r"(?:output |random_output_len=)(\d+)", n).group(1),
        tuple(sorted(set(lay))),
        tuple(re.findall(r"\(\d+ prefill \+ \d+ decode GPUs, \d+P/\d+D workers\)", n)),
        "spec 'mtp'" in n or "speculative decoding (MTP)" in n,
        r["metric"],
    )


def test_no_duplicate_rows(rows):
    """No measured point and metric twice in the file, none that public_inferencex.csv
    already has, and no exact (GPU, concurrency, metric, value) repeat across the two."""
    new = [_point(r) for r in rows]
    assert len(set(new)) == len(new)
    old = {_point(r) for r in _read(OLD)}
    assert not old & set(new)
    vals = {(r["hardware"], r["concurrency"], r["metric"], r["value"]) for r in _read(OLD)}
    assert not [
        r["id"] for r in rows if (r["hardware"], r["concurrency"], r["metric"], r["value"]) in vals
    ]


def test_parsers_read_the_layouts(rows):
    """Single-node EP / DEP rows have a layout under the width rule; disaggregated rows' pools
    parse (except EPLB's redundant experts, EP not dividing 256); MTP rows give K where the
    InferenceX scripts state it."""
    seen = collections.Counter()
    for r in rows:
        k = kind(r)
        if k.startswith("disagg"):
            assert is_disagg_row(r)
            lay = disagg_layout(r["notes"])
            if isinstance(lay, dict):
                assert lay["mtp"] == k.endswith("+MTP")
                seen["disagg parsed"] += 1
            else:
                seen["disagg not parsed"] += 1
            continue
        lay = row_parallel_layout(r)
        assert lay.tp * lay.attention_dp == int(r["n_gpus"]), r["id"]
        if k.startswith("DEP"):
            assert lay.tp == 1 and lay.attention_dp == lay.ep == int(r["n_gpus"])  # DEP4, DEP8
        if k.endswith("+MTP"):
            # K of every single-node MTP run: SGLang steps, TRT-LLM num_nextn_predict_layers
            # (dsr1_fp8_b300_mtp.sh: SPECULATIVE_NUM_STEPS=2; dsr1_fp8_h200_trt_mtp.sh: MTP=1
            # with DP attention, else 3); a run tagged workload_mismatch (its client's prompts
            # were not the stated ones) is never a speculative row to score or pair
            if workload_mismatch(r["notes"]) is not None:
                assert spec_of_row(r) is None, r["id"]
                continue
            method, spec_k = spec_of_row(r)
            assert method == "mtp" and spec_k in (1, 2, 3), r["id"]
            if (r["hardware"], r["framework"]) == ("nvidia-b300", "sglang"):
                assert spec_k == 2
            if (r["hardware"], r["framework"]) == ("nvidia-h200-sxm", "trtllm"):
                assert spec_k == (1 if k.startswith("DEP") else 3)
        else:
            assert layout_unsupported(r["notes"]) is None, r["id"]
    assert seen["disagg parsed"] >= 0.9 * (seen["disagg parsed"] + seen["disagg not parsed"])


def _script():
    spec = importlib.util.spec_from_file_location("import_inferencex_history", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _record(**kw):
    r = {
        "hardware": "b200", "framework": "trt", "model": "dsr1", "precision": "fp4",
        "spec_method": "none", "disagg": False, "is_multinode": False,
        "prefill_tp": 8, "prefill_ep": 8, "prefill_dp_attention": True, "prefill_num_workers": 0,
        "decode_tp": 8, "decode_ep": 8, "decode_dp_attention": True, "decode_num_workers": 0,
        "num_prefill_gpu": 64, "num_decode_gpu": 64, "isl": 1024, "osl": 1024, "conc": 64,
        "image": "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14", "date": "2026-05-19",
        "run_url": "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1/attempts/1",
        "metrics": {"tput_per_gpu": 100.0, "output_tput_per_gpu": 50.0, "median_tpot": 0.02,
                    "median_ttft": 0.5, "median_e2el": 21.0},
    }  # fmt: skip
    r.update(kw)
    return r


def test_converter_on_hand_made_records(tmp_path):
    """A DEP8 record: total 100 x 8 GPUs = 800 (not x 64, the fixture's num_decode_gpu);
    TPOT 0.02 s = 20 ms. A 2P/1D disaggregated record of 8 + 8 GPUs: total 100 x 16 = 1600,
    output 50 x 8 decode GPUs = 400. The same DEP8 record in a second fixture is written once;
    an older run of the same key is dropped; a record before 2026-01-21 and an ATOM record
    are left out."""
    mod = _script()
    dis = _record(
        disagg=True, is_multinode=True, prefill_tp=4, prefill_ep=1, prefill_dp_attention=False,
        prefill_num_workers=2, decode_tp=8, decode_ep=8, decode_dp_attention=False,
        decode_num_workers=1, num_prefill_gpu=8, num_decode_gpu=8,
        run_url="https://github.com/SemiAnalysisAI/InferenceX/actions/runs/2/attempts/1",
    )  # fmt: skip
    older = _record(date="2026-04-01", run_url="https://github.com/x/actions/runs/3/attempts/1")
    early = _record(date="2026-01-20", conc=4)
    atom = _record(framework="atom", conc=8)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([_record(), dis, older, early, atom]))
    b.write_text(json.dumps([_record()]))
    fixtures = [(str(a), "0" * 40, "benchmarks.json"), (str(b), "1" * 40, "benchmarks.json")]
    out, stats = mod.convert(fixtures, mod.Images(None), set())
    got = {(r["n_gpus"], r["metric"]): float(r["value"]) for r in out}
    assert len(out) == 10  # 2 points x 5 metrics
    assert got[("8", "total_tok_s")] == pytest.approx(800.0)
    assert got[("8", "tpot_ms_median")] == pytest.approx(20.0)
    assert got[("16", "total_tok_s")] == pytest.approx(1600.0)
    assert got[("16", "output_tok_s_total")] == pytest.approx(400.0)
    dep = next(r for r in out if r["n_gpus"] == "8")
    assert (dep["tp"], dep["attention_dp"], dep["ep"], dep["as_of"]) == (
        "1",
        "8",
        "8",
        "2026-05-19",
    )
    d = next(r for r in out if r["n_gpus"] == "16")
    lay = disagg_layout(d["notes"])
    assert (lay["x"], lay["y"]) == (2, 1)
    assert lay["prefill"] == {"tp": 4, "attention_dp": 1, "ep": 1}
    assert lay["decode"] == {"tp": 8, "attention_dp": 1, "ep": 8}
    assert stats["skipped: run before 2026-01-21 (client version not recorded)"] == 1
    assert stats["skipped: framework atom (not in frameworks.yaml)"] == 1
    assert stats["older runs of a written key, not written (total_tok_s)"] == 1
    # a key already in the repository's files is not written again
    key = next(iter(mod.existing_keys([OLD])))
    assert key[9] in {m[0] for m in mod.METRICS}


def test_disaggregated_latencies_come_from_one_closed_loop_run(rows, catalog):
    """The five metrics of a disaggregated point (GB200 1P TP4 + 2D TP4, 1k/1k, conc 4) are
    predicted from one composed closed-loop run, so they agree with each other:

    * total / output = (E[I] + E[O]) / E[O]: both lengths ~ U{819 .. 1024} (0.8 x 1024 =
      819.2 -> 819), so the ratio is 2 up to the drawn sample means (600 draws: within 3 %);
    * Little's law of the closed loop: output tok/s = C x E[O] / E[E2E] = 4 x 921.5 / E2E,
      with the median E2E standing in for the mean (within 10 %);
    * E2E = TTFT + (O - 1) x TPOT per request, so median E2E is near median TTFT + 920.5 x
      median TPOT (within 10 %)."""
    from planner.benchmarks.disagg_rows import predict_disagg_row

    got = {}
    for m in ("total_tok_s", "output_tok_s_total", "tpot_ms_median", "ttft_ms_median",
              "e2e_ms_median"):  # fmt: skip
        r = _one(rows, "21793201578", "nvidia-gb200", "4", m, "1P/2D workers")
        p = predict_disagg_row(r, catalog)
        assert not isinstance(p, str), p
        got[m] = p[0]
    assert got["total_tok_s"] / got["output_tok_s_total"] == pytest.approx(2.0, rel=0.03)
    e2e_s = got["e2e_ms_median"] / 1e3
    assert got["output_tok_s_total"] == pytest.approx(4 * 921.5 / e2e_s, rel=0.10)
    ttft_plus = got["ttft_ms_median"] + 920.5 * got["tpot_ms_median"]
    assert got["e2e_ms_median"] == pytest.approx(ttft_plus, rel=0.10)
