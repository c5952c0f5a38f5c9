"""Compatibility rules between catalog records, each stated once.

Every command that puts a serving framework on a GPU (memory, estimate, capacity, simulate,
recommend, predict, calibrate, the app) asks :func:`check_framework_gpu` (or, to collect the
reason instead of stopping, :func:`framework_gpu_problem`), so they all agree on what runs.
"""

from __future__ import annotations

from planner.catalog.records import Accelerator, Framework
from planner.errors import PlannerError


def framework_gpu_problem(framework: Framework, gpu: Accelerator) -> str | None:
    """Why ``framework`` cannot serve on ``gpu`` (its vendor is not in
    ``Framework.vendors``), or None when it can.

    Parameters
    ----------
    framework : the serving framework (catalog record)
    gpu : the accelerator (catalog record)

    Returns
    -------
    str or None
        one line naming the framework, the vendors it runs on and the GPU's vendor
    """
    if gpu.vendor in framework.vendors:
        return None
    return f"{framework.name} runs on {', '.join(framework.vendors)} GPUs; {gpu.id} is {gpu.vendor}"


def check_framework_gpu(framework: Framework | None, gpu: Accelerator) -> None:
    """Raise :class:`~planner.errors.PlannerError` when ``framework`` cannot serve on ``gpu``
    (no framework: nothing to check)."""
    if framework is None:
        return
    why = framework_gpu_problem(framework, gpu)
    if why:
        raise PlannerError(f"framework {framework.id}: {why}")
