"""What-ifs on vLLM's KV capacity in the serving rows (issue 32; docs/changes/2026-12-07e/vllmsrc.md). Not
applied in planner: each one patches the replica a serving row is simulated with, then runs
``scripts/latency_rows.py`` with the remaining arguments.

Usage::

    # gpt-oss under vLLM V1's hybrid KV cache manager (sliding-window layers hold only
    # their window): the KV holds L / n_full as many tokens at long context
    PYTHONPATH=$PWD python scripts/vllm_kv_whatif.py --hybrid -- --no-scale --engine vllm \\
        --cache latency_loso_profiles.pkl -o vllm_hybrid.csv
    # a vLLM launch that started held max_model_len tokens of KV (its startup check)
    PYTHONPATH=$PWD python scripts/vllm_kv_whatif.py --launch-floor -- --no-scale --engine vllm
    # the vLLM TTFT / TPOT misses grouped by cause (no simulation: two CSVs of the runs above)
    PYTHONPATH=$PWD python scripts/vllm_kv_whatif.py --causes vllm.csv --hybrid-csv vllm_hybrid.csv

``--hybrid``: vLLM's hybrid KV cache manager (docs.vllm.ai/en/latest/design/
hybrid_kv_cache_manager, which names gpt-oss) reserves "slots for all tokens" on full-attention
layers and "only for the most recent sliding_window_size tokens" on sliding-window layers; the
planner's replica counts every layer for every token (``planner.engine.memory.kv_bytes_per_token``,
"sliding windows ignored"). The what-if turns on the record of ``data/engine_policies.yaml``
``sliding_window_kv`` (``planner.serving.replica.SLIDING_WINDOW_KV``; off in planner): the
replica's KV blocks of a vLLM row (release 0.8.3 on) of a model with sliding-window layers
times ``L / (L - n_sliding)`` (2 for gpt-oss), ignoring the window's own blocks (128 tokens
a request).

``--launch-floor``: vLLM refuses to start when the KV cache cannot hold one request of
``max_model_len`` tokens (V1 ``check_enough_kv_cache_memory``; V0's "The model's max seq len
(...) is larger than the maximum number of tokens that can be stored in KV cache" ValueError,
vllm-project/vllm issue #10517). A row whose server ran therefore had at least that many KV
tokens: its ``max_model_len=`` tag, else the model's context (a launch without
``--max-model-len``). The what-if raises the replica's KV blocks to that floor for vLLM rows of
full-attention models. (Later vLLM releases can auto-fit ``max_model_len`` to the memory
instead; whether a row's release did is not read, so this stays a what-if.)
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency_rows  # noqa: E402

import planner.benchmarks.serving_rows as serving_rows  # noqa: E402

_MML = re.compile(r"max_model_len=(\d+)")


def _patch(hybrid: bool, floor: bool) -> list[tuple[str, int, int]]:
    """Wrap ``serving_rows.build_replica``; returns the list the floor's changes go to."""
    build, result = serving_rows.build_replica, serving_rows._serving_row_result
    current: dict = {}
    changed: list[tuple[str, int, int]] = []

    def row_result(row, *a, **k):
        current["row"] = row
        return result(row, *a, **k)

    def patched(m, *a, **k):
        rep = build(m, *a, **k)
        fw = a[2] if len(a) > 2 else k.get("framework")
        if fw != "vllm":
            return rep
        eng = rep.engine
        if floor and not m.num_sliding_layers:
            mm = _MML.search(current.get("row", {}).get("notes", "") or "")
            need = int(mm.group(1)) if mm else int(m.max_position_embeddings or 0)
            if need > eng.kv_capacity_tokens:
                changed.append((current["row"].get("id", "?"), eng.kv_capacity_tokens, need))
                rep = rep.with_engine(num_blocks=math.ceil(need / eng.block_size_tokens))
        return rep

    if hybrid:  # the product's switch (data/engine_policies.yaml sliding_window_kv, off)
        import planner.serving.replica as replica

        replica.SLIDING_WINDOW_KV = True
    serving_rows._serving_row_result = row_result
    serving_rows.build_replica = patched
    return changed


