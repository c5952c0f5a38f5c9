"""`planner calibrate` and `planner validate`: thin shells over planner.calibration."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from planner.cli._common import _number, add_common_args
from planner.errors import PlannerError
from planner.files import atomic_write_text, check_output

# In-sample median error above which `calibrate` warns that a fit explains its data badly.
POOR_FIT_MDAPE = 0.25

CALIBRATE_EPILOG = """\
examples:
  planner calibrate data/benchmarks/public.csv data/benchmarks/pytorch_h200.csv -o my_profile.yaml
  planner calibrate data/benchmarks/reference_h200.csv -o profile.yaml && planner estimate \
      --model llama-3.1-8b --gpu nvidia-h200-sxm --precision bf16 --framework vllm --batch 8 \
      --input-len 1024 --output-len 256 --calibration profile.yaml
  planner calibrate data/benchmarks/reference_h200.csv tests/fixtures/calibration/vllm_bench_rate.json \
      --gpu nvidia-h200-sxm --model llama-3.1-8b --precision bf16 -o p.yaml
  planner calibrate data/benchmarks/reference_h200.csv \
      --iterations data/benchmarks/serving_raw/reference_h200_iterations.csv.gz -o profile.yaml
  planner calibrate --results tests/fixtures/verify/llmd_l40s_llama-3.2-3b_rate10.json \
      --expected tests/fixtures/verify/llmd_l40s_llama-3.2-3b.expected.json -o my-profile.yaml

--results adds your own benchmark of a deployment (the `vllm bench serve --save-result` JSON
that bench.sh of `planner recommend --emit` writes) to a profile (--calibration, default the
bundled one, or the fit of the files given): the deployment is the option of --expected
(its expected.json), and one node fitted on your runs alone takes that (GPU, framework,
precision); `planner recommend --calibration my-profile.yaml` then names your measurement as
the provenance of that option.

