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
#: cap: on the 2-core machine chat-8b took 1.4 s at 2x, 4.1 s at 5x, 11.4 s at 10x, 13 s at
#: 20x and 73 s at 10^6 x; code-completion 2.3 s at 2x and 8.2 s at 5x. 5x keeps the worst
#: case within a few times the default's and is wider than the cost-latency trades a buyer
#: weighs.
MAX_LATENCY_COST_CAP = 5.0
#: most recommendations listed (``--top``; per GPU with ``--per-gpu``). The search prunes
#: an option once it cannot enter the top N; a list longer than the distinct GPU x framework
#: options that meet the SLO prunes nothing and simulates everything (chat-8b: 1.8 s at 50,
#: over 130 s at 100). At 20 every example answers in 1.7-2.9 s.
MAX_TOP = 20
#: most options per GPU with ``--per-gpu``: a GPU has only a few frameworks, so a longer list
#: per GPU prunes nothing (chat-8b: 2.9 s at 1, 5.6 s at 3, 6.4 s at 5, over 200 s at 8;
#: rag-70b: 6.8 s at 1, 9.8 s at 3, 13.4 s at 5)
MAX_TOP_PER_GPU = 3