#: a prediction within this factor of the measurement is no miss (latency_rows.MISS)
MISS = 1.25
#: the largest fitted comm_eff counted as "the fitted all-reduce" (the planner's own NCCL
#: all-reduce on H200 is 0.68, data/benchmarks/nccl_h200_x2_micro.csv; the vLLM nodes fit
#: 0.065-0.10 on Hopper)
LOW_COMM_EFF = 0.2
#: a hybrid-KV what-if that moves a row's prediction by more than this factor makes the
#: row's miss a KV-capacity miss
KV_MOVE = 1.10
#: prompt length [tokens] at or below which an offline burst's TTFT is the API server's
#: admission queue (vllmsrc.md cause 4: ~1,000 requests of 128 tokens)
BURST_PROMPT = 128

CAUSES = (
    "over capacity (open loop above the predicted capacity)",
    "within 25%",
    "node fitted on the other engine generation (V0 <-> V1)",
    "KV capacity: sliding-window layers counted whole (hybrid KV manager)",
    "front end: burst of short prompts (TTFT too fast)",
    "TP all-reduce at the fitted comm_eff (too slow)",
    "fitted node, TP1 (too fast)",
    "fitted node (too slow)",
    "fitted node (too fast)",
)


def vllm_cause(row: dict, node_gens: frozenset | set | None = None,
               hybrid_pred: float | None = None) -> str:  # fmt: skip
    """The cause of a vLLM TTFT / TPOT row's miss (one of :data:`CAUSES`; first match wins).

    Parameters
    ----------
    row : dict
        A line of ``scripts/latency_rows.py``'s CSV (``measured``, ``predicted``,
        ``metric_class``, ``over_capacity``, ``mode``, ``isl``, ``tp``, ``comm_eff``,
        ``generation``: the row's engine generation, V0 / V1 / None).
    node_gens : set, optional
        Engine generations of the training rows of the node the row was predicted with
        (the fold's vLLM rows on its GPU and precision); None: unknown.
    hybrid_pred : float, optional
        The same row predicted under ``--hybrid`` (None: not run).
    """
    r = float(row["predicted"]) / float(row["measured"])
    if str(row.get("over_capacity")).lower() in ("true", "1"):
        return CAUSES[0]
    if abs(math.log(r)) <= math.log(MISS):
        return CAUSES[1]
    gen = row.get("generation") or None
    if (
        gen
        and node_gens
        and gen not in node_gens
        and str(row.get("provenance", "")).startswith("fit (")
    ):
        return CAUSES[2]
    if hybrid_pred is not None and abs(math.log(hybrid_pred / float(row["predicted"]))) > math.log(
        KV_MOVE
    ):
        return CAUSES[3]
    isl = float(row.get("isl") or "nan")
    if (
        row["metric_class"] == "ttft"
        and row.get("mode") == "offline"
        and isl <= BURST_PROMPT
        and r < 1
    ):
        return CAUSES[4]
    tp = float(row.get("tp") or 1)
    if r > 1 and tp > 1 and float(row.get("comm_eff") or 1) <= LOW_COMM_EFF:
        return CAUSES[5]
    if r < 1 and tp <= 1:
        return CAUSES[6]
    return CAUSES[7] if r > 1 else CAUSES[8]


def _node_generations(o: pd.DataFrame) -> dict:
    """(held-out source, GPU, precision) -> the engine generations of the fold's vLLM rows on
    that GPU and precision (the rows its node is fitted on), for each vLLM row of ``o``."""
    from planner.benchmarks.io import load_measurements
    from planner.calibration.fit import prepare_rows, public_files_default
    from planner.catalog.catalog import load_catalog
    from planner.catalog.releases import generation

    cat = load_catalog()
    rows = prepare_rows(load_measurements(public_files_default(), cat), cat)
    gens = {}
    for s, g, p in {(a, b, c) for a, b, c in zip(o.source, o.gpu, o.precision, strict=True)}:
        gens[(s, g, p)] = {
            generation("vllm", r.release or None, cat)
            for r in rows
            if r.framework == "vllm" and r.source != s and r.gpu == g and r.precision == p
            and (r.ok or r.steady)
        } - {None}  # fmt: skip
    return gens


