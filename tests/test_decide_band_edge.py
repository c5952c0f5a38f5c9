"""``winner_at_price_rows`` and the break-even price read an option at the value it is ranked
by: an option ranked at its error band's pessimistic edge (``ranked_at_band_edge``,
:mod:`planner.recommend.beyond`) competes with its edge fleet, not its point fleet.

The buyer question of DeepSeek-R1 at 20 req/s, 2k -> 1k, on B200 / H200 / MI355X ranked
B200 SGLang DEP4 + MTP first (8 GPUs, $0.794/M output tokens) and MI355X vLLM DEP4 + MTP
third: its point answer (8 GPUs, $0.622/M) is 8.9x beyond the best MI355X measurement, so it
is ranked at its band's edge, 28 GPUs. The decision still said MI355X wins at the min,
median and max price rows, though the median row is the price it was ranked at.
"""

from __future__ import annotations

import pytest

from planner.recommend.decide import decide


def _rec(gpu: str, fw: str, usd_mtok: float, usd_gpu_h: float, spread: tuple, **kw) -> dict:
    lo, med, hi = spread
    return {
        "gpu": gpu, "framework": fw, "precision": "fp4", "tp": 1, "pp": 1, "ep": 4,
        "attention_dp": 4, "layout": "DEP4", "usd_per_mtok_output": usd_mtok,
        "usd_per_gpu_hour": usd_gpu_h,
        "price_spread": {"kind": "on_demand", "min": lo, "median": med, "max": hi},
        **kw,
    }  # fmt: skip


def _recs() -> list[dict]:
    # the two options' numbers of that answer (planner recommend ... --per-gpu)
    b200 = _rec("nvidia-b200", "sglang", 0.794, 7.15, (6.03, 7.15, 14.24))
    edge = {"objective": "cost", "value": 28 * 5.595, "point_value": 8 * 5.595, "num_gpus": 28}
    mi355 = _rec("amd-mi355x", "vllm", 0.622, 5.595, (5.595, 5.595, 5.595),
                 ranked_at_band_edge=edge)  # fmt: skip
    return [b200, mi355]


def test_the_median_row_names_the_ranked_winner():
    recs = _recs()
    decide(recs, "cost")
    at = recs[0]["winner_at_price_rows"]
    # at the edge MI355X costs 0.622 x 28 / 8 = $2.177/M; B200 at its min row 0.794 x 6.03 /
    # 7.15 = $0.670/M and at its max row 0.794 x 14.24 / 7.15 = $1.581/M: B200 at every row
    assert at == {w: "nvidia-b200 sglang fp4 DEP4" for w in ("min", "median", "max")}


def test_the_break_even_is_at_the_ranked_value():
    recs = _recs()
    decide(recs, "cost")
    # MI355X ties B200's $0.794/M at 5.595 x 0.794 / (0.622 x 3.5) = $2.041/GPU-h
    assert recs[1]["break_even_usd_per_gpu_hour"] == pytest.approx(
        5.595 * 0.794 / (0.622 * 3.5), rel=1e-9
    )


def test_an_option_at_its_point_is_unchanged():
    recs = _recs()
    del recs[1]["ranked_at_band_edge"]
    decide(recs, "cost")
    assert recs[1]["break_even_usd_per_gpu_hour"] == pytest.approx(5.595 * 0.794 / 0.622)
    assert recs[0]["winner_at_price_rows"]["median"] == "amd-mi355x vllm fp4 DEP4"
