"""A screened option's provenance names its own layout's release floor (issue 29).

:meth:`planner.recommend.screen._Screening.params_of` remembers the fitted parameters by GPU x
framework x precision and floor. Two layouts can share a floor release but not its reason
("attention data-parallel from vllm 0.8.5" vs "expert parallelism from vllm 0.8.5"); the text
of the first one screened must not be read for the second. Before the fix the key held the
floor's release only, so the provenance depended on the screening order (a forked search
screens in another order: ``recommend examples/moe-r1.yaml --objective tokens-per-dollar``
gave two answers in three runs).
"""

from __future__ import annotations

from types import SimpleNamespace

from planner.recommend import screen

FLOORS = {
    "dep8": ("0.8.5", "attention data-parallel from vllm 0.8.5"),
    "tp8ep8": ("0.8.5", "expert parallelism from vllm 0.8.5"),
}


def _opt(layout: str) -> SimpleNamespace:
    return SimpleNamespace(
        gpu=SimpleNamespace(id="amd-mi300x"),
        framework=SimpleNamespace(id="vllm"),
        precision=SimpleNamespace(id="fp8"),
        layout=layout,
    )


def _screening(monkeypatch) -> screen._Screening:
    monkeypatch.setattr(screen, "release_floor", lambda fw, layout, m, cat: FLOORS[layout])
    # no release node: the provenance says which release the layout needs, and why
    monkeypatch.setattr(screen, "resolve_release_params", lambda *a, **k: ({}, "fit", None))
    monkeypatch.setattr(screen, "model_family", lambda m: "moe")
    s = screen._Screening.__new__(screen._Screening)
    s.floor_cache, s.param_cache, s.m, s.cat, s.profile = {}, {}, None, None, None
    return s


def test_each_layout_keeps_its_floor_reason_in_either_order(monkeypatch):
    for order in (("dep8", "tp8ep8"), ("tp8ep8", "dep8")):
        s = _screening(monkeypatch)
        for layout in order:
            _, _, prov = s.params_of(_opt(layout))
            assert prov == f"fit; needs vllm >= 0.8.5: {FLOORS[layout][1]}"
