"""Run a script with the published routing skew and/or the per-sequence bound switched on
(docs/changes/2026-12-10/routefit.md).

Usage (from the repository root)::

    python scripts/routefit_on.py [--route] [--bound] [--drain|--no-drain] SCRIPT [ARGS...]
    python scripts/routefit_on.py --route --bound scripts/ep_accuracy.py --save /tmp/ep.csv
    python scripts/routefit_on.py --route --bound -m planner.cli validate --holdout SRC

``--route`` sets ``planner.engine.route_cv2.APPLY`` (log-normal family), ``--bound`` sets
``planner.calibration.seq_bound.APPLY``, ``--drain`` / ``--no-drain`` set / clear ``planner.benchmarks.finite_run.APPLY``
(docs/changes/2026-12-10/i30fast.md); ``-m MODULE`` runs a module as ``python -m`` does.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.benchmarks import finite_run  # noqa: E402
from planner.calibration import seq_bound  # noqa: E402
from planner.engine import route_cv2  # noqa: E402

args = sys.argv[1:]
while args and args[0] in ("--route", "--bound", "--drain", "--no-drain"):
    flag = args.pop(0)
    if flag == "--route":
        route_cv2.APPLY = True
    elif flag == "--bound":
        seq_bound.APPLY = True
    else:
        finite_run.APPLY = flag == "--drain"
print(
    f"route_cv2.APPLY={route_cv2.APPLY} ({route_cv2.FAMILY}) seq_bound.APPLY={seq_bound.APPLY} "
    f"finite_run.APPLY={finite_run.APPLY}"
)
if args[0] == "-m":
    sys.argv = [args[1], *args[2:]]
    runpy.run_module(args[1], run_name="__main__", alter_sys=True)
else:
    sys.argv = args
    runpy.run_path(args[0], run_name="__main__")
