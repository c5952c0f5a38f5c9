"""Shared argparse helpers of the command modules."""

from __future__ import annotations

import argparse
import os
from typing import Any

from planner.errors import PlannerError, shown

PROG = "planner"


# --------------------------------------------------------------------------- argparse
class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr (exit code 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        msg = " ".join(message.split())
        self.exit(2, f"{PROG}: error: {msg} (see '{self.prog} --help')\n")


def _number(kind: type, *, minimum: float | None = None, strict: bool = True, maximum=None):
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'a whole number' if kind is int else 'a number'}, got {shown(text)}"
            ) from None
        if v != v:
            raise argparse.ArgumentTypeError("NaN is not a valid value")
        if minimum is not None and (v <= minimum if strict else v < minimum):
            raise argparse.ArgumentTypeError(
                f"must be {'>' if strict else '>='} {minimum}, got {text}"
            )
        if maximum is not None and v > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {text}")
        return v

    parse.__name__ = kind.__name__
    return parse


# plausible ranges: no model context or request is longer than 100M tokens, no batch larger
# than 10M sequences, no replica wider than 100k GPUs
token_count = _number(int, minimum=0, maximum=100_000_000)
batch_size = _number(int, minimum=0, maximum=10_000_000)
gpu_count = _number(int, minimum=0, maximum=100_000)
utilization = _number(float, minimum=0, maximum=1.0)


def add_common_args(
    parser: argparse.ArgumentParser,
    default_format: str | None = "table",
    default_format_help: str | None = None,
) -> None:
    """Add ``--format``, ``--data-dir`` and ``--calibration`` to a (sub)command parser.

    ``default_format=None`` leaves ``args.format`` None when not given, for commands
    whose default depends on other options (describe it in ``default_format_help``).
    """
    g = parser.add_argument_group("common options")
    g.add_argument(
        "--format",
        choices=("table", "json", "csv"),
        default=default_format,
        help="output format: table (human units), json or csv (raw SI numbers); default "
        + (default_format_help or str(default_format)),
    )
    g.add_argument(
        "--data-dir",
        metavar="DIR",
        default=None,
        help="folder with hardware.yaml, models.yaml, ... (default: the bundled data/, "
        "or $PLANNER_DATA_DIR)",
    )
    g.add_argument(
        "--calibration",
        metavar="PROFILE.yaml",
        default=None,
        help="calibration profile with fitted efficiencies (default: bundled fits or priors)",
    )


