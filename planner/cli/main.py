"""Command-line interface: a thin translation layer over the library functions.

Every command accepts ``--format table|json|csv``, ``--data-dir DIR`` (catalogs
other than the bundled ``data/``) and ``--calibration PROFILE.yaml``. Errors the
user can cause are printed as ONE line ``planner: error: ...`` on stderr with exit
code 2. Heavy modules (numpy, pydantic, pandas) are imported inside the command
functions, so ``planner --help`` and simple commands start fast.

One module per command group (``catalogs``, ``engine``, ``predict``, ``serving``,
``calibration``), each with ``register(subparsers)``; :func:`build_parser` imports and
registers them explicitly. Shared argparse helpers live in :mod:`planner.cli._common`.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Sequence

from planner.cli import calibration, catalogs, engine, grow, predict, recommend, serving
from planner.cli._common import PROG, _Parser
from planner.errors import PlannerError, printable, read_text
from planner.files import rare_gc


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    from planner import __version__

    parser = _Parser(
        prog=PROG,
        description="Capacity and cost planner for LLM inference.",
        epilog="example:\n  planner memory --model llama-3.1-70b --gpu nvidia-h100-sxm "
        "--precision fp8 --tp 2\n\nRun 'planner COMMAND --help' for the options of a command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    # the commands, in the order of `planner --help`; each module adds its own
    catalogs.register(sub)
    engine.register(sub)
    predict.register(sub)
    serving.register(sub)
    calibration.register(sub)
    recommend.register(sub)
    grow.register(sub)
    return parser


# --------------------------------------------------------------------------- main
def _fail(message: str, code: int = 2) -> int:
    # one line, control characters escaped (a hostile id must not drive the terminal)
    msg = printable(" ".join(str(message).split()), 4000) or "unknown error"
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 user error, 1 internal error)."""
    # a short run: few passes of the cyclic collector (files.rare_gc); argv None is the
    # process's own command line (the `planner` script, python -m planner.cli): it ends after
    with rare_gc(ending=argv is None):
        code = _main(argv)
    if argv is None:
        # the process ends now: the interpreter's exit collects even with the collector
        # off, and would walk every object of the run (0.1-0.3 s) just before freeing them
        gc.freeze()
    return code


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, argparse errors (already printed)
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    try:
        profile = getattr(args, "calibration", None)
        if profile and not os.path.exists(profile):
            raise PlannerError(f"--calibration {profile}: calibration profile not found")
        if profile and not os.path.isfile(profile):  # a folder, FIFO, device: say which
            read_text(profile, "calibration profile", "calibration profile (YAML file)")
        return int(args.func(args) or 0)
    except PlannerError as e:
        return _fail(str(e))
    except BrokenPipeError:  # output piped into `head`
        with contextlib.suppress(OSError):  # silence the flush at interpreter exit
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 0
    except OSError as e:
        where = f": {e.filename}" if getattr(e, "filename", None) else ""
        return _fail(f"{e.strerror or e}{where}")
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except MemoryError:
        return _fail(
            "out of memory: the request is larger than this machine can hold "
            "(fewer requests, rows or a smaller input)"
        )
    except RecursionError:
        return _fail("input nested too deeply to process")
    except Exception as e:  # noqa: BLE001 - one line, never a traceback
        mod = type(e).__module__
        if mod.startswith("pydantic"):
            errs = e.errors() if hasattr(e, "errors") else []
            if errs:
                loc = ".".join(str(x) for x in errs[0].get("loc", ()))
                return _fail(f"invalid value{' for ' + loc if loc else ''}: {errs[0].get('msg')}")
            return _fail(f"invalid value: {e}")
        if mod.startswith("yaml"):
            return _fail(f"not valid YAML: {str(e).splitlines()[0] if str(e) else e}")
        if os.environ.get("PLANNER_DEBUG"):
            raise
        return _fail(
            f"internal error {type(e).__name__}: {str(e)[:300]} (this is a bug; rerun with "
            "PLANNER_DEBUG=1 for the traceback)",
            code=1,
        )


if __name__ == "__main__":
    sys.exit(main())
