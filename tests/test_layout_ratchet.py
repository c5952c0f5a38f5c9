"""Loose ``tp`` / ``pp`` pairs: the parallel layout of a deployment belongs in one object,
:class:`planner.catalog.layout.Layout` (issue 29). This test refuses NEW records or functions
that take ``tp`` and ``pp`` as two loose fields or parameters, outside the places listed below.

The list is a ratchet: it may only shrink. When a place below is moved onto ``Layout``, delete
its line (the second test fails until you do, so the list never keeps dead entries). A new
record or function that needs a parallel layout takes a ``Layout`` (or an object that has
one), not ``tp=..., pp=...``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: places that still carry tp and pp loose (2026-12-06: 22, and the expected.json record;
#: 19 after the recommender's Option / Rejection moved onto Layout).
#: Only delete lines from this set.
ALLOWED = frozenset(
    {
        # the layout object itself and its constructor
        "planner/catalog/layout.py:Layout",
        "planner/catalog/layout.py:layout_of",
        # user-facing edges: a scenario file and the app's form are written as tp / pp fields
        "planner/scenario.py:Deployment",
        "planner/scenario.py:Scenario.resolve_deployment",
        "planner/scenario.py:Scenario.build_replica",
        "app_pages/deployment.py:Setup",
        # the expected.json file written with a deployment's predictions (issue 31)
        "planner/deploy/expected.py:ExpectedOption",
        # to be moved onto Layout
        "planner/benchmarks/predict.py:RowContext",
        "planner/catalog/catalog.py:check_layout",
        "planner/engine/memory.py:WeightMemory",
        "planner/engine/memory.py:weight_memory",
        "planner/engine/memory.py:_weight_memory",
        "planner/engine/memory.py:MemoryPlan",
        "planner/engine/memory.py:plan_memory",
        "planner/engine/memory.py:_suggest",
        "planner/engine/step.py:StepModel",
        "planner/engine/step.py:step_model",
        "planner/serving/disagg.py:Pool",
        "planner/serving/replica.py:Replica",
        "planner/serving/replica.py:build_replica",
    }
)


def _files() -> list[Path]:
    files = sorted((ROOT / "planner").rglob("*.py")) + sorted((ROOT / "app_pages").rglob("*.py"))
    return files + [ROOT / "app.py"]


def _walk(node: ast.AST, rel: str, prefix: str, found: set[str]) -> None:
    for ch in ast.iter_child_nodes(node):
        if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = ch.args
            names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        elif isinstance(ch, ast.ClassDef):
            names = {
                s.target.id
                for s in ch.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
        else:
            continue
        if {"tp", "pp"} <= names:
            found.add(f"{rel}:{prefix}{ch.name}")
        _walk(ch, rel, f"{prefix}{ch.name}.", found)


def loose_pairs() -> set[str]:
    """``path:Qual.name`` of every class with annotated fields ``tp`` and ``pp`` and every
    function with parameters ``tp`` and ``pp``, in planner/, app_pages/ and app.py."""
    found: set[str] = set()
    for path in _files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        _walk(tree, path.relative_to(ROOT).as_posix(), "", found)
    return found


def test_scanner_sees_a_loose_pair():
    # the scanner is not vacuous: the Layout record itself has tp and pp fields
    assert "planner/catalog/layout.py:Layout" in loose_pairs()


def test_no_new_loose_tp_pp_pairs():
    new = sorted(loose_pairs() - ALLOWED)
    assert not new, (
        "new records / functions with loose tp and pp (take a planner.catalog.layout.Layout "
        f"instead): {new}"
    )


def test_ratchet_list_has_no_dead_entries():
    gone = sorted(ALLOWED - loose_pairs())
    assert not gone, f"these no longer carry loose tp/pp: delete them from ALLOWED: {gone}"
