"""Transfer donors of the calibration profile: the nearest fitted sibling GPU and the
words of a provenance label.

:func:`nearest_sibling` picks, for an unfitted (GPU, framework, precision), the fit of the
same framework and precision on the nearest other GPU of the same vendor and architecture
(:func:`sibling_distance`, by datasheet bandwidth and peak);
:func:`planner.catalog.profile.resolve_params` takes it before any pooled level.
:func:`_rows` and :func:`_describe` write the donor into the provenance label that
:data:`planner.catalog.profile.TIER_PATTERNS` reads back. Split out of
``planner/catalog/profile.py`` (2026-12-07) to keep that module under the size limit.
"""

from __future__ import annotations

import math
from typing import Any

from planner.catalog.catalog import Catalog
from planner.errors import PlannerError
from planner.files import IdentityMemo

# The nodes and profiles handled here are planner.catalog.profile's ProfileNode and Profile;
# they are not imported (profile imports this module), so their annotations say ``Any``.


def _key_of(n: Any) -> tuple:
    return (n.vendor, n.framework, n.arch, n.gpu, n.precision)


#: each (profile, catalog)'s nearest sibling per (gpu, framework, precision, family)
_SIBLING = IdentityMemo(max_entries=4096)


def sibling_distance(target, donor) -> float:
    """How far apart two GPUs of one architecture are by their datasheets: ``|ln(HBM
    bandwidth ratio)| + |ln(dense bf16 peak ratio)|``, over the numbers both datasheets give
    (fp16 where bf16 is missing; inf when they share none). The step model scales a donor's
    efficiencies by the target's own peaks, so the nearest donor is the one whose peaks (and
    the kernels' operating point) are closest."""
    dist, known = 0.0, 0
    for f in ("mem_bw_gbs", "bf16_dense_tflops"):
        a = getattr(target, f) or (target.fp16_dense_tflops if f.startswith("bf16") else None)
        b = getattr(donor, f) or (donor.fp16_dense_tflops if f.startswith("bf16") else None)
        if a and b:
            dist, known = dist + abs(math.log(a / b)), known + 1
    return dist if known else math.inf


def nearest_sibling(
    prof: Any,
    cat: Catalog,
    gpu: str,
    framework: str | None,
    precision: str | None,
    family: str | None = None,
) -> Any:
    """The donor of a transfer to an unfitted (gpu, framework, precision): the fit of the
    same framework and precision on the nearest other GPU of the same vendor and
    architecture (:func:`sibling_distance`; ties: more rows, then id), its family child
    where ``family`` is split and it has one; None when no such GPU was fitted (or none
    holds rows of a split ``family``). :func:`resolve_params` takes it before any pooled
    level (same GPU other precisions, the architecture, the vendor ...): efficiencies of the
    same kernels at the same precision transfer, pooling averages other kernels in."""
    if not framework or not precision:
        return None
    fam = family if family in prof.split_families else None
    hit = _SIBLING.get((prof, cat), (gpu, framework, precision, fam))
    if hit is not None:
        return hit[0]
    g = cat.gpu(gpu)
    best: tuple | None = None
    for n in prof.nodes:
        if (
            n.level != 5
            or n.family
            or n.gpu == g.id
            or n.framework != framework
            or n.precision != precision
            or n.arch != g.arch
            or (n.vendor is not None and n.vendor != g.vendor)
            or not n.holds(fam)
        ):
            continue  # fmt: skip
        try:
            d = sibling_distance(g, cat.gpu(n.gpu))
        except PlannerError:  # a GPU the catalog no longer knows
            continue
        if math.isfinite(d) and (best is None or (d, -n.n_rows, n.gpu) < best[0]):
            best = ((d, -n.n_rows, n.gpu), n)
    node = None
    if best is not None:
        node = best[1]
        if fam:
            node = next((c for c in prof.nodes if c.family == fam and _key_of(c) == _key_of(node)),
                        node)  # fmt: skip
    _SIBLING.put((prof, cat), (gpu, framework, precision, fam), (node,))
    return node


def _rows(n: Any) -> str:
    """``48 rows``, or ``34 dense rows`` for a family child; the user's measurements named."""
    own = ", ".join(s[18:] for s in n.sources if s.startswith("your measurement: "))
    rows = f"{n.n_rows} {n.family} rows" if n.family else f"{n.n_rows} rows"
    return rows + (f"; your measurement: {own}" if own else "")


def _gpu_list(n: Any) -> str:
    shown_gpus = ", ".join(n.gpus[:4]) + (f" +{len(n.gpus) - 4}" if len(n.gpus) > 4 else "")
    return f"{shown_gpus}, " if shown_gpus else ""


def _describe(n: Any, rows: str | None = None) -> str:
    """The donor of a transfer, in words (:data:`TIER_PATTERNS` reads these back);
    ``rows`` says how many rows it holds (default :func:`_rows`)."""
    rows = rows or _rows(n)
    if n.gpu is not None:
        return f"{n.framework} on {n.gpu}, all precisions ({rows})"
    if n.arch is not None:
        return f"{n.framework} on {n.arch} GPUs ({rows})"
    if n.vendor is not None and n.framework is not None:
        return f"{n.framework} on {n.vendor} ({_gpu_list(n)}{rows})"
    if n.vendor is not None:
        return f"all frameworks on {n.vendor} ({_gpu_list(n)}{rows})"
    if n.framework is not None:
        return f"{n.framework} on all GPUs ({rows})"
    return f"global fit over all frameworks ({rows})"
