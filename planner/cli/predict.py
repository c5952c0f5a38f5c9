"""``planner predict``: predictions for the rows of a benchmark CSV."""

from __future__ import annotations

import argparse
import sys

from planner.cli._common import _catalog, _emit, _number, _sub
from planner.files import atomic_writer, check_output

# --------------------------------------------------------------------------- predict
_PREDICT_TABLE_COLS = (
    "id", "hardware", "model", "precision", "framework", "tp", "batch", "isl", "context_len",
    "metric", "value", "unit", "predicted", "provenance", "reason", "settings",
)  # fmt: skip


def cmd_predict(args: argparse.Namespace) -> int:
    from planner.benchmarks.io import write_rows
    from planner.benchmarks.predict import Summary, predict_stream

    cat = _catalog(args)
    inputs = (args.input, args.calibration)
    check_output(args.output, inputs, "predictions")
    cols, rows = predict_stream(args.input, cat, args.calibration, args.max_simulations)
    if args.output:  # streamed: memory does not grow with the number of rows
        summary = Summary()
        with atomic_writer(args.output, inputs=inputs, what="predictions") as fh:
            write_rows(summary.count(rows), cols, fh)
        args.format = args.format or "table"
        _emit({"output": args.output, **summary.as_dict()}, args)
    elif args.format in (None, "csv"):
        write_rows(rows, cols, sys.stdout)
    elif args.format == "json":
        _emit([{c: r.get(c) for c in cols} for r in rows], args)
    else:
        _emit([{c: r.get(c) for c in _PREDICT_TABLE_COLS if c in cols} for r in rows], args)
    return 0


# --------------------------------------------------------------------------- parser
def register(sub) -> None:
    p = _sub(
        sub,
        "predict",
        "Predict measurement rows of a benchmark CSV (adds predicted, provenance, reason).",
        "planner predict data/benchmarks/pytorch_h200.csv -o predicted.csv",
        cmd_predict,
        default_format=None,
        default_format_help="csv on stdout; with -o a table summary",
    )
    p.add_argument("input", metavar="INPUT.csv", help="CSV in the benchmark schema")
    p.add_argument("-o", "--output", metavar="OUT.csv", default=None,
                   help="write the predicted CSV here and print a summary (default: stdout)")  # fmt: skip
    p.add_argument("--max-simulations", type=_number(int, minimum=0, maximum=1_000_000),
                   default=2_000, metavar="N",
                   help="most distinct serving setups simulated (default 2000, ~8 s of 8B rows "
                   "on 2 cores); a serving row with a new setup past it gets a reason")  # fmt: skip
