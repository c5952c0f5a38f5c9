"""Speculative decoding flags shared by estimate, simulate and capacity."""

from __future__ import annotations

import argparse
from typing import Any

from planner.catalog.speculative import METHODS, WORKLOADS

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


def replica_spec_kwargs(rep) -> dict[str, Any]:
    """build_replica's speculative decoding arguments that rebuild ``rep``'s setting (empty
    when off), e.g. for the other TP sizes of ``capacity --compare-tp``."""
    s = rep.spec
    if s is None:
        return {}
    return {
        "spec_method": s.method,
        "spec_tokens": s.spec_tokens,
        "acceptance_length": s.acceptance_length,
        "draft_model": s.draft_model,
        "spec_workload": s.workload,
    }