def cause_table(base_csv: str, hybrid_csv: str | None = None) -> pd.DataFrame:
    """The vLLM TTFT / TPOT rows of ``base_csv`` (``latency_rows.py --engine vllm``) by
    :func:`vllm_cause`: rows, MdAPE and median error [%] per (metric class, cause); the
    ``cause`` of each row is written back beside ``base_csv`` (``*_causes.csv``)."""
    from planner.catalog.releases import generation, parse_release

    o = pd.read_csv(base_csv, dtype={"isl": str, "tp": str})
    o = o[(o["engine"] == "vllm") & o["metric_class"].isin(["ttft", "tpot/itl"])].copy()
    hyb = None
    if hybrid_csv:
        h = pd.read_csv(hybrid_csv)
        hyb = dict(zip(zip(h["id"], h["metric"], strict=True), h["predicted"], strict=True))
    gens = _node_generations(o)
    o["generation"] = [
        generation("vllm", parse_release("vllm", v) if isinstance(v, str) else None)
        for v in o["release"]
    ]
    o["cause"] = [
        vllm_cause(d, gens.get((d["source"], d["gpu"], d["precision"])),
                   None if hyb is None else hyb.get((d["id"], d["metric"])))
        for d in o.to_dict("records")
    ]  # fmt: skip
    o.to_csv(str(base_csv).removesuffix(".csv") + "_causes.csv", index=False)
    o["ape"] = o["err_pct"].abs()
    return o.groupby(["metric_class", "cause"]).agg(
        n=("ape", "size"), mdape_pct=("ape", "median"), bias_pct=("err_pct", "median"),
        ratio_min=("err_pct", lambda e: 1 + e.min() / 100),
        ratio_max=("err_pct", lambda e: 1 + e.max() / 100),
    )  # fmt: skip


def _patch_generation() -> list[tuple[str, str]]:
    """What-if ``--own-generation``: a vLLM row whose node (the fold's vLLM rows on its GPU
    and precision) holds only rows of the other engine generation (V0 before 0.8.0, V1
    from it) takes the fold's vLLM node of its vendor instead (``transferred from vllm on
    nvidia``). Returns the list the rows moved go to."""
    from planner.benchmarks.io import load_measurements
    from planner.calibration.fit import prepare_rows, public_files_default
    from planner.catalog.catalog import load_catalog
    from planner.catalog.releases import generation

    cat = load_catalog()
    rows = [r for r in prepare_rows(load_measurements(public_files_default(), cat), cat)
            if r.framework == "vllm" and (r.ok or r.steady)]  # fmt: skip
    gens: dict = {}
    moved: list[tuple[str, str]] = []
    orig = latency_rows.Folds.params

    def params(self, r, cat_):
        p, prov, used = orig(self, r, cat_)
        if r.framework != "vllm" or not prov.startswith("fit (vllm/"):
            return p, prov, used
        key = (r.source, r.gpu, r.precision)
        if key not in gens:
            gens[key] = {generation("vllm", x.release or None, cat) for x in rows
                         if x.source != r.source and x.gpu == r.gpu
                         and x.precision == r.precision} - {None}  # fmt: skip
        own = generation("vllm", r.release or None, cat)
        if own is None or not gens[key] or own in gens[key]:
            return p, prov, used
        prof = self.profiles[r.source]
        node = prof.find("vllm", None, None, None, r.vendor) if prof is not None else None
        if node is None:
            return p, prov, used
        moved.append((r.id, prov))
        return node.params, f"vllm on {r.vendor} ({node.n_rows} rows; own generation)", used

    latency_rows.Folds.params = params
    return moved


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="example: scripts/vllm_kv_whatif.py --hybrid -- --no-scale --engine vllm",
    )
    ap.add_argument("--hybrid", action="store_true", help="vLLM V1's hybrid KV cache manager")
    ap.add_argument("--launch-floor", action="store_true", help="KV >= the launch's max_model_len")
    ap.add_argument(
        "--own-generation",
        action="store_true",
        help="a node fitted only on the other engine generation's rows: the vendor's node",
    )
    ap.add_argument("--causes", metavar="CSV", help="group a vllm CSV's misses by cause; no run")
    ap.add_argument("--hybrid-csv", metavar="CSV", help="--causes: the --hybrid run's CSV")
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="scripts/latency_rows.py arguments")
    a = ap.parse_args(argv)
    if a.causes:
        print(cause_table(a.causes, a.hybrid_csv).round(2).to_string())
        return 0
    changed = _patch(a.hybrid, a.launch_floor)
    moved = _patch_generation() if a.own_generation else []
    rest = a.rest[1:] if a.rest[:1] == ["--"] else a.rest
    rc = latency_rows.main(rest)
    for rid, had, need in sorted(set(changed)):
        print(f"launch floor: {rid} KV {had:,} -> {need:,} tokens")
    for rid, prov in sorted(set(moved)):
        print(f"own generation: {rid} was {prov}")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
