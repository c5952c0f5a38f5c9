"""``planner recommend --emit DIR``: the flags, and the call after the ranking."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from planner.errors import PlannerError

EMIT_EXAMPLE = """\
  planner recommend examples/moe-r1.yaml --emit planner-deploy --force --emit-top 2"""


def add_emit_args(p: argparse.ArgumentParser) -> None:
    """Add ``--emit``, ``--force``, ``--emit-top`` and ``--emit-release`` to ``p``."""
    from planner.cli._common import _positive_int

    g = p.add_argument_group("deployment artefacts (docs/deploy.md)")
    g.add_argument("--emit", metavar="DIR",
                   help="write DIR/<rank>-<option>/ per ranked option: serve.sh (engine launch "
                   "command of the release), k8s/ manifests, bench.sh (load test at the "
                   "planned rate) and expected.json (the prediction)")  # fmt: skip
    g.add_argument("--force", action="store_true",
                   help="--emit into a folder that is not empty (files of the same name are "
                   "overwritten)")  # fmt: skip
    g.add_argument("--emit-top", type=_positive_int, metavar="N",
                   help="emit only the first N ranked options (default: all shown)")  # fmt: skip
    g.add_argument("--emit-release", action="append", metavar="ENGINE@RELEASE",
                   help="engine release to emit flags for (default: the newest release with "
                   "benchmark rows), repeatable, e.g. vllm@0.10.1")  # fmt: skip


def check_emit_args(args: argparse.Namespace) -> dict[str, str]:
    """Refuse bad --emit input before the search runs; the asked releases per engine."""
    emit = getattr(args, "emit", None)
    extra = [f for f, v in (("--force", args.force), ("--emit-top", args.emit_top),
                            ("--emit-release", args.emit_release)) if v]  # fmt: skip
    if not emit:
        if extra:
            raise PlannerError(f"{extra[0]} goes with --emit DIR")
        return {}
    from planner.deploy.emit import check_target, parse_emit_release
    from planner.deploy.flags import resolve

    asked = dict(parse_emit_release(t) for t in args.emit_release or ())
    from planner.deploy.emit import data_releases

    for engine, rel in asked.items():
        resolve(
            engine, rel, "named with --emit-release", data_releases(args.data_dir).get(engine, ())
        )
    check_target(emit, args.force)
    return asked


def run_emit(args: argparse.Namespace, res: Any, sc: Any, cat: Any, asked: dict[str, str]) -> None:
    """Write the folders and say where (on stderr, so JSON on stdout stays JSON)."""
    from planner.deploy.emit import emit_all

    done = emit_all(res, sc, cat, args.emit, force=args.force, top=args.emit_top,
                    releases=asked, data_dir=args.data_dir)  # fmt: skip
    sys.stderr.write(f"emitted {len(done)} option folder(s) under {args.emit}: "
                     + ", ".join(d.rsplit("/", 1)[-1] for d in done) + "\n")  # fmt: skip
