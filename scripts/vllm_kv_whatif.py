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

``--hybrid``: vLLM's hybrid KV cache manager (docs.vllm.ai/en/latest/design/
hybrid_kv_cache_manager, which names gpt-oss) reserves "slots for all tokens" on full-attention
layers and "only for the most recent sliding_window_size tokens" on sliding-window layers; the
planner's replica counts every layer for every token (``planner.engine.memory.kv_bytes_per_token``,
"sliding windows ignored"). The what-if multiplies the replica's KV blocks of a vLLM row of a
model with sliding-window layers by ``L / (L - n_sliding)`` (2 for gpt-oss), ignoring the
window's own blocks (128 tokens a request).

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
        if hybrid and m.num_sliding_layers:
            f = m.num_hidden_layers / (m.num_hidden_layers - m.num_sliding_layers)
            rep = rep.with_engine(num_blocks=int(eng.num_blocks * f))
        if floor and not m.num_sliding_layers:
            mm = _MML.search(current.get("row", {}).get("notes", "") or "")
            need = int(mm.group(1)) if mm else int(m.max_position_embeddings or 0)
            if need > eng.kv_capacity_tokens:
                changed.append((current["row"].get("id", "?"), eng.kv_capacity_tokens, need))
                rep = rep.with_engine(num_blocks=math.ceil(need / eng.block_size_tokens))
        return rep

    serving_rows._serving_row_result = row_result
    serving_rows.build_replica = patched
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="example: scripts/vllm_kv_whatif.py --hybrid -- --no-scale --engine vllm",
    )
    ap.add_argument("--hybrid", action="store_true", help="vLLM V1's hybrid KV cache manager")
    ap.add_argument("--launch-floor", action="store_true", help="KV >= the launch's max_model_len")
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="scripts/latency_rows.py arguments")
    a = ap.parse_args(argv)
    changed = _patch(a.hybrid, a.launch_floor)
    rest = a.rest[1:] if a.rest[:1] == ["--"] else a.rest
    rc = latency_rows.main(rest)
    for rid, had, need in sorted(set(changed)):
        print(f"launch floor: {rid} KV {had:,} -> {need:,} tokens")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
