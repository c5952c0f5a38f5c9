"""Benchmark rows of expert-parallel / attention data-parallel layouts (issue 29, section 3):
the schema's ep / attention_dp columns, the conversion of the formerly unsupported rows from
their notes, and their predictions built from the row's Layout."""

from __future__ import annotations

import re
import subprocess
import sys

import pandas as pd
import pytest
from conftest import DATA_DIR, REPO_ROOT

from planner.benchmarks.predict import Predictor
from planner.benchmarks.schema import layout, layout_unsupported, row_parallel_layout
from planner.benchmarks.step_rows import row_predictor
from planner.catalog import PRIOR
from planner.catalog.layout import layout_of
from planner.engine import step_model
from planner.engine.phases import prefill_time
from planner.errors import PlannerError

FILES = ("public_amd.csv", "public_inferencex.csv", "public_nvidia.csv")
#: what a note says when its layout is expert parallel, attention data-parallel or multi-node TP
EP_WORDS = re.compile(
    r"expert parallel|--ep_size|--ep-size|ep_size|enable-dp-attention|enable_attention_dp"
    r"|DP-attention=true|attention data-parallel|DEP\d|--nnodes [2-9]",
    re.I,
)
#: the reasons a row may keep its tag: a later issue (disaggregated, speculative) or a source
#: that does not state the size
KEEP_REASONS = ("disaggregated", "speculative", "not stated")


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return pd.concat(
        [pd.read_csv(DATA_DIR / "benchmarks" / f, dtype=str, keep_default_na=False) for f in FILES],
        ignore_index=True,
    ).set_index("id", drop=False)


def test_no_ep_row_stays_tagged_without_a_reason(rows):
    """Every row whose notes describe EP / DEP / DP attention / TP across nodes either carries
    its layout or keeps a tag that says why (a later issue, or the size is not stated)."""
    tagged = rows[rows["notes"].map(lambda n: layout_unsupported(n) is not None)]
    bad = [
        (i, layout_unsupported(n))
        for i, n in zip(tagged["id"], tagged["notes"], strict=True)
        if EP_WORDS.search(n) and not any(k in layout_unsupported(n) for k in KEEP_REASONS)
    ]
    assert not bad, bad[:5]
    # and the converted rows are many: 278 rows from 6 sources (the script's counts)
    conv = rows[rows["notes"].str.contains("scripts/convert_ep_rows.py", regex=False)]
    assert len(conv) == 278
    assert conv["source"].nunique() == 6


