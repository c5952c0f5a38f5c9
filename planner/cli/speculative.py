"""Speculative decoding flags shared by estimate, simulate and capacity."""

from __future__ import annotations

import argparse
from typing import Any

from planner.catalog.speculative import METHODS, WORKLOADS, replica_kwargs
from planner.errors import PlannerError

SPEC_EXAMPLES = (
    "  planner estimate --model deepseek-v3 --gpu nvidia-h200-sxm --precision fp8 --tp 8 "
    "--framework sglang --spec-method mtp --spec-tokens 1\n"
    "  planner simulate examples/chat-8b.yaml --spec-method eagle3 --spec-tokens 3 "
    "--acceptance-length 2.4\n"
    "  planner capacity examples/chat-8b.yaml --spec-method eagle3 --spec-tokens 7 "
    "--spec-workload code\n"
)


def _al(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a number of tokens per step, got {text!r}"
        ) from None
    if not v >= 1.0:
        raise argparse.ArgumentTypeError(f"must be >= 1 token per step, got {text!r}")
    return v


def _k(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return v


def add_spec_args(group) -> None:
    """--spec-method, --spec-tokens, --acceptance-length, --draft-model, --spec-workload."""
    group.add_argument(
        "--spec-method",
        choices=("none", *METHODS),
        default=None,
        help="speculative decoding: mtp (the model's MTP / NextN modules), eagle3, draft "
        "(a draft model, --draft-model), ngram; default none",
    )
    group.add_argument(
        "--spec-tokens", type=_k, default=None, help="draft tokens verified per step, K"
    )
    group.add_argument(
        "--acceptance-length",
        type=_al,
        default=None,
        help="mean tokens per verify step incl. the bonus token, 1..K+1 (default: the "
        "published value for the model, method and K in data/speculative.yaml)",
    )
    group.add_argument("--draft-model", default=None, help="draft model id for --spec-method draft")
    group.add_argument(
        "--spec-workload",
        choices=WORKLOADS,
        default=None,
        help="the prompts' kind the acceptance prior is read for: chat, code, math, mixed, "
        "random (random tokens in the chat template, as InferenceX benchmarks), random-raw "
        "(no template); default: every natural-text row",
    )


def spec_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The speculative decoding fields of parsed arguments (None where not given)."""
    return {
        "spec_method": getattr(args, "spec_method", None),
        "spec_tokens": getattr(args, "spec_tokens", None),
        "acceptance_length": getattr(args, "acceptance_length", None),
        "draft_model": getattr(args, "draft_model", None),
        "spec_workload": getattr(args, "spec_workload", None),
    }


def check_workload_used(args: argparse.Namespace, spec) -> None:
    """Refuse --spec-workload when no speculative decoding is on (``spec`` None): the prompts'
    kind picks an acceptance length, and without a method there is none to pick."""
    wl = getattr(args, "spec_workload", None)
    if wl is not None and spec is None:
        raise PlannerError(
            f"--spec-workload {wl} is set but speculative decoding is off (--spec-method, or "
            "the scenario's deployment.spec_method, is none); set --spec-method too or drop "
            "--spec-workload"
        )


def acceptance_scaled(spec, low, high):
    """A capacity band (``low``, ``high``) [req/s] widened by the acceptance spread: the
    low end at ``AL_low / AL``, the high end at ``AL_high / AL`` (a decode-bound replica's
    capacity scales with the tokens each step gives; an upper bound of the spread's effect,
    since prefill does not scale). Unchanged without speculative decoding or spread."""
    if spec is None or not spec.spread:
        return low, high
    al_lo, al_hi = spec.al_band
    al = spec.acceptance_length
    return (
        None if low is None else low * al_lo / al,
        None if high is None else high * al_hi / al,
    )


def deployment_fields(rep) -> dict[str, Any]:
    """The deployment of a replica as JSON fields (capacity / simulate): GPU, engine,
    formats, layout (tp, pp, ep, attention_dp), GPUs a replica and the speculative setting,
    the keys recommend's options carry."""
    lay = rep.the_layout
    s = rep.spec
    return {
        "gpu": rep.sm.gpu.id,
        "framework": rep.engine.framework or None,
        "precision": rep.sm.precision.id,
        "kv_precision": rep.memory.kv_precision if rep.memory is not None else None,
        "tp": lay.tp,
        "pp": lay.pp,
        "ep": lay.ep,
        "attention_dp": lay.attention_dp,
        "layout": lay.label,
        "gpus_per_replica": rep.num_gpus,
        "disaggregated": False,
        "spec_method": s.method if s is not None else None,
        "spec_tokens": s.spec_tokens if s is not None else None,
        "acceptance_length": s.acceptance_length if s is not None else None,
    }


def replica_spec_kwargs(rep) -> dict[str, Any]:
    """build_replica's speculative decoding arguments that rebuild ``rep``'s setting (empty
    when off), e.g. for the other TP sizes of ``capacity --compare-tp``."""
    return replica_kwargs(rep.spec)


def check_spec_flags(args: argparse.Namespace, speculative: str) -> None:
    """Refuse --acceptance-length / --spec-workload where no speculative setting is searched.

    Both only change the settings that ``speculative: auto`` adds; without it they would be
    ignored without a word (the answer is the plain one).
    """
    if speculative == "auto":
        return
    for flag, attr in (("--acceptance-length", "acceptance_length"),
                       ("--spec-workload", "spec_workload")):  # fmt: skip
        if getattr(args, attr, None) is not None:
            raise PlannerError(
                f"{flag} applies to the speculative search, which is off for this run "
                "(--speculative, or the scenario's constraints.speculative, is off); add "
                f"--speculative auto or drop {flag}"
            )


def check_acceptance_length(al: float, model, data_dir: str | None) -> None:
    """Refuse --acceptance-length where it would replace no setting: the model has no published
    speculative setting (method x K) to search, or every one's K + 1 is below ``al``."""
    from pathlib import Path

    from planner.catalog.speculative import acceptance_records

    recs = acceptance_records(Path(data_dir) if data_dir else None)
    ks = sorted(
        {(r.method, r.spec_tokens) for r in recs if r.model == model.id and r.method != "draft"}
    )
    if not ks:
        with_rows = sorted({r.model for r in recs if r.method != "draft"})
        raise PlannerError(
            f"--acceptance-length {al:g}: {model.id} has no published speculative setting "
            f"to search (data/speculative.yaml has settings for {', '.join(with_rows)}); "
            "for a setting of your own, size it with planner capacity --spec-method METHOD "
            "--spec-tokens K --acceptance-length AL"
        )
    top = max(k for _, k in ks)
    if al > top + 1:
        shown_ks = ", ".join(f"{m} K={k}" for m, k in ks)
        raise PlannerError(
            f"--acceptance-length {al:g}: more than K + 1 = {top + 1} tokens per step of every "
            f"published setting for {model.id} ({shown_ks}); an acceptance length counts the "
            "accepted draft tokens plus the bonus token, so it is at most K + 1"
        )


def with_spec(r: dict[str, Any]) -> Any:
    """The layout, with the speculative setting a row was sized with (``TP2 + MTP k=2, AL
    2.40``): a speculative option's rate holds only with speculation on, so the row must say
    so (``--speculative auto`` ranks both kinds side by side)."""
    from planner.recommend.finish import spec_suffix

    lay = r.get("layout")
    return f"{lay}{spec_suffix(r)}" if r.get("spec_method") else lay
