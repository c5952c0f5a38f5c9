"""What-if (issue 29 item 1; docs/changes/2026-12-07f/dep8.md): the published NVFP4 MoE layer as the routed
experts' floor, read over its whole table at the busiest EP shard's rows under the published
routing skew, scored held out by source with ``scripts/ep_accuracy.py``.

The planner itself is unchanged; this script patches, for its own run only:

* ``data/moe_kernels.yaml``'s record (FlashInfer PR #5301, TensorRT-LLM trtllm-gen NVFP4 MoE,
  B300, an EP8 shard of 32 local experts, uniform routing) is read as applied;
* its points are every timed count, not only the memory-bound ones, each moved to the
  replica tokens ``T`` whose busiest shard receives that many rows:
  ``T (1 + s) + sqrt(2 ln 8) sqrt(T) = n`` with ``s`` = 1.564272 (TensorRT-LLM tech blog 4,
  ``data/moe_routing_skew.yaml``), i.e. ``sqrt(T) = (-z + sqrt(z^2 + 4 (1 + s) n)) / (2 (1 +
  s))``. The step model's floor (``planner.engine.moe_floor``: GEMM term at least the dense
  bytes + 58 x the layer time at ``T``) then charges the kernel at the busiest shard's rows.

Held out (all ten EP sources), against main 03add19: EP + DEP TPOT 28.8% -> 33.6% (49 -> 45
rows within 25%); MLPerf v6.0 TPOT 26.9% -> 17.1% (14 -> 24 within; no row left on the lower
operating branch); InferenceX SGLang B200 NVFP4 TP8 EP8 TPOT pred / meas 1.22 -> 1.49 (14 -> 1
within); MLPerf v6.0 TTFT 10.2% -> 42.9%.

Usage (repository root; ~9 min on two shared cores)::

    PYTHONPATH=$PWD python scripts/moe_kernel_hot_whatif.py --save /tmp/floor.csv
"""

from __future__ import annotations

import math
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.catalog import moe_kernels  # noqa: E402
from planner.catalog.routing_skew import measured_skew  # noqa: E402
from planner.engine import ep_terms, moe_floor  # noqa: E402

#: the published skew of DeepSeek-R1 routing at EP <= 32 without a load balancer (1.564272)
SKEW = measured_skew(256, 8, 8).value
Z8 = math.sqrt(2.0 * math.log(8))


def replica_tokens(rows: float, skew: float = SKEW, z: float = Z8) -> float:
    """Replica tokens ``T`` whose busiest shard receives ``rows`` routed rows:
    ``T (1 + skew) + z sqrt(T) = rows``. 4,096 rows: sqrt(T) = (-2.03933 + sqrt(4.15890 +
    4 x 2.564272 x 4,096)) / 5.128544 = 39.5710, T = 1,565.86."""
    a = 1.0 + skew
    r = (-z + math.sqrt(z * z + 4.0 * a * rows)) / (2.0 * a)
    return r * r


def timing(m, precision_id, arch, ep, moe_tp, data_dir=None):
    """``moe_kernels.moe_layer_timing`` with every record read as applied."""
    for r in moe_kernels.moe_layer_timings(data_dir):
        r = r.model_copy(update={"applied": True})
        if r.matches(m, precision_id, arch, ep, moe_tp):
            return r
    return None


def points(rec, mem_bw_gbs):
    """Every timed count of ``rec`` as (replica tokens, seconds) at the busiest shard's rows."""
    scale = rec.reference_mem_bw_gbs / mem_bw_gbs
    pts = tuple(
        (replica_tokens(float(n)), float(t) * 1e-6 * scale)
        for n, t in zip(rec.tokens, rec.time_us, strict=True)
    )
    return pts[: moe_floor.MOE_SLOTS]


def patch() -> None:
    moe_kernels.moe_layer_timing = timing
    ep_terms.moe_kernels.moe_layer_timing = timing
    moe_floor.floor_points = points
    ep_terms.moe_floor.floor_points = points


if __name__ == "__main__":
    patch()
    sys.argv = [str(ROOT / "scripts" / "ep_accuracy.py"), *sys.argv[1:]]
    runpy.run_path(sys.argv[0], run_name="__main__")
