"""The rows a profile node was fitted on, set against an MLPerf row it predicts: which
tensor-parallel sizes, models and GPUs the node's step rate comes from
(docs/changes/2026-12-07f/mlpamd.md).

Why: every AMD MLPerf Llama-2-70B row (MI300X, MI325X and MI355X; fp8 and MXFP4) runs one
engine per GPU (``tensor_parallel_size: 1``, ``device_count: 8`` of AMD's harness YAMLs),
but resolves to the ``vllm/amd-mi300x/fp8`` dense node, whose rows are all TP4 and TP8
(Llama-3.1-70B / 405B). At TP8 each GPU runs an eighth of every weight matrix, so the
GEMM rate a TP8 fit finds is not the rate of the whole matrices a TP1 engine runs: the
harness's own hipBLASLt timings of one TP1 Llama-2-70B layer at 128 tokens sum to 274 us
(``data/mlperf_harness_gemm.yaml``), the node's GEMM term for the same layer is about
twice that. :func:`fit_domain_note` says so in a prediction's provenance; nothing here
changes a number.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from planner.benchmarks.schema import cell, number
from planner.catalog.catalog import Catalog
from planner.catalog.profile import (
    Profile,
    ProfileNode,
    model_family,
)
from planner.catalog.siblings import nearest_sibling

__all__ = ["fit_domain_note", "node_for", "node_rows"]


def node_for(
    profile: Profile, catalog: Catalog, gpu: str, framework: str, precision: str, family: str
) -> ProfileNode | None:
    """The node :func:`planner.catalog.profile.resolve_params` takes its parameters from for
    (``gpu``, ``framework``, ``precision``, ``family``): the exact node, else the nearest
    sibling GPU's, else the nearest pooled node (None without one)."""
    g = catalog.gpu(gpu)
    fw = catalog.framework(framework).id
    prec = catalog.precision(precision).id
    node, same = profile.find_for_family(fw, g.arch, g.id, prec, g.vendor, family)
    if node is not None and same and node.gpu == g.id and node.precision == prec:
        return node
    return nearest_sibling(profile, catalog, g.id, fw, prec, family) or node


def node_rows(df, node: ProfileNode, catalog: Catalog, family: str | None = "dense"):
    """The benchmark rows of ``df`` in ``node``'s domain: its sources and GPUs, and its
    framework, precision and model family where the node has one (the rows a fit of that
    node could have used; the fit drops some, so ``len`` may exceed ``node.n_rows``)."""
    d = df[df["source"].astype(str).isin(node.sources) & df["hardware"].isin(node.gpus)]
    if node.framework:
        d = d[d["framework"] == node.framework]
    if node.precision:
        ids = {}
        for x in set(d["precision"].astype(str)):
            try:  # rows name formats by alias (nvfp4); the node by catalog id (fp4)
                ids[x] = catalog.precision(x).id == node.precision
            except Exception:
                ids[x] = False
        d = d[d["precision"].astype(str).map(ids).astype(bool)]
    fam = node.family or family
    if fam:
        keep = {}
        for m in set(d["model"].astype(str)):
            try:
                keep[m] = model_family(catalog.model_ref(m)) == fam
            except Exception:  # a model the catalog cannot read stays out
                keep[m] = False
        d = d[d["model"].astype(str).map(keep).astype(bool)]
    return d


def fit_domain_note(df, profile: Profile | None, row: dict[str, Any], catalog: Catalog) -> str:
    """One line: the tensor-parallel sizes, models and GPUs of the rows behind the node that
    predicts ``row`` (:func:`node_for`, :func:`node_rows`), and whether ``row``'s own TP is
    among them ("" without a profile or a node)."""
    if profile is None:
        return ""
    node = node_for(
        profile,
        catalog,
        cell(row, "hardware"),
        cell(row, "framework"),
        cell(row, "precision"),
        "dense",
    )
    if node is None:
        return ""
    d = node_rows(df, node, catalog)
    if not len(d):
        return ""
    tps = sorted({int(t) for t in pd.to_numeric(d["tp"], errors="coerce").dropna()})
    tp = int(number(row, "tp") or 1)
    models = ", ".join(sorted(set(d["model"].astype(str))))
    gpus = ", ".join(sorted(set(d["hardware"].astype(str))))
    inside = "among them" if tp in tps else "outside them"
    return (
        f"{node.label} fitted on {len(d)} rows of TP {'/'.join(map(str, tps))} ({models}; "
        f"{gpus}); this row runs TP{tp}, {inside}"
    )
