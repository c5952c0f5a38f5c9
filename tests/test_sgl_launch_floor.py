"""scripts/sgl_launch_floor.py: the per-step floor of SGLang's DeepSeek-R1 launches on B200 /
B300 (issue 29 item 1, docs/changes/2026-12-07e/fp4step.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import sgl_launch_floor as slf  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return slf.floor_table(slf.launch_rows(1), None)


def _line(t, prec, layout, img="v0.5.12", gpu="b200", isl="1024/1024"):
    sel = t[(t.gpu == gpu) & (t.img == img) & (t.prec == prec) & (t.layout == layout)
            & (t["isl/osl"] == isl) & (t.conc == 1)]  # fmt: skip
    assert len(sel) == 1, sel
    return sel.iloc[0]


def test_parts_add_up_to_the_step(table):
    # step = GEMM + attention + collective bytes + floor (latencies and fixed overheads);
    # each part is rounded to 0.01 ms, so four parts differ by at most 0.02 ms
    s = table["gemm"] + table["attn"] + table["comm_bytes"] + table["floor"]
    assert (s - table["step"]).abs().max() <= 0.021
    # the residual is the measurement less the bytes / FLOPs parts
    r = table["meas"] - (table["gemm"] + table["attn"] + table["comm_bytes"])
    assert (r - table["resid"]).abs().max() <= 0.021


def test_floor_is_the_collectives_latency_plus_the_fixed_overheads(table):
    # DeepSeek-V3 TP8 and TP8 EP8: 2 all-reduces x 61 layers, each comm_latency_s; fixed =
    # step_overhead_s + 61 x layer_overhead_s + seq_overhead_s x 1; the seq term is < 0.1 ms
    for _, x in table[table.conc == 1].iterrows():
        lat_fixed = (122 * x.comm_lat_us + x.step_oh_us + 61 * x.layer_oh_us) / 1e3
        assert x.floor == pytest.approx(lat_fixed, abs=0.1)


def test_the_fp4_launch_leaves_a_lower_floor_than_the_fp8_launch_of_its_image(table):
    # InferenceX B200, image v0.5.12, 1k/1k, one client: median TPOT 7.18 ms (fp8 TP8, EP 1)
    # against 5.87 ms (nvfp4 TP8 EP8), published rows. The model's bytes / FLOPs parts at
    # batch 1 differ by 0.15 ms (fp8: 0.75 GEMM + 0.01 attention + 0.02 bytes = 0.78; nvfp4:
    # 0.59 + 0.02 + 0.02 = 0.63), so the floors the two measurements leave differ by
    # 1.31 - 0.15 = 1.16 ms, while the model charges both the same floor within 0.3 ms
    fp8 = _line(table, "fp8", "TP8")
    fp4 = _line(table, "nvfp4", "TP8 EP8")
    assert fp8.meas == pytest.approx(7.18, abs=0.01)
    assert fp4.meas == pytest.approx(5.873, abs=0.01)
    assert fp8.resid - fp4.resid == pytest.approx(1.16, abs=0.1)
    assert abs(fp8.floor - fp4.floor) < 0.3
    # and the model's floor is above what the fp4 measurement leaves: 7.08 > 5.24
    assert fp4.floor > fp4.resid + 1.0


def test_item1_whatif_by_hand():
    # two EP TPOT rows of 10 ms: an SGLang NVFP4 TP+EP row predicted 13 (APE 30%) and a
    # TensorRT-LLM row predicted 8 (20%); 1 ms off the SGLang row: 12 ms, APE 20%
    loso = pd.DataFrame({
        "layout_kind": ["TP+EP", "DEP / DP-attention", "TP"],
        "metric": ["tpot_ms_median"] * 3, "framework": ["sglang", "trtllm", "sglang"],
        "gpu": ["nvidia-b200"] * 3, "precision": ["fp4"] * 3, "source": ["a", "b", "a"],
        "measured": [10.0, 10.0, 10.0], "predicted": [13.0, 8.0, 13.0],
    })  # fmt: skip
    w = slf.item1_whatif(loso, [1.0]).set_index("delta_ms")
    assert w.loc[0.0, "rows"] == 2  # the TP row is not an EP row
    assert w.loc[0.0, "TPOT MdAPE %"] == pytest.approx(25.0)  # median of 30, 20
    assert w.loc[0.0, "within 25%"] == 1
    assert w.loc[1.0, "TPOT MdAPE %"] == pytest.approx(20.0)
    assert w.loc[1.0, "within 25%"] == 2
    assert w.loc[1.0, "SGLang NVFP4 rows"] == 1