A CSV follows the benchmark schema (planner/benchmarks/README.md); a .json is the
file `vllm bench serve --save-result` writes (GPU, model, precision and TP are not in it, so
pass them). An iteration log (--iterations; columns in planner/benchmarks/README.md, as
bench/serve_ref.py writes them) fits the serving terms of its framework on its GPU: host time
per iteration and per sequence, the longest-sequence attention term, cached-prefix attention,
eager dispatch. Without files, refits the bundled data/benchmarks/*.csv and the bundled
iteration logs (data/benchmarks/serving_raw/*_iterations.csv.gz).
"""

VALIDATE_EPILOG = """\
examples:
  planner validate                      # LOSO on public data + 5-fold on own H200 data
  planner validate --output docs/accuracy.md
  planner validate --no-serving --format json
  planner validate --holdout dstack GPUStack --no-serving   # only these sources held out
  planner validate --against tests/fixtures/verify/llmd_l40s_llama-3.2-3b.expected.json \
      tests/fixtures/verify/llmd_l40s_llama-3.2-3b_rate10.json

--against EXPECTED RESULT compares what `planner recommend --emit` predicted for an option
(its expected.json) with the saved result of the benchmark run on it (`vllm bench serve
--save-result`; FILE:N picks run N of a file holding several): per metric the prediction,
its band, the measurement and the error (predicted - measured) / measured, then a verdict.
"""


def register(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="fit efficiency parameters to measurements",
        description="Fit the engine's efficiencies and overheads to measured rows "
        "(scipy least squares on log error, hierarchical shrinkage) and write a profile.",
        epilog=CALIBRATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "files", nargs="*", help="measurement CSVs (benchmark schema) or vllm bench JSONs"
    )
    p.add_argument("-o", "--output", help="profile YAML to write (default: print a summary only)")
    p.add_argument(
        "--iterations",
        nargs="+",
        metavar="LOG",
        default=None,
        help="serving iteration logs (CSV or .csv.gz) to fit the serving terms on (default: "
        "the bundled ones when no measurement files are given, else none)",
    )
    p.add_argument(
        "--results",
        nargs="+",
        metavar="RESULT.json",
        default=None,
        help="your saved `vllm bench serve --save-result` runs of the deployment of --expected "
        "(FILE:N = run N of a file holding several); fitted into the profile with the highest "
        "priority for that GPU, framework and precision",
    )
    p.add_argument(
        "--expected",
        metavar="EXPECTED.json",
        default=None,
        help="expected.json of the option the --results ran on (`planner recommend --emit`)",
    )
    p.add_argument(
        "--bench-replicas",
        type=_number(int, minimum=1, maximum=100000),
        default=None,
        metavar="N",
        help="replicas the benchmark's endpoint spread the --results load over (default: "
        "told by each run's rate: 1 at expected.json's rate per replica, its replicas at the "
        "fleet's rate, else 1)",
    )
    p.add_argument(
        "--rows-out",
        metavar="ROWS.csv",
        default=None,
        help="also write the --results as benchmark-schema rows to this CSV",
    )
    p.add_argument("--gpu", help="GPU id for vllm bench JSON files")
    p.add_argument(
        "--model", help="model id for vllm bench JSON files (default: model_id in the JSON)"
    )
    p.add_argument(
        "--precision", default=None, help="precision for vllm bench JSON files (default bf16)"
    )
    p.add_argument("--tp", type=int, default=None, help="TP size for vllm bench JSON files")
    p.add_argument(
        "--no-error-bands",
        action="store_true",
        help="skip the leave-one-source-out refits that give each provenance tier its error "
        "band (faster; predictions then use the bundled profile's bands)",
    )
    p.add_argument(
        "--prior-scale",
        type=_number(float, minimum=0, maximum=1e6),
        default=1.0,
        help="prior width multiplier (smaller = more shrinkage)",
    )
    add_common_args(p)
    p.set_defaults(func=cmd_calibrate)

    v = sub.add_parser(
        "validate",
        help="out-of-sample accuracy report (leave-one-source-out and 5-fold)",
        description="Refit without each source (LOSO) and without each fold (5-fold on the own "
        "measurements), predict what was left out, and report MdAPE, P90 APE and bias.",
        epilog=VALIDATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    v.add_argument(
        "--against",
        nargs=2,
        metavar=("EXPECTED.json", "RESULT.json"),
        default=None,
        help="compare a prediction (expected.json of `planner recommend --emit`) with the saved "
        "result of the benchmark run on it, instead of the accuracy report",
    )
    v.add_argument(
        "--public",
        nargs="*",
        default=None,
        help="public measurement CSVs, held out source by source (default "
        "data/benchmarks/public*.csv)",
    )
    v.add_argument(
        "--own",
        nargs="*",
        default=None,
        help="own measurement CSVs (default data/benchmarks/reference_h200.csv, reference_h200_tp2.csv and pytorch_h200.csv)",
    )
    v.add_argument(
        "--output", default=None, help="write the Markdown report here (e.g. docs/accuracy.md)"
    )
    v.add_argument(
        "--no-serving", action="store_true", help="skip the simulator-predicted serving rows"
    )
    v.add_argument(
        "--details", default=None, help="write every out-of-sample prediction to this CSV"
    )
    v.add_argument(
        "--holdout",
        nargs="+",
        metavar="TEXT",
        default=None,
        help="hold out only the sources whose name contains one of these texts "
        "(case-insensitive; a quick partial LOSO while working on some sources)",
    )
    v.add_argument(
        "--bands-into",
        metavar="PROFILE.yaml",
        default=None,
        help="store the error bands of this leave-one-source-out run in a profile fitted on the "
        "same files (what `planner calibrate` does; saves a second LOSO after "
        "`planner calibrate --no-error-bands`)",
    )
    add_common_args(v)
    v.set_defaults(func=cmd_validate)


def cmd_calibrate(args) -> int:
    from planner.calibration import calibrate, poor_fits, save_profile
    from planner.catalog import load_catalog
    from planner.report import emit

    check_output(args.output, [*args.files, *(args.iterations or [])], "calibration profile")
    cat = load_catalog(getattr(args, "data_dir", None))
    if args.results or args.expected or args.rows_out or args.bench_replicas:
        return _calibrate_measurement(args, cat)
    prof, rows = calibrate(
        args.files or None,
        catalog=cat,
        iteration_logs=args.iterations,
        gpu=args.gpu,
        model=args.model,
        precision=args.precision,
        tp=args.tp,
        prior_scale=args.prior_scale,
        progress="calibrate: fitting",
    )
    from planner.calibration.release_fit import fit_release_nodes

    prof = fit_release_nodes(prof, rows, cat, prior_scale=args.prior_scale)  # issue 31
    if not args.no_error_bands and not (args.gpu or args.model or args.precision or args.tp):
        from planner.calibration.accuracy import with_error_bands

        prof = with_error_bands(
            prof, rows, args.files or None, catalog=cat, prior_scale=args.prior_scale
        )
    if args.output:
        save_profile(prof, args.output, inputs=[*args.files, *(args.iterations or [])])
    summary = [
        {
            **_node_row(
                n,
                "mem_eff",
                "compute_eff",
                "compute_half_tokens",
                "attn_eff",
                "step_overhead_s",
                "layer_overhead_s",
                "comm_eff",
                "sched_overhead_s",
                "sched_seq_overhead_s",
                level=True,
            ),  # fmt: skip
            "serving_terms": "fit on iteration logs" if n.serving_fit else "",
        }
        for n in prof.nodes
    ]
    emit(summary, args.format)
    for label, metric, n, mdape in poor_fits(prof, rows, POOR_FIT_MDAPE):
        print(
            f"planner: warning: the fit of {label} explains its {metric} data badly (in-sample "
            f"MdAPE {100 * mdape:.0f}% > {100 * POOR_FIT_MDAPE:.0f}% over {n} rows); check the "
            "units and values of those measurements",
            file=sys.stderr,
        )
    if prof.error_bands:
        print(
            "error bands (p10-p90 of measured/predicted throughput, held out by source): "
            + "; ".join(
                f"{t} {b.ratio_p10:.2f}-{b.ratio_p90:.2f}x ({b.n_rows} rows, {b.n_sources} sources)"
                for t, b in prof.error_bands.items()
            ),
            file=sys.stderr,
        )
    skipped = sum(1 for r in rows if not r.ok)
    print(
        f"fitted {prof.n_rows_fitted} rows ({skipped} not usable for the fit), data hash {prof.data_hash}"
        + (f"; wrote {args.output}" if args.output else ""),
        file=sys.stderr,
    )
    return 0


def _calibrate_measurement(args, cat) -> int:
    """``calibrate --results R --expected E``: the user's runs into a profile."""
    from planner.calibration import calibrate, save_profile
    from planner.calibration.measured import measurement_profile
    from planner.catalog.profile import load_profile
    from planner.deploy.expected import read_expected
    from planner.deploy.results import read_result, read_results, split_run
    from planner.report import emit

    if not args.results or not args.expected:
        raise PlannerError(
            "--results and --expected go together: the result files of a benchmark and the "
            "expected.json of the option they ran on"
        )
    ins = [*args.files, *(split_run(s)[0] for s in args.results), args.expected]
    check_output(args.rows_out, ins, "rows CSV")
    if args.output and args.rows_out and Path(args.output) == Path(args.rows_out):
        raise PlannerError("--output and --rows-out name the same file; give two paths")
    exp = read_expected(args.expected)
    pairs = []
    for spec in args.results:  # FILE:N is run N; a FILE holding several runs gives them all
        path, run = split_run(spec)
        pairs += [
            (r, exp) for r in (read_results(path) if run is None else [read_result(path, run)])
        ]
    if args.files or args.iterations:
        base, _ = calibrate(
            args.files or None,
            catalog=cat,
            iteration_logs=args.iterations,
            prior_scale=args.prior_scale,
            progress="calibrate: fitting",
        )
    else:
        base = load_profile(args.calibration)
        if base is None:
            raise PlannerError(
                "no profile to add the measurement to: pass --calibration PROFILE.yaml or "
                "measurement files to fit"
            )
    prof, df, notes = measurement_profile(
        base, pairs, cat, prior_scale=args.prior_scale, replicas=args.bench_replicas
    )
    for line in notes:
        print(f"planner: {line}", file=sys.stderr)
    if args.rows_out:
        import io

        from planner.benchmarks.io import write_rows

        buf = io.StringIO()
        write_rows(df.to_dict("records"), list(df.columns), buf)
        atomic_write_text(args.rows_out, buf.getvalue(), inputs=ins, what="rows CSV")
    if args.output:
        save_profile(prof, args.output, inputs=ins)
    mine = [n for n in prof.nodes if any(s.startswith("your measurement") for s in n.sources)]
    emit(
        [
            {**_node_row(n, "mem_eff", "compute_eff", "attn_eff"), "sources": "; ".join(n.sources)}
            for n in mine
        ],
        args.format,
    )
    print(
        f"added {len(df)} rows of your measurement ({len(mine)} node(s))"
        + (f"; wrote {args.output}" if args.output else "; nothing written (no -o)")
        + (f" and {args.rows_out}" if args.rows_out else ""),
        file=sys.stderr,
    )
    return 0


def _validate_against(args) -> int:
    """``validate --against EXPECTED RESULT``: how far the prediction was off."""
    from planner.catalog import load_catalog
    from planner.deploy.expected import read_expected
    from planner.deploy.results import read_result, split_run
    from planner.deploy.verify import compare
    from planner.report import emit

    exp_path, res_spec = args.against
    exp = read_expected(exp_path)
    res = read_result(*split_run(res_spec))
    check = compare(exp, res, load_catalog(getattr(args, "data_dir", None)))
    for w in check.warnings:
        print(f"planner: warning: {res.where}: {w}", file=sys.stderr)
    if args.format == "json":
        emit(
            {"comparison": check.rows, "verdict": check.verdict, "warnings": check.warnings}, "json"
        )
        return 0
    emit(check.rows, args.format)
    print(check.verdict, file=sys.stdout if args.format == "table" else sys.stderr)
    return 0


def cmd_validate(args) -> int:
    if args.against:
        other = [
            f"--{k.replace('_', '-')}"
            for k in ("public", "own", "output", "details", "holdout", "bands_into")
            if getattr(args, k) is not None
        ] + (["--no-serving"] if args.no_serving else [])
        if other:
            raise PlannerError(
                f"--against compares one prediction with one run; {', '.join(other)} belong to "
                "the accuracy report: give one or the other"
            )
        return _validate_against(args)
    from planner.calibration import error_table
    from planner.calibration.accuracy import run_validation, write_report
    from planner.calibration.fit import own_files_default, public_files_default
    from planner.catalog import load_catalog
    from planner.report import emit

    cat = load_catalog(getattr(args, "data_dir", None))
    public = args.public if args.public is not None else public_files_default()
    own = args.own if args.own is not None else own_files_default()
    inputs = [*public, *own]
    check_output(args.output, inputs, "accuracy report")
    check_output(args.details, inputs, "details CSV")
    if args.output and args.details and Path(args.output) == Path(args.details):
        raise PlannerError("--output and --details name the same file; give two paths")
    if not public and not own:
        raise PlannerError(
            "nothing to validate: --public and --own select no files "
            "(omit them for the bundled data)"
        )
    res = run_validation(
        public, own, catalog=cat, serving=not args.no_serving, holdout=args.holdout
    )
    if not any(res.get(k) is not None and len(res[k]) for k in ("loso", "kfold_own")):
        raise PlannerError(
            "nothing to validate: the selected files have no rows that can be predicted out of "
            "sample" + ("; the report was not written" if args.output else "")
        )
    if args.bands_into:
        from planner.calibration.accuracy import store_error_bands

        store_error_bands(args.bands_into, res, [*public, *own])
    cmd = "planner validate" + (f" --output {args.output}" if args.output else "")
    if args.output:
        write_report(res, args.output, cmd, inputs=inputs)
        from planner.calibration.release_report import release_section
        from planner.calibration.sections import RELEASE_SECTION, put_section

        put_section(args.output, release_section(res), RELEASE_SECTION)  # issue 31
    rows = []
    if res.get("kfold_own") is not None and len(res["kfold_own"]):
        t = error_table(res["kfold_own"].assign(scheme="5-fold own"), ["scheme", "metric"])
        rows += t.to_dict("records")
    if res.get("loso") is not None and len(res["loso"]):
        t = error_table(
            res["loso"].assign(scheme="LOSO public"), ["scheme", "metric_class", "kind"]
        )
        rows += t.to_dict("records")
    if res.get("loso") is not None and len(res["loso"]):
        from planner.calibration.accuracy import group_table
        from planner.calibration.bands import coverage_table

        g = group_table(res["loso"]).assign(scheme="LOSO throughput")
        rows += g.to_dict("records")
        cov = res.get("coverage")
        if cov is not None and len(cov):
            c = coverage_table(
                cov.assign(group="error band coverage", value="all"), ["group", "value"]
            )
            rows += c.assign(scheme="LOSO throughput").to_dict("records")
    if args.details:
        import pandas as pd

        frames = [
            res[k].assign(scheme=k)
            for k in ("loso", "kfold_own")
            if res.get(k) is not None and len(res[k])
        ]
        if frames:
            atomic_write_text(
                args.details,
                pd.concat(frames).to_csv(index=False),
                inputs=inputs,
                what="details CSV",
            )
    emit(rows, args.format)
    return 0


def _node_row(n, *params: str, level: bool = False) -> dict:
    """One profile node as ``calibrate`` prints it: label (and level), rows, in-sample error
    [%] and the named efficiency parameters."""
    mdape = None if n.in_sample_mdape is None else round(100 * n.in_sample_mdape, 1)
    return {
        "node": n.label,
        **({"level": n.level} if level else {}),
        "rows": n.n_rows,
        "in_sample_mdape_pct": mdape,
        **{p: getattr(n.params, p) for p in params},
    }
