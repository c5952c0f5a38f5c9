"""The plausible range of every recommendation constraint, in one place: the scenario's
``constraints`` (:class:`planner.recommend.constraints.Constraints`) and the flags of
``planner recommend`` both check against these numbers, so a value refused as a flag is
refused in a file too. Only constants: the CLI imports this module at start-up."""

from __future__ import annotations

#: most GPUs in a fleet, in a replica, or in one TP group [GPUs]
MAX_GPUS = 100_000
#: most spare capacity above the peak (100 = 100x the peak) [fraction]
MAX_HEADROOM = 100.0
#: largest budget, per hour or per month [USD]
MAX_USD_BUDGET = 1e12
#: highest quality floor [bits per weight]
MAX_WEIGHT_BITS = 64.0
#: highest ``latency_cost_cap`` [x the cheapest option's cost]. ``--objective latency``
#: simulates every option under the cap that might be faster, so its work grows with the
#: cap (chat-8b on the 2-core machine: 1.3 s at 2x, 3.7 s at 5x, 13 s at 20x, 95 s at
#: 10^6 x); 10x keeps the worst case within a few seconds and is wider than any
#: cost-latency trade a buyer asks about.
MAX_LATENCY_COST_CAP = 10.0
#: most recommendations listed (``--top``; per GPU with ``--per-gpu``)
MAX_TOP = 100
