"""A sourced upper bound on the fitted per-sequence decode cost ``seq_overhead_s`` (OFF).

The step model charges ``seq_overhead_s x num_seqs`` per step (host book-keeping and the
per-sequence device work a step's shape terms do not hold). The fit's bound is 2 ms
(:data:`planner.calibration.fit.FIT_BOUNDS`) with a prior width of 2.5 in log space, so a
node can take almost any value; with the published DeepSeek-R1 routing skew on
(:mod:`planner.engine.route_cv2`) the SGLang B200 node takes the expert reads the skew
removes back as 120 us per sequence (docs/changes/2026-12-10/epdep.md).

The one engine whose per-sequence cost is measured apart from its kernels is the reference
engine (``bench/ref_engine.py``, a Python scheduler on one H200): its serving host time per
scheduled sequence is 4.2-9.1 us (``sched_seq_overhead_s`` fitted on 51,000-67,000 iterations
of its serving logs, each fold on the other models' runs; docs/accuracy.md, reference engine
serving section) and its step rows' device per-sequence term is 1.6-2.9 us (``seq_overhead_s``
of the pytorch nodes of data/calibration/profile.yaml). The slowest sum is 12.0 us. The bound
is 4x that (:data:`SEQ_OVERHEAD_MAX_S`), the same margin as the fit's bound on
``sched_overhead_s`` (4x the slowest host time per iteration measured on those logs). The
factor 4 is chosen, not published; none of the scored public rows set it.

OFF (:data:`APPLY`): scored held out alone it changes nothing (issues 29 and 30); with the
routing skew on it brings issue 29's EP + DEP TPOT back to 29.5 % (skew alone 32.9 %, main
29.7 %) and the serving TPOT to 19.8 % (main 22.4 %), but issue 30's throughput stays worse
(16.5 -> 18.5 %), so both stay off (docs/changes/2026-12-10/routefit.md).
"""

from __future__ import annotations

#: cap ``seq_overhead_s`` at :data:`SEQ_OVERHEAD_MAX_S` in every node fit (False: the fit's
#: own bound, every answer as before)
APPLY = False
#: slowest measured per-sequence cost of the reference engine: host (serving logs, the
#: Llama-3.2-1B fold) + device (step rows, nvidia / pytorch node) [s]
REF_SEQ_COST_S = 9.08e-6 + 2.87e-6
#: the margin over it (chosen, as for ``sched_overhead_s``)
MARGIN = 4.0
#: the bound [s]: 47.8 us
SEQ_OVERHEAD_MAX_S = MARGIN * REF_SEQ_COST_S


def bound(field: str, lo: float, hi: float, width: float) -> tuple[float, float, float]:
    """``(lo, hi, width)`` of a fitted field with the bound applied: ``hi`` of
    ``seq_overhead_s`` lowered to :data:`SEQ_OVERHEAD_MAX_S` when :data:`APPLY` is on,
    else as given.

    Example: ``bound("seq_overhead_s", 1e-9, 2e-3, 2.5)`` is ``(1e-9, 4.78e-5, 2.5)`` with
    APPLY on."""
    if APPLY and field == "seq_overhead_s":
        return lo, min(hi, SEQ_OVERHEAD_MAX_S), width
    return lo, hi, width
