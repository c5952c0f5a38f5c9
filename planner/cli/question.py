"""The question ``planner recommend`` answers: a scenario file, flags applied over it or
without one (model, lengths, traffic, SLO), written back with ``--save-scenario``, and the
scenario's path in every ``reproduce`` line."""

from __future__ import annotations

import argparse
from typing import Any

from planner.cli._common import parse_length
from planner.errors import PlannerError

#: the flags that change the scenario's question (model, workload, SLO)
QUESTION_FLAGS = (
    "model", "preset", "peak_rps", "mean_rps", "input_tokens", "output_tokens", "ttft_p99",
    "tpot_p99", "e2e_p99", "attainment", "max_output_tokens",
)  # fmt: skip


def scenario_of(args: argparse.Namespace):
    from planner.scenario import load_scenario, scenario_from_dict

    flags = [getattr(args, k) for k in QUESTION_FLAGS]
    if args.scenario:
        sc = load_scenario(args.scenario)
        if any(v is not None for v in flags):
            sc.require_workload()  # flags override a single workload, not request classes
            d = sc.model_dump(exclude_none=True)
            wl = d["workload"]
            if args.model:
                d["model"] = args.model
            _apply_workload_flags(args, wl)
            _apply_slo_flags(args, d.setdefault("slo", {}))
            sc = scenario_from_dict(d, where=args.scenario)
        return sc
    if not args.model:
        raise PlannerError(
            "give a scenario file (see examples/) or --model with --peak-rps and the lengths "
            "(see 'planner recommend --help')"
        )
    wl: dict[str, Any] = {}
    if args.preset:
        wl["preset"] = args.preset
    elif args.input_tokens is None or args.output_tokens is None:
        raise PlannerError(
            "without a scenario file give --input-tokens and --output-tokens, or a --preset "
            "(chat, rag, code, summarization, batch)"
        )
    if args.peak_rps is None and args.mean_rps is None:
        raise PlannerError("give the traffic: --peak-rps (and optionally --mean-rps)")
    _apply_workload_flags(args, wl)
    slo: dict[str, Any] = {}
    _apply_slo_flags(args, slo)
    if not slo:
        raise PlannerError("give at least one SLO target: --ttft-p99, --tpot-p99 or --e2e-p99")
    return scenario_from_dict(
        {"name": "command line", "model": args.model, "workload": wl, "slo": slo}
    )


def apply_peak(tr: dict[str, Any], peak_rps: float, mean_given: bool) -> None:
    """Set a scenario's traffic mapping ``tr`` to the peak asked for on the command line
    (``--peak-rps``), in place; ``mean_given``: ``--mean-rps`` is given too (it then sets the
    mean itself). ``recommend``, ``capacity`` and ``simulate`` share this rule, so that one
    ``--peak-rps`` over one file plans the same traffic in each.

    Without ``--mean-rps``: a mean above the peak makes the day flat at the peak; a file's
    daily curve whose busiest hour is above the peak keeps its shape with its mean scaled so
    that the busiest hour is the peak; a peak above the curve keeps the file's mean and curve
    (the peak is a burst above the day: the fleet is sized for it, the autoscaled GPU-hours
    follow the curve).
    """
    tr["peak_rps"] = peak_rps
    if mean_given:
        return
    if not (tr.get("mean_rps") or 0) <= peak_rps:
        # only a peak given: the day is planned flat at the peak (stated in the output)
        tr["mean_rps"] = peak_rps
        tr.pop("daily_profile", None)
    if "mean_rps" not in tr:
        tr["mean_rps"] = peak_rps
    prof = tr.get("daily_profile")
    if prof and tr.get("mean_rps") and sum(prof) > 0:
        # the file's daily curve peaks above the peak asked for: keep its shape, scale its
        # mean so that the busiest hour is the given peak (--peak-rps is the rate planned)
        busiest = tr["mean_rps"] * max(prof) / (sum(prof) / 24)
        if busiest > peak_rps:
            tr["mean_rps"] = peak_rps * (sum(prof) / 24) / max(prof)


def _apply_workload_flags(args: argparse.Namespace, wl: dict[str, Any]) -> None:
    if args.preset:
        wl["preset"] = args.preset
    tr = wl.setdefault("traffic", {})
    if args.peak_rps is not None:
        apply_peak(tr, args.peak_rps, args.mean_rps is not None)
    if args.mean_rps is not None:
        tr["mean_rps"] = args.mean_rps
    if args.input_tokens is not None:
        wl["input_tokens"] = parse_length(args.input_tokens, "--input-tokens")
    if args.output_tokens is not None:
        wl["output_tokens"] = parse_length(args.output_tokens, "--output-tokens")
    if getattr(args, "max_output_tokens", None) is not None:
        wl["max_output_tokens"] = args.max_output_tokens


def _apply_slo_flags(args: argparse.Namespace, slo: dict[str, Any]) -> None:
    for name, v in (("ttft", args.ttft_p99), ("tpot", args.tpot_p99), ("e2e", args.e2e_p99)):
        if v is not None:
            slo[name] = {"max_s": v, "percentile": "p99"}
    if args.attainment is not None:
        if not 0 < args.attainment <= 1:
            raise PlannerError(f"--attainment must be in (0, 1], got {args.attainment}")
        slo["attainment"] = args.attainment


# --------------------------------------------------------------------------- commands
def fill_reproduce(recs: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """The scenario's path (and --calibration / --data-dir) in each ``reproduce`` line.
    Workload or SLO flags change the scenario: then the line keeps ``SCENARIO.yaml`` (a file
    with that workload)."""
    import shlex

    flags = [getattr(args, k) for k in QUESTION_FLAGS]
    extra = ""
    if args.calibration:
        extra += f" --calibration {shlex.quote(args.calibration)}"
    if args.data_dir:
        extra += f" --data-dir {shlex.quote(args.data_dir)}"
    path = getattr(args, "save_scenario", None)
    if path is None and args.scenario and all(v is None for v in flags):
        path = args.scenario
    for r in recs:
        line = r.get("reproduce") or ""
        if path is not None:
            line = line.replace("SCENARIO.yaml", shlex.quote(path))
        r["reproduce"] = line + extra


def save_scenario(sc, path: str) -> None:
    """Write the scenario that was answered (flags applied) as YAML that
    :func:`planner.scenario.load_scenario` reads back to an equal scenario."""
    import yaml

    from planner.scenario import load_scenario

    d = sc.model_dump(mode="json", exclude_none=True)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write("# written by planner recommend --save-scenario\n")
            yaml.safe_dump(d, f, sort_keys=False)
    except OSError as e:
        raise PlannerError(f"--save-scenario {path}: {e.strerror or e}") from None
    if load_scenario(path) != sc:  # the file must answer the same question
        raise PlannerError(f"--save-scenario {path}: the written file does not read back equal")
