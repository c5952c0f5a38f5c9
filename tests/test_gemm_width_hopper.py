"""The H100 GEMM shard-width tables (data/gemm_width.yaml, measured by bench/gemm_width.py):
their derivation from the committed CSV, their selection by compute dtype, and the switch
that leaves them off (docs/changes/2026-12-08/mlperf.md)."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import DATA_DIR, REPO_ROOT

from planner.engine import gemm_width as gw
from planner.engine.step import step_model

#: Llama-70B layer on one GPU at TP1: QKV 10240 x 8192 + O 8192 x 8192 + gate+up 57344 x 8192
#: + down 8192 x 28672 = 855,638,016 matmul parameters
W1 = 855_638_016
CSV = DATA_DIR / "benchmarks" / "gemm_width_h100_micro.csv"


def _script():
    spec = importlib.util.spec_from_file_location(
        "gemm_width_table", REPO_ROOT / "scripts" / "gemm_width_table.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _h100(dtype):
    (t,) = [t for t in gw.tables() if t.id == f"h100-sxm-llama-{dtype}"]
    return t


@pytest.fixture
def hopper_on(monkeypatch):
    """Every table enabled, the Hopper ones included (what the scored-ON refit saw)."""
    on = tuple(t.model_copy(update={"enabled": True}) for t in gw.tables())
    monkeypatch.setattr(gw, "tables", lambda data_dir=None: on)
    return on


def test_the_hopper_tables_are_off():
    assert not _h100("bf16").enabled and not _h100("fp8").enabled
    assert gw.table_for("hopper", "fp8") is None and gw.table_for("hopper", "bf16") is None
    # CDNA keeps its AITER table (bf16), for every compute dtype
    assert gw.table_for("cdna3", "fp8").id == "aiter-gfx950-llama70b-bf16"


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_the_tables_are_the_csv_summed_per_layer(dtype):
    """Each row is 2 M sum(N K) / sum(t) over the four GEMMs of the committed measurement."""
    mod = _script()
    t = _h100(dtype)
    rows = mod.h100_table(CSV, dtype)
    assert list(t.tokens) == list(mod.H100_TOKENS)
    assert list(t.widths) == [w for w, _ in rows]
    assert [list(r) for r in t.tflops] == [r for _, r in rows]
    # widths: Llama-70B / TP (TP1, 2, 4, 8), then Llama-3.1-8B (4096 x 6144 + 4096 x 4096 +
    # 4096 x 28672 + 14336 x 4096 = 218,103,808) / 4 and / 8
    assert list(t.widths) == [W1, W1 // 2, W1 // 4, W1 // 8, 218_103_808 // 4, 218_103_808 // 8]


def test_one_cell_by_hand():
    """fp8, Llama-70B TP8, M = 128: the four GEMM times of the CSV, summed."""
    import csv

    with open(CSV, newline="", encoding="utf-8") as fh:
        rows = [
            r
            for r in csv.DictReader(fh)
            if (r["dtype"], r["model"], r["tp"], r["m"]) == ("fp8", "70b", "8", "128")
        ]
    assert sorted(r["layer"] for r in rows) == ["down", "gate_up", "o", "qkv"]
    t = sum(float(r["s_per_gemm"]) for r in rows)
    assert round(2 * 128 * (W1 // 8) / t / 1e12, 1) == 467.2 == _h100("fp8").tflops[3][3]


def test_dtype_picks_the_table(hopper_on):
    assert gw.table_for("hopper", "fp8").id == "h100-sxm-llama-fp8"
    assert gw.table_for("hopper", "bf16").id == "h100-sxm-llama-bf16"
    # a dtype no Hopper table measures (fp16) takes the first one naming hopper (bf16)
    assert gw.table_for("hopper", "fp16").id == "h100-sxm-llama-bf16"
    assert gw.table_for("cdna3", "fp8").id == "aiter-gfx950-llama70b-bf16"
    assert gw.table_for("blackwell", "fp4") is None  # Blackwell: no measurement


def test_hopper_slowdown_values():
    fp8, bf16 = _h100("fp8"), _h100("bf16")
    # fp8, TP8 at 128 tokens: 676.5 / 467.2 = 1.44799; TP2: 676.5 / 613.2 = 1.10323
    assert gw.slowdown(fp8, W1 / 8, 128) == pytest.approx(676.5 / 467.2, rel=1e-12)
    assert gw.slowdown(fp8, W1 / 2, 128) == pytest.approx(676.5 / 613.2, rel=1e-12)
    # bf16, TP8 at 256 tokens: 668.6 / 516.9 = 1.29348
    assert gw.slowdown(bf16, W1 / 8, 256) == pytest.approx(668.6 / 516.9, rel=1e-12)
    # bf16, TP2 at 2,048 tokens measured faster than TP1 (798.1 > 759.4: ratio 0.9515): read as 1
    assert 759.4 / 798.1 < 1
    assert gw.slowdown(bf16, W1 / 2, 2048) == 1.0


def test_h100_step_model_takes_the_fp8_table_when_on(catalog, hopper_on):
    h8 = step_model("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=8, catalog=catalog)
    h1 = step_model("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=1, catalog=catalog)
    assert gw.factor(h1.gemm_width_points, 128) == pytest.approx(1.0)
    assert gw.factor(h8.gemm_width_points, 128) == pytest.approx(676.5 / 467.2)
    hb = step_model("llama-3.1-70b", "nvidia-h100-sxm", "bf16", tp=8, catalog=catalog)
    assert gw.factor(hb.gemm_width_points, 128) == pytest.approx(352.4 / 285.0)
    b200 = step_model("llama-3.1-70b", "nvidia-b200", "fp8", tp=8, catalog=catalog)
    assert b200.gemm_width_points == ()


def test_h100_step_model_has_no_factor_when_off(catalog):
    h8 = step_model("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=8, catalog=catalog)
    assert h8.gemm_width_points == ()
