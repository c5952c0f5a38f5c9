"""An expert-parallel size that does not divide the routed experts is placed with redundant
expert slots (planner.catalog.layout.EP_REDUNDANT_FRAMEWORKS); the memory plan says so, since
the launch must ask the engine for those slots (a buyer test, 2026-12-08: DEP6 on DeepSeek-V3
listed no assumption)."""

from __future__ import annotations

from planner.catalog.layout import layout_of
from planner.engine.memory import plan_memory


def _notes(ep: int) -> tuple[str, ...]:
    plan = plan_memory(
        "deepseek-v3", "nvidia-h200-sxm", "fp8", framework="sglang",
        layout=layout_of(1, 1, ep, ep),
    )  # fmt: skip
    return tuple(a for a in plan.assumptions if "does not divide" in a)


def test_dep6_on_256_experts_names_the_redundant_slots():
    # ceil(256 / 6) = 43 slots a rank; 6 x 43 = 258 slots, 258 - 256 = 2 redundant copies
    (note,) = _notes(6)
    assert note.startswith("ep=6 does not divide 256 experts: 43 expert slots a rank, 2 redundant")
    assert "--ep-num-redundant-experts" in note


def test_an_ep_that_divides_the_experts_adds_no_line():
    assert _notes(8) == ()  # 256 / 8 = 32 experts a rank, no copies