def _sub(
    sub,
    name: str,
    help_: str,
    example: str,
    func,
    default_format: str | None = "table",
    default_format_help: str | None = None,
):
    p = sub.add_parser(
        name,
        help=help_,
        description=help_,
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_args(p, default_format, default_format_help)
    p.set_defaults(func=func)
    return p


def add_price_args(parser) -> None:
    """Add ``--prices FILE`` and ``--prices-mode`` (a buyer's own price rows for one run)."""
    parser.add_argument(
        "--prices",
        metavar="FILE",
        default=None,
        help="your own price rows (YAML with rental:/purchase: lists, or CSV of rental rows, "
        "in the format of data/prices.yaml) for this run; see --prices-mode",
    )
    parser.add_argument(
        "--prices-mode",
        choices=("replace", "extend"),
        default=None,
        help="with --prices: replace (default): the file's rows for a GPU and kind replace the "
        "catalog's rows of that GPU and kind; extend: they are added to the catalog's rows",
    )


def _catalog(args: argparse.Namespace):
    """The catalog of ``--data-dir``, with the rows of ``--prices`` applied when given."""
    from planner.catalog import load_catalog

    if args.data_dir and not os.path.isdir(args.data_dir):
        raise PlannerError(f"--data-dir {args.data_dir}: not a folder")
    cat = load_catalog(args.data_dir)
    path = getattr(args, "prices", None)
    mode = getattr(args, "prices_mode", None)
    if mode is not None and path is None:
        raise PlannerError(
            f"--prices-mode {mode} applies to the rows of a --prices FILE; add --prices or drop "
            "--prices-mode"
        )
    if path is not None:
        from planner.cost import apply_price_rows, load_price_file

        if not str(path).strip():
            raise PlannerError("--prices: expected a file name, got an empty string")
        rental, purchase = load_price_file(path, cat)
        cat = apply_price_rows(cat, rental, purchase, mode or "replace", f"--prices {path}")
    return cat


def _emit(obj: Any, args: argparse.Namespace) -> None:
    from planner.report import emit

    emit(obj, args.format)


def parse_length(text: str, flag: str) -> dict[str, Any]:
    """A length distribution from the CLI syntax (see ``planner recommend --help``)."""
    t = text.strip()
    try:
        n = float(t)
    except ValueError:
        n = None
    if n is not None:
        if not (n >= 1 and n == int(n)):
            raise PlannerError(f"{flag} {text}: a fixed length must be a whole number >= 1")
        return {"kind": "fixed", "tokens": int(n)}
    kind, _, rest = t.partition(":")
    if not rest:
        raise PlannerError(
            f"{flag} {text!r}: expected a number of tokens or KIND:key=value,... "
            "(e.g. lognormal:mean=800,p90=1600; see 'planner recommend --help')"
        )
    out: dict[str, Any] = {"kind": kind.strip().lower()}
    for part in rest.split(","):
        key, eq, val = part.partition("=")
        if not eq:
            raise PlannerError(f"{flag} {text!r}: '{part}' is not key=value")
        try:
            out[key.strip()] = float(val)
        except ValueError:
            raise PlannerError(f"{flag} {text!r}: {key.strip()}={val!r} is not a number") from None
    return out


# --------------------------------------------------------------------------- argument types
def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {shown(text)}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    if v > 10**9:  # no count the planner takes (GPUs, clients, sequences) is plausibly larger
        raise argparse.ArgumentTypeError(f"must be at most 1,000,000,000, got {shown(text)}")
    return v


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {shown(text)}") from None
    if not v > 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return v


def _nonneg_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {shown(text)}") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return v


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {shown(text)}") from None
    if not 0 <= v < 2**63:
        raise argparse.ArgumentTypeError(f"must be a whole number in [0, 2^63), got {text}")
    return v


def _tp_list(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected TP sizes like 1,2,4,8, got {shown(text)}"
        ) from None
    if not out or any(t <= 0 for t in out):
        raise argparse.ArgumentTypeError(
            f"expected positive TP sizes like 1,2,4,8, got {shown(text)}"
        )
    if any(t > 100_000 for t in out):
        raise argparse.ArgumentTypeError(f"sizes must be at most 100000 GPUs, got {shown(text)}")
    return out


# --------------------------------------------------------------------------- engine releases
def known_releases(data_dir: str | None) -> dict[str, list]:
    """Engine -> the releases (:class:`~planner.catalog.releases.EngineRelease`) that rows of
    the data folder's ``benchmarks/*.csv`` name."""
    from planner.catalog.releases import parse_release

    have: dict[str, list] = {}
    for r in _benchmark_rows(argparse.Namespace(data_dir=data_dir)):
        rel = parse_release(r.get("framework", ""), r.get("framework_version"))
        if rel is not None:
            have.setdefault(rel.engine, []).append(rel)
    return have


def checked_release(
    framework: str | None, release: str | None, args: argparse.Namespace, cat, field: str
):
    """(framework id, release or None) of ``--framework ENGINE[@RELEASE]`` or a scenario's
    ``framework`` + ``release``: a release must be one that benchmark rows name (one-line
    error listing those of the engine; :func:`planner.catalog.releases.parse_framework_spec`)."""
    from planner.catalog.releases import parse_framework_spec

    if not framework:
        return framework, None
    engine, at, rel = (framework if release is None else f"{framework}@{release}").partition("@")
    fw = cat.framework(engine.strip()).id  # an unknown engine: the catalog's one-line error
    if not at:
        return fw, None
    ids = sorted({f.id for f in cat.frameworks})
    from planner.catalog.releases import parse_release_text, published_releases

    typed = parse_release_text(fw, rel)
    published = published_releases(args.data_dir).get(fw, [])
    if typed is not None and any(r.key == typed.key for r in published):
        # a real release no row names: it borrows the nearest release with a fit (said)
        return parse_framework_spec(f"{fw}@{rel}", ids, None, field=field)
    return parse_framework_spec(f"{fw}@{rel}", ids, known_releases(args.data_dir), field=field)


def release_params(args: argparse.Namespace, gpu, fw, prec, release, cat, family, layout=None,
                   model=None, field="--framework"):  # fmt: skip
    """(params, provenance, release choice) for a prediction
    (:func:`planner.catalog.release_profile.resolve_release_params`; with ``layout`` or
    ``model``, a release that cannot launch the layout or predates the model is refused,
    naming ``field``, or skipped); :func:`say_release` prints the choice once the command's
    answer is ready."""
    from planner.catalog.release_profile import resolve_release_params

    return resolve_release_params(gpu, fw, prec, release, args.calibration, cat, family=family,
                                  layout=layout, model=model, field=field)  # fmt: skip


def say_release(args: argparse.Namespace, choice) -> None:
    """The release a table's numbers are for, on stderr (JSON and CSV carry it as fields)."""
    import sys

    if choice is not None and getattr(args, "format", "table") == "table":
        print(f"planner: release: {choice.note}", file=sys.stderr)


def release_fields(choice, band=None, profile=None) -> tuple[dict[str, Any], Any]:
    """The output fields of a release choice (``release``: ``vllm@0.11.0``,
    ``release_requested``, ``release_note``) and ``band`` widened by its release distance
    (:func:`planner.catalog.release_profile.widen_band`; None stays None)."""
    from planner.catalog.release_profile import release_step, widen_band

    if choice is None:
        return {}, band
    out = {"release": choice.spec, "release_requested": choice.requested,
           "release_note": choice.note}  # fmt: skip
    if band is None or not choice.distance:
        return out, band
    return out, widen_band(band, choice.distance, release_step(profile))


def _benchmark_rows(args: argparse.Namespace) -> list[dict[str, str]]:
    """Rows of every ``benchmarks/*.csv`` of the data folder that has ``framework_version``."""
    import csv
    from pathlib import Path

    from planner.catalog.catalog import DATA_DIR

    if args.data_dir and not os.path.isdir(args.data_dir):
        raise PlannerError(f"--data-dir {args.data_dir}: not a folder")
    d = Path(args.data_dir or DATA_DIR) / "benchmarks"
    out: list[dict[str, str]] = []
    for p in sorted(d.glob("*.csv")):
        try:
            with open(p, newline="", encoding="utf-8") as fh:
                rows = csv.DictReader(fh)
                if "framework_version" in (rows.fieldnames or ()):
                    out.extend(rows)
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            raise PlannerError(f"{p}: not a readable CSV file ({e})") from None
    return out
