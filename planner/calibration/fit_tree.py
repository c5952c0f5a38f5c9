"""The fit tree: which nodes of the hierarchy ``global -> vendor -> vendor x framework -> x arch
-> x gpu -> x precision`` (plus one framework-wide node, and one child per split model family)
:func:`planner.calibration.fit.fit_profile` fits, on which rows, with which parent as the
prior, and which of them a set of lookups needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from planner.calibration.prepared_rows import PreparedRow
from planner.catalog.profile import _framework_key, _lookup_keys, _node_keys

_ROOT = _node_keys(None, None, None, None, None)[0]


def _fit_tree(
    rows: Sequence[PreparedRow], min_rows: int, split: Sequence[str]
) -> dict[tuple, list[PreparedRow]]:
    """The nodes to fit and their rows, keyed ``(key, family)``: ``key`` a fit-tree key
    (vendor, framework, arch, gpu, precision) of :func:`_node_keys` (or the framework-wide
    :func:`_framework_key`) with ``family`` "" for the rows of every model family, and one
    child per family of ``split`` under a node whose rows are not all of that family.
    Nodes with fewer than ``min_rows`` rows are left out."""
    groups: dict[tuple, list[PreparedRow]] = {_ROOT: list(rows)}
    for r in rows:
        chain = _node_keys(r.vendor or None, r.framework, r.arch, r.gpu, r.precision)
        for k in (*chain[1:], _framework_key(r.framework)):
            groups.setdefault(k, []).append(r)
    tree = {(k, ""): g for k, g in groups.items() if len(g) >= min_rows}
    for (k, _), g in list(tree.items()):
        for fam in split:
            sub = [r for r in g if r.family == fam]
            if len(sub) >= min_rows and len(sub) < len(g):
                tree[(k, fam)] = sub
    return tree


def _parent_key(key: tuple, tree: dict[tuple, list[PreparedRow]]) -> tuple | None:
    """The node of ``tree`` (:func:`_fit_tree`) whose parameters are the prior of ``key``.

    A family child's parent is its node of every family; any other node's parent is the
    closest ancestor in the tree of every family (global for the framework-wide node). A
    family child is a leaf: nothing is shrunk toward it. How far a model family runs from
    the dense physics depends on the engine and GPU (MoE rows of one engine are not evidence
    about another's), so the family split is made where a node's rows are, not above it.
    None for the root."""
    k, fam = key
    if fam:
        return (k, "")
    if k == _ROOT:
        return None
    if k == _framework_key(k[1]):
        pk = _ROOT
    else:
        pk = next((a for a in reversed(_node_keys(*k)[: _level(k)]) if (a, "") in tree), _ROOT)
    return (pk, "") if (pk, "") in tree else None


def _needed_keys(
    tree: dict[tuple, list[PreparedRow]], targets: Iterable[tuple], split: Sequence[str]
) -> set[tuple]:
    """Keys of ``tree`` that the lookup of each target lands on (as
    :meth:`planner.catalog.profile.Profile.find_for_family` walks it), and their parents."""
    need: set[tuple] = {(_ROOT, "")} if (_ROOT, "") in tree else set()
    for t in set(targets):
        fam = t[5] if len(t) > 5 and t[5] in split else ""
        hit, nearest = None, None
        for k in _lookup_keys(*t[:5]):
            if (k, "") not in tree:
                continue
            if not fam or any(r.family == fam for r in tree[(k, "")]):
                hit = (k, fam) if (k, fam) in tree else (k, "")
                break
            nearest = nearest or (k, "")
        key = hit or nearest
        exact = hit is not None and hit[0][3] == t[3] and hit[0][4] == t[4]
        starts = [key]
        if not exact and t[1] is not None and t[4] is not None:
            # the same framework and precision on another GPU of the architecture: the
            # donor resolve_params takes before any pooled level (nearest_sibling)
            starts += sorted(
                (k, f) for k, f in tree
                if k[0] == t[0] and k[1] == t[1] and k[2] == t[2] and k[4] == t[4]
                and k[3] is not None and k[3] != t[3] and f in ("", fam)
            )  # fmt: skip
        for key in starts:
            while key is not None and key not in need:
                need.add(key)
                key = _parent_key(key, tree)
    return need


def _level(k: tuple) -> int:
    """Depth of a fit-tree key (vendor, framework, arch, gpu, precision): the index of its
    last set field + 1 (0 = global); the framework-across-vendors node is depth 1."""
    if k == _framework_key(k[1]) and k[1] is not None:
        return 1
    return max((i + 1 for i, x in enumerate(k) if x is not None), default=0)