def test_conversion_script_is_reproducible():
    """Re-running the conversion on the committed data changes nothing."""
    r = subprocess.run(
        [sys.executable, "scripts/convert_ep_rows.py", "--check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize(
    ("rid", "expect", "label"),
    [
        # TensorRT-LLM release/1.2 table column 'H200 DEP8 (FP8)': enable_attention_dp, ep 8
        ("trt12-0005", dict(tp=1, attention_dp=8, ep=8, moe_tp=1), "DEP8"),
        # dstack: trtllm-serve --tp_size 8 --ep_size 4 -> each expert split 8 / 4 = 2 ways
        ("amd-0148", dict(tp=8, attention_dp=1, ep=4, moe_tp=2), "TP8 EP4 MoE-TP2"),
        # dstack: SGLang 0.4.3.post2 --tp 8 --enable-dp-attention -> dp_size = tp_size = 8
        ("amd-0076", dict(tp=1, attention_dp=8, ep=1, moe_tp=8), "DP8"),
        # GPUStack: SGLang 0.5.3 --tp 8 --enable-dp-attention, no --dp -> DP attention off
        ("gpustack-0149", dict(tp=8, attention_dp=1, ep=1, moe_tp=8), "TP8"),
        # GPUStack: trtllm-serve --tp_size 8 --ep_size 8
        ("gpustack-0131", dict(tp=8, attention_dp=1, ep=8, moe_tp=1), "TP8 EP8"),
        # InferenceX: TP=8, EP=8, DP-attention=true
        ("ixm-1389", dict(tp=1, attention_dp=8, ep=8, moe_tp=1), "DEP8"),
        # SGLang DeepSeek-V3 README: --tp 16 --nnodes 2
        ("sgldsv3-0033", dict(tp=16, attention_dp=1, ep=1, moe_tp=16), "TP16"),
    ],
)
def test_converted_layouts_read_from_the_launch_command(rows, rid, expect, label):
    row = rows.loc[rid].to_dict()
    assert layout_unsupported(row["notes"]) is None
    lay = row_parallel_layout(row)
    got = {k: getattr(lay, k) for k in expect}
    assert got == expect
    assert lay.label == label
    rl = layout(row)
    assert rl.replicas == 1 and rl.gpus_per_replica == int(row["n_gpus"])


def test_kept_tags_say_why(rows):
    """Rows still tagged: disaggregated prefill/decode, speculative decoding, or an EP size the
    source does not state (TensorRT-LLM perf-overview v1.0: ``--ep $ep_size``)."""
    reasons = [layout_unsupported(n) for n in rows["notes"]]
    kept = [r for r in reasons if r is not None]
    assert kept and all(any(k in r for k in KEEP_REASONS) for r in kept)
    assert sum("not stated" in r for r in kept) == 65


# ---------------------------------------------------------------- schema rules
def _row(**kw) -> dict[str, str]:
    base = dict(
        id="t-1", source="test", hardware="nvidia-h200-sxm", n_gpus="8", tp="1", pp="1",
        ep="8", attention_dp="8", moe_tp="", model="deepseek-v3", precision="fp8",
        kv_precision="fp8", framework="trtllm", framework_version="", mode="static_batch",
        isl="1024", osl="128", batch="64", concurrency="", request_rate="", context_len="",
        metric="output_tok_s_total", value="1000", unit="tok/s", notes="",
    )  # fmt: skip
    base.update({k: str(v) for k, v in kw.items()})
    return base


def test_replicas_count_every_gpu_of_the_layout():
    # DEP8 on 16 GPUs: 16 / (tp 1 x attention_dp 8 x pp 1) = 2 replicas
    rl = layout(_row(n_gpus="16"))
    assert (rl.replicas, rl.gpus_per_replica, rl.layout.label) == (2, 8, "DEP8")
    # empty ep / attention_dp = 1: the plain rule of before (8 / (tp 4 x pp 1) = 2)
    rl = layout(_row(tp="4", ep="", attention_dp="", n_gpus="8"))
    assert (rl.replicas, rl.plain, rl.layout.moe_split) == (2, True, 4)


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"n_gpus": "12"}, "n_gpus=12 is not a multiple of tp x attention_dp x pp = 8"),
        ({"ep": "3"}, "width rule"),
        ({"ep": "2.5"}, "ep must be a positive whole number"),
        ({"attention_dp": "x"}, "attention_dp must be a number"),
        ({"moe_tp": "2"}, "moe_tp x ep = 2 x 8 = 16"),
    ],
)
def test_bad_layout_cells_are_one_line_errors(kw, msg):
    with pytest.raises(PlannerError, match=re.escape(msg)):
        layout(_row(**kw))


def test_ep_on_a_dense_model_is_a_reason_not_a_crash(catalog):
    fn, reason, _ = row_predictor(_row(model="llama-3.1-70b"), catalog)
    assert fn is None and "dense" in reason


# ---------------------------------------------------------------- predictions
def test_static_row_uses_the_layout_and_counts_its_gpus(catalog):
    """A DEP8 static batch: the predictor runs the DEP8 step model (not TP8), and per-GPU
    throughput is the replica's divided by tp x attention_dp x pp = 8 GPUs."""
    row = _row()
    fn, reason, kind = row_predictor(row, catalog)
    assert reason == "" and kind == "static"
    dep = step_model(
        "deepseek-v3", "nvidia-h200-sxm", "fp8", "fp8", params=PRIOR, catalog=catalog,
        layout=layout_of(1, 1, 8, 8),
    )  # fmt: skip
    tp8 = step_model("deepseek-v3", "nvidia-h200-sxm", "fp8", "fp8", 8, 1, PRIOR, catalog)
    # prefill of 64 prompts of 1024 tokens: the DEP8 model's, which differs from TP8's
    assert prefill_time(dep, 64, 1024) != pytest.approx(prefill_time(tp8, 64, 1024), rel=1e-3)
    total = fn(PRIOR)
    fn_gpu, _, _ = row_predictor(_row(metric="output_tok_s_per_gpu", unit="tok/s/gpu"), catalog)
    assert total / fn_gpu(PRIOR) == pytest.approx(8.0, rel=1e-12)


