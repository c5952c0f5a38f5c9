"""The Pareto front compares the cost each option is ranked at (s13 user test).

An option ranked at its error band's pessimistic edge (``ranked_at_band_edge``, set by
:func:`planner.recommend.beyond.edge_value`) is compared at that edge, not at the point value
the ranking did not trust. Before, TGI fp8 on H200 (transferred from every NVIDIA engine:
$143.85/h predicted, ranked at $249.34/h) dominated the winner, TensorRT-LLM fp8 at the same
$2.66/M and a longer P99, and the winner was missing from the front.
"""

from __future__ import annotations

import pytest

from planner.recommend.finish import pareto_front, ranked_usd_per_mtok


def _opt(rank, usd, e2e, edge=None):
    r = {"rank": rank, "gpu": "nvidia-h200-sxm", "framework": "x", "precision": "fp8", "tp": 2,
         "pp": 1, "usd_per_mtok_output": usd, "e2e_p99_s": e2e}  # fmt: skip
    if edge is not None:
        r["ranked_at_band_edge"] = {"value": edge[0], "point_value": edge[1]}
    return r


def test_ranked_cost_is_the_point_cost_times_the_edge_factor():
    # edge fleet 249.34 $/h over the point fleet 143.85 $/h: 2.66 x 1.7333 = 4.611 $/M
    assert ranked_usd_per_mtok(_opt(2, 2.66, 14.3, (249.34, 143.85))) == pytest.approx(
        2.66 * 249.34 / 143.85
    )
    assert ranked_usd_per_mtok(_opt(1, 2.66, 14.5)) == 2.66


def test_an_edge_ranked_option_does_not_push_the_winner_off_the_front():
    winner = _opt(1, 2.66, 14.49)
    edge = _opt(2, 2.66, 14.33, (249.34, 143.85))  # same point $/M, shorter P99
    dearer = _opt(3, 3.10, 14.60)  # dominated by the winner on both
    front = pareto_front([winner, edge, dearer])
    assert [r["rank"] for r in front] == [1, 2]  # sorted by the ranked $/M: 2.66, 4.61
    assert "usd_per_mtok_output_ranked" not in front[0]
    assert front[1]["usd_per_mtok_output_ranked"] == pytest.approx(4.6106, abs=1e-3)
    # at its point value the edge option alone would dominate the winner
    edge_point = dict(edge, ranked_at_band_edge=None)
    assert [r["rank"] for r in pareto_front([winner, edge_point, dearer])] == [2]
