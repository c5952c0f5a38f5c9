"""Compatibility rules between catalog records, each stated once.

Every command that puts a serving framework on a GPU (memory, estimate, capacity, simulate,
recommend, predict, calibrate, the app) asks :func:`check_framework_gpu` (or, to collect the
reason instead of stopping, :func:`framework_gpu_problem`), so they all agree on what runs;
the commands that plan a deployment also pass the ``gpu_support`` records of
``data/frameworks.yaml`` (GPUs an engine's builds do not target, ``Catalog.resolve`` and
recommend), while a published benchmark row, measured on its GPU, is checked by vendor only.
The same commands ask :func:`check_model_format` (or :func:`model_format_problem`) whether the
framework serves the model's MoE architecture in the weight format (``data/moe_formats.yaml``:
TensorRT-LLM serves DeepSeek-V3 in FP8, NVFP4 and W4AFP8, not in W8A8 INT8).
:func:`own_release_on` says whether a deployment loads the model's own released checkpoint
on the GPU's architecture (gpt-oss's MXFP4 experts on Hopper / Ampere, run weight-only).
:func:`framework_precision_problem` says whether the engine has kernels for the weight format on
the GPU's vendor (``vendor_precision_gaps`` of ``data/frameworks.yaml``: vLLM documents no INT8
W8A8, AWQ or GPTQ kernels on AMD GPUs); ``Catalog.resolve`` and recommend both ask it, so every
command that plans a deployment refuses the same formats.
"""

from __future__ import annotations

from planner.catalog.framework_gpus import GpuRefused
from planner.catalog.moe_formats import EngineFormats, model_format_problem
from planner.catalog.records import Accelerator, Framework, ModelArch, Precision
from planner.errors import PlannerError

__all__ = [
    "check_framework_gpu",
    "check_framework_precision",
    "check_model_format",
    "disaggregation_problem",
    "framework_gpu_problem",
    "framework_precision_problem",
    "model_format_problem",
    "own_release_on",
]


def framework_gpu_problem(
    framework: Framework, gpu: Accelerator, refused: tuple[GpuRefused, ...] = ()
) -> str | None:
    """Why ``framework`` cannot serve on ``gpu`` (its vendor is not in
    ``Framework.vendors``, or a ``gpu_support`` record of ``data/frameworks.yaml`` says its
    builds do not run on that GPU), or None when it can.

    Parameters
    ----------
    framework : the serving framework (catalog record)
    gpu : the accelerator (catalog record)
    refused : the catalog's ``gpu_support`` records (``Catalog.framework_gpus``)

    Returns
    -------
    str or None
        one line naming the framework and the GPU, why, and the source
    """
    if gpu.vendor not in framework.vendors:
        return (f"{framework.name} runs on {', '.join(framework.vendors)} GPUs; "
                f"{gpu.id} is {gpu.vendor}")  # fmt: skip
    for r in refused:
        if r.framework == framework.id and gpu.id in r.gpus:
            return (f"{framework.name} does not run on {gpu.id}: {r.why} (source: {r.source}, "
                    f"as of {r.as_of})")  # fmt: skip
    return None


def check_framework_gpu(
    framework: Framework | None, gpu: Accelerator, refused: tuple[GpuRefused, ...] = ()
) -> None:
    """Raise :class:`~planner.errors.PlannerError` when ``framework`` cannot serve on ``gpu``
    (no framework: nothing to check)."""
    if framework is None:
        return
    why = framework_gpu_problem(framework, gpu, refused)
    if why:
        raise PlannerError(f"framework {framework.id}: {why}")


def framework_precision_problem(
    framework: Framework | None, precision: Precision, gpu: Accelerator
) -> str | None:
    """Why ``framework`` has no kernels for ``precision`` weights on ``gpu``'s vendor (a
    ``vendor_precision_gaps`` entry of ``data/frameworks.yaml``, read from the engine's own
    hardware-support table), or None when nothing says so (no framework: None).

    Parameters
    ----------
    framework : the serving framework (catalog record), or None
    precision : the weight format (catalog record)
    gpu : the accelerator (catalog record)

    Returns
    -------
    str or None
        one line naming the engine, the format, the vendor and where it is recorded
    """
    if framework is None or precision.id not in framework.vendor_precision_gaps.get(gpu.vendor, ()):
        return None
    return (f"{framework.name} has no {precision.id} kernels on {gpu.vendor.upper()} GPUs (its "
            "hardware-support table; data/frameworks.yaml vendor_precision_gaps)")  # fmt: skip


def check_framework_precision(
    framework: Framework | None, precision: Precision, gpu: Accelerator
) -> None:
    """Raise :class:`~planner.errors.PlannerError` when :func:`framework_precision_problem`
    finds a reason."""
    why = framework_precision_problem(framework, precision, gpu)
    if why:
        raise PlannerError(f"precision {precision.id}: {why}")


def disaggregation_problem(framework: Framework, offered_by: tuple[str, ...] = ()) -> str | None:
    """Why ``framework`` cannot run one pool of a prefill/decode disaggregated deployment
    (``Framework.disaggregation`` of ``data/frameworks.yaml``: False when the engine does not
    offer it, None when no source was read), or None when its documentation describes it.

    Parameters
    ----------
    framework : the serving framework (catalog record)
    offered_by : names of the engines that document it (for the message)

    Returns
    -------
    str or None
        one line naming the engine, why, and the engines that do
    """
    if framework.disaggregation:
        return None
    why = (
        f"{framework.name} does not offer prefill/decode disaggregation "
        f"(source: {framework.disaggregation_source})"
        if framework.disaggregation is False
        else f"no source read says {framework.name} runs prefill/decode disaggregation "
        "(data/frameworks.yaml disaggregation)"
    )
    return why + (f"; engines that do: {', '.join(offered_by)}" if offered_by else "")


def check_model_format(
    records: tuple[EngineFormats, ...],
    model: ModelArch,
    framework: Framework | None,
    precision: Precision,
) -> None:
    """Raise :class:`~planner.errors.PlannerError` when a record of ``data/moe_formats.yaml``
    says ``framework`` does not serve ``model``'s architecture in ``precision`` (no record,
    no framework: nothing to check)."""
    why = model_format_problem(records, model, framework, precision)
    if why:
        raise PlannerError(f"precision {precision.id}: {why}")


def own_release_on(model: ModelArch, precision: Precision, gpu: Accelerator) -> bool:
    """Whether ``precision`` is ``model``'s own released format (``ModelArch.native_precision``)
    and the catalog lists that release's checkpoint for ``gpu``'s architecture
    (``Checkpoint.archs``, each with its source in data/models.yaml).

    gpt-oss ships only MXFP4 experts; on Hopper and Ampere the engines load that checkpoint
    and run the experts weight-only (bf16 activations: ``Precision.fallback_compute_dtype``),
    so the format is the one a team deploys there even though the GPU has no FP4 tensor cores.
    A model without its own FP4 release (a third-party NVFP4 quantization) gets False.

    Parameters
    ----------
    model : the model (catalog record)
    precision : the weight format (catalog record)
    gpu : the accelerator (catalog record)
    """
    return (
        model.native_precision == precision.id
        and model.checkpoint_for(precision.id, gpu.arch) is not None
    )