def test_predict_row_of_a_converted_dep_row(rows, catalog):
    """`planner predict` on the TensorRT-LLM H200 DEP8 row predicts it (it was refused as
    layout_unsupported before) within a factor of 3 of the published 1,724 tok/s/gpu."""
    out = Predictor(catalog, csv_dir=DATA_DIR / "benchmarks").predict_row(
        rows.loc["trt12-0005"].to_dict()
    )
    assert out["reason"] == ""
    assert 1724 / 3 < out["predicted"] < 1724 * 3


def test_attention_dp_multiplies_the_engine_limits(catalog):
    """max_num_seqs is per attention rank (TensorRT-LLM / SGLang / vLLM): a DEP8 offline row
    with max_num_seqs=1 runs 8 sequences at once (one per rank), so it predicts several times
    the throughput of the same replica with one request in flight in total. Read per replica
    (the old rule) both would run one sequence and predict the same."""
    one = _row(mode="offline", batch="", notes="max_num_seqs=1; 100 requests")
    fn1, r1, _ = row_predictor(one, catalog)
    assert r1 == ""
    # the same replica capped at 1 request in flight in total (the notes' request count)
    cap = _row(mode="offline", batch="", notes="max_num_seqs=1; 1 requests")
    fnc, rc, _ = row_predictor(cap, catalog)
    assert rc == ""
    # 3.7x here: 8 sequences touch more experts per step than one; the old rule gives 1x
    assert fn1(PRIOR) > 2 * fnc(PRIOR)


# ---------------------------------------------------------------- calibration
def test_ep_rows_leave_the_plain_fit_alone_and_fit_the_ep_fields(catalog):
    """Two-stage fit (planner.calibration.ep_fit): adding the DEP rows of the TensorRT-LLM
    release/1.2 table changes no parameter of any node except the EP fields: the routing
    skew of decode tokens ``moe_imbalance`` (prior 0, moves up), of prompt tokens
    ``moe_imbalance_prompt`` (in [0, 4]) and ``adp_prompt_imbalance`` (the share of prompt
    work left on its attention rank, in [0, 1])."""
    from planner.benchmarks.io import load_measurements
    from planner.calibration.fit import fit_profile, prepare_rows

    df = load_measurements(DATA_DIR / "benchmarks" / "public_nvidia.csv", catalog)
    df = df[df["source"].str.contains("release/1.2", regex=False)]
    rows = [r for r in prepare_rows(df, catalog) if r.ok]
    plain = [r for r in rows if not r.expert_parallel]
    ep = [r for r in rows if r.expert_parallel]
    assert len(ep) >= 40 and len(plain) >= 40
    a, b = fit_profile(plain), fit_profile(rows)
    assert len(a.nodes) == len(b.nodes)
    for na, nb in zip(a.nodes, b.nodes, strict=True):
        da, db = na.params.model_dump(), nb.params.model_dump()
        assert da.pop("adp_prompt_imbalance") == 0.0 and da.pop("moe_imbalance") == 0.0
        assert da.pop("moe_imbalance_prompt") == 0.0
        assert 0.0 <= db.pop("adp_prompt_imbalance") <= 1.0
        assert db.pop("moe_imbalance") > 0.01
        assert 0.0 < db.pop("moe_imbalance_prompt") <= 4.0
        assert da == db, (na.gpu, na.precision)
    assert "fitted on the" in b.method
    assert "expert-parallel rows" in b.method


def test_validate_keeps_the_layout_kinds_section(tmp_path):
    """`planner validate` rewrites docs/accuracy.md but keeps the section
    scripts/ep_accuracy.py --write owns (and the serving comparison after it)."""
    from planner.calibration.sections import kept_sections

    doc = tmp_path / "accuracy.md"
    doc.write_text(
        "# old\n<!-- layout-kinds:begin -->\nA\n<!-- layout-kinds:end -->\n"
        "<!-- serving-comparison:begin -->\nB\n<!-- serving-comparison:end -->\n"
    )
    kept = kept_sections(doc)
    assert kept.index("layout-kinds:begin") < kept.index("serving-comparison:begin")
    assert "\nA\n" in kept and "\nB\n" in kept and "# old" not in kept
    text = (REPO_ROOT / "docs" / "accuracy.md").read_text()
    assert "<!-- layout-kinds:begin -->" in text and "DEP / DP-attention" in text
