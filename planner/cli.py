"""Command-line interface: a thin translation layer over the library functions.

Every command accepts ``--format table|json|csv``, ``--data-dir DIR`` (catalogs
other than the bundled ``data/``) and ``--calibration PROFILE.yaml``. Errors the
user can cause are printed as ONE line ``planner: error: ...`` on stderr with exit
code 2. Heavy modules (numpy, pydantic, pandas) are imported inside the command
functions, so ``planner --help`` and simple commands start fast.

Other modules add commands through ``register(subparsers)`` (see
``planner.cli_serving``) and may reuse :func:`add_common_args`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from .errors import PlannerError

PROG = "planner"
#: modules that add subcommands through ``register(subparsers)`` (skipped when absent)
PLUGIN_MODULES = ("cli_serving", "cli_calibration")


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
                f"expected {'a whole number' if kind is int else 'a number'}, got {text!r}"
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


positive_int = _number(int, minimum=0, maximum=2**53)
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


def _catalog(args: argparse.Namespace):
    from .catalog import load_catalog

    if args.data_dir and not os.path.isdir(args.data_dir):
        raise PlannerError(f"--data-dir {args.data_dir}: not a folder")
    return load_catalog(args.data_dir)


def _emit(obj: Any, args: argparse.Namespace) -> None:
    from .report import emit

    emit(obj, args.format)


# --------------------------------------------------------------------------- catalogs
def cmd_gpus(args: argparse.Namespace) -> int:
    cat = _catalog(args)
    if args.format == "json":
        _emit([a.model_dump(mode="json", exclude_none=True) for a in cat.accelerators], args)
        return 0
    rows = [
        {
            "id": a.id,
            "memory_gb": a.memory_gb,
            "mem_bw_gbs": a.mem_bw_gbs,
            "bf16_dense_tflops": a.bf16_dense_tflops or a.fp16_dense_tflops,
            "fp8_dense_tflops": a.fp8_dense_tflops,
            "fp4_dense_tflops": a.fp4_dense_tflops,
            "int8_dense_tops": a.int8_dense_tops,
            "interconnect_gbs_unidir": a.interconnect_gbs_unidir,
            "tdp_w": a.tdp_w,
            "arch": a.arch,
            "as_of": a.as_of.isoformat(),
            "source": a.source,
        }
        for a in cat.accelerators
    ]
    _emit(rows, args)
    return 0


def model_row(m) -> dict[str, Any]:
    """One catalog model as a flat record, with computed next to published parameter counts."""
    from .memory import kv_bytes_per_token, param_counts

    pc = param_counts(m)
    total_b, active_b = pc.total / 1e9, pc.active / 1e9

    def diff_pct(computed_b: float, published_b: float | None) -> float | None:
        return None if published_b is None else round(100 * (computed_b / published_b - 1), 2)

    return {
        "id": m.id,
        "architecture": m.architecture,
        "layers": m.num_hidden_layers,
        "hidden": m.hidden_size,
        "heads": m.num_attention_heads,
        "kv_heads": m.num_key_value_heads,
        "head_dim": m.head_dim,
        "experts": f"{m.num_experts_per_tok}/{m.num_experts}" if m.is_moe else None,
        "params_total_b": round(total_b, 3),
        "published_total_b": m.published_total_params_b,
        "total_diff_pct": diff_pct(total_b, m.published_total_params_b),
        "params_active_b": round(active_b, 3),
        "published_active_b": m.published_active_params_b,
        "active_diff_pct": diff_pct(active_b, m.published_active_params_b),
        "kv_bf16_bytes_per_token": kv_bytes_per_token(m, 16),
        "max_context": m.max_position_embeddings,
        "as_of": m.as_of.isoformat(),
        "source": m.source,
    }


def cmd_models(args: argparse.Namespace) -> int:
    cat = _catalog(args)
    _emit([model_row(m) for m in cat.models], args)
    return 0


def cmd_precisions(args: argparse.Namespace) -> int:
    cat = _catalog(args)
    rows = [
        {
            "id": p.id,
            "name": p.name,
            "weight_bits": p.weight_bits,
            "compute_dtype": p.compute_dtype,
            "kv_default": p.kv_default,
            "kv_options": list(p.kv_options),
            "native_archs": list(p.native_archs),
            "fallback_archs": list(p.fallback_archs),
            "quantized_parts": p.quantized_parts,
            "as_of": p.as_of.isoformat(),
            "source": p.source,
        }
        for p in cat.precisions
    ]
    _emit(rows, args)
    return 0


def cmd_frameworks(args: argparse.Namespace) -> int:
    cat = _catalog(args)
    rows = [
        {
            "id": f.id,
            "name": f.name,
            "continuous_batching": f.continuous_batching,
            "chunked_prefill": f.chunked_prefill,
            "prefix_caching": f.prefix_caching,
            "cuda_graphs": f.cuda_graphs,
            "kv_block_size": f.kv_block_size,
            "default_max_num_seqs": f.default_max_num_seqs,
            "default_max_num_batched_tokens": f.default_max_num_batched_tokens,
            "default_memory_utilization": f.default_memory_utilization,
            "runtime_overhead_gb": f.runtime_overhead_gb,
            "vendors": list(f.vendors),
            "precisions": list(f.precisions),
            "as_of": f.as_of.isoformat(),
            "source": f.source,
        }
        for f in cat.frameworks
    ]
    _emit(rows, args)
    return 0


# --------------------------------------------------------------------------- memory
def cmd_memory(args: argparse.Namespace) -> int:
    from .memory import param_counts, plan_memory

    cat = _catalog(args)
    plan = plan_memory(
        args.model,
        args.gpu,
        args.precision,
        kv_precision=args.kv_precision,
        tp=args.tp,
        pp=args.pp,
        context_len=args.context,
        memory_utilization=args.memory_utilization,
        framework=args.framework,
        catalog=cat,
    )
    out = plan.as_dict()
    pc = param_counts(cat.model(args.model))
    out["params_total"] = pc.total
    out["params_active"] = pc.active
    _emit(out, args)
    return 0


# --------------------------------------------------------------------------- estimate
def _framework_warnings(fw, gpu, prec) -> list[str]:
    out = []
    if fw is None:
        return out
    if prec.id not in fw.precisions:
        out.append(
            f"{fw.id} does not list precision {prec.id} (supports {', '.join(fw.precisions)})"
        )
    if gpu.vendor not in fw.vendors:
        out.append(f"{fw.id} does not list {gpu.vendor} GPUs (supports {', '.join(fw.vendors)})")
    return out


def cmd_estimate(args: argparse.Namespace) -> int:
    from .memory import plan_memory
    from .perf import estimate, step_model
    from .predict import resolve_efficiency

    cat = _catalog(args)
    m = cat.model(args.model)
    gpu = cat.gpu(args.gpu)
    prec = cat.precision(args.precision)
    fw = cat.framework(args.framework)
    params, provenance = resolve_efficiency(gpu.id, fw.id, prec.id, args.calibration, cat)
    sm = step_model(m, gpu, prec, args.kv_precision, args.tp, args.pp, params, cat)
    est = estimate(sm, args.batch, args.input_len, args.output_len)
    plan = plan_memory(
        m,
        gpu,
        prec,
        kv_precision=args.kv_precision,
        tp=args.tp,
        pp=args.pp,
        context_len=args.input_len + args.output_len,
        framework=fw,
        catalog=cat,
        suggest=False,
    )
    warnings = _framework_warnings(fw, gpu, prec)
    if not plan.fits:
        warnings.append(plan.reason)
    elif args.batch > plan.max_concurrent_sequences:
        warnings.append(
            f"batch {args.batch} exceeds the {plan.max_concurrent_sequences} sequences of "
            f"{args.input_len + args.output_len} tokens that fit in KV memory"
        )
    n_gpus = args.tp * args.pp
    decode = est.decode_mid.as_dict()
    out = {
        "model": m.id,
        "gpu": gpu.id,
        "precision": prec.id,
        "kv_precision": sm.precision.kv_default if args.kv_precision is None else args.kv_precision,
        "framework": fw.id,
        "tp": args.tp,
        "pp": args.pp,
        "batch": args.batch,
        "input_len": args.input_len,
        "output_len": args.output_len,
        "prefill_s": est.prefill_s,
        "ttft_s": est.ttft_s,
        "tpot_s": est.tpot_s,
        "e2e_s": est.e2e_s,
        "output_tok_s": est.output_tok_s,
        "total_tok_s": est.total_tok_s,
        "output_tok_s_per_gpu": est.output_tok_s / n_gpus,
        "fits_in_memory": bool(plan.fits and args.batch <= plan.max_concurrent_sequences),
        "max_concurrent_sequences": plan.max_concurrent_sequences,
        "params_provenance": provenance,
        "params": params.model_dump(),
        "prefill": est.prefill.as_dict(),
        "decode": {"context_len": args.input_len + (args.output_len - 1) // 2, **decode},
        "warnings": warnings,
    }
    _emit(out, args)
    return 0


# --------------------------------------------------------------------------- predict
_PREDICT_TABLE_COLS = (
    "id", "hardware", "model", "precision", "framework", "tp", "batch", "isl", "context_len",
    "metric", "value", "unit", "predicted", "provenance", "reason",
)  # fmt: skip


def cmd_predict(args: argparse.Namespace) -> int:
    from .predict import predict_file, summarize, write_rows

    cat = _catalog(args)
    rows, cols = predict_file(args.input, cat, args.calibration)
    if args.output:
        with open(args.output, "w", newline="", encoding="utf-8") as fh:
            write_rows(rows, cols, fh)
        args.format = args.format or "table"
        _emit({"output": args.output, **summarize(rows)}, args)
    elif args.format in (None, "csv"):
        write_rows(rows, cols, sys.stdout)
    elif args.format == "json":
        _emit([{c: r.get(c) for c in cols} for r in rows], args)
    else:
        _emit([{c: r.get(c) for c in _PREDICT_TABLE_COLS if c in cols} for r in rows], args)
    return 0


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (commands of other modules included when installed)."""
    from . import __version__

    parser = _Parser(
        prog=PROG,
        description="Capacity and cost planner for LLM inference.",
        epilog="example:\n  planner memory --model llama-3.1-70b --gpu nvidia-h100-sxm "
        "--precision fp8 --tp 2\n\nRun 'planner COMMAND --help' for the options of a command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    _sub(sub, "gpus", "List the accelerator catalog with sources.",
         "planner gpus --format csv", cmd_gpus)  # fmt: skip
    _sub(sub, "models", "List the model catalog: computed vs published parameter counts.",
         "planner models --format json", cmd_models)  # fmt: skip
    _sub(sub, "precisions", "List weight formats (bits per weight, compute dtype, support).",
         "planner precisions", cmd_precisions)  # fmt: skip
    _sub(sub, "frameworks", "List serving frameworks and their scheduler defaults.",
         "planner frameworks", cmd_frameworks)  # fmt: skip

    p = _sub(
        sub,
        "memory",
        "Memory plan of one GPU in a TP x PP replica: weights, KV cache, max concurrency.",
        "planner memory --model llama-3.1-70b --gpu nvidia-h100-sxm --precision fp8 "
        "--tp 2 --context 8192",
        cmd_memory,
    )
    p.add_argument("--model", required=True, help="catalog id or path to a HF config.json")
    p.add_argument("--gpu", required=True, help="accelerator id (see 'planner gpus')")
    p.add_argument("--precision", default="bf16", help="weight format id (default bf16)")
    p.add_argument(
        "--kv-precision", default=None, help="KV-cache precision (default: per precision)"
    )
    p.add_argument("--tp", type=positive_int, default=1, help="tensor-parallel GPUs (default 1)")
    p.add_argument("--pp", type=positive_int, default=1, help="pipeline stages (default 1)")
    p.add_argument("--context", type=positive_int, default=4096,
                   help="tokens per sequence, prompt + output [tokens] (default 4096)")  # fmt: skip
    p.add_argument("--framework", default=None, help="serving framework id (block size, defaults)")
    p.add_argument("--memory-utilization", type=utilization, default=None,
                   help="fraction of GPU memory the engine may use (default: framework's, or 0.9)")  # fmt: skip

    p = _sub(
        sub,
        "estimate",
        "Static-batch latency and throughput: prefill, TPOT, tokens/s with a full breakdown.",
        "planner estimate --model llama-3.1-8b --gpu nvidia-h100-sxm --precision bf16 "
        "--framework vllm --batch 8 --input-len 1024 --output-len 256",
        cmd_estimate,
    )
    p.add_argument("--model", required=True, help="catalog id or path to a HF config.json")
    p.add_argument("--gpu", required=True, help="accelerator id")
    p.add_argument("--precision", required=True, help="weight format id")
    p.add_argument("--framework", required=True, help="serving framework id (selects efficiencies)")
    p.add_argument("--batch", type=positive_int, required=True, help="sequences in the batch")
    p.add_argument("--input-len", type=positive_int, required=True, help="prompt tokens")
    p.add_argument("--output-len", type=positive_int, required=True, help="generated tokens")
    p.add_argument("--tp", type=positive_int, default=1, help="tensor-parallel GPUs (default 1)")
    p.add_argument("--pp", type=positive_int, default=1, help="pipeline stages (default 1)")
    p.add_argument(
        "--kv-precision", default=None, help="KV-cache precision (default: per precision)"
    )

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

    for name in PLUGIN_MODULES:  # commands defined by other modules, when present
        try:
            module = importlib.import_module(f".{name}", __package__)
        except ModuleNotFoundError as e:
            if e.name == f"{__package__}.{name}":
                continue  # not installed (yet)
            _warn(f"commands of planner.{name} unavailable: {e}")
            continue
        except ImportError as e:  # a broken plugin must not take the other commands down
            _warn(f"commands of planner.{name} unavailable: {e}")
            continue
        module.register(sub)
    return parser


# --------------------------------------------------------------------------- main
def _warn(message: str) -> None:
    print(f"{PROG}: warning: {' '.join(str(message).split())}", file=sys.stderr)


def _fail(message: str, code: int = 2) -> int:
    msg = " ".join(str(message).split()) or "unknown error"
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 user error, 1 internal error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, argparse errors (already printed)
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    try:
        profile = getattr(args, "calibration", None)
        if profile and not os.path.isfile(profile):
            raise PlannerError(f"--calibration {profile}: calibration profile not found")
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
            f"internal error {type(e).__name__}: {e} (this is a bug; rerun with PLANNER_DEBUG=1 "
            "for the traceback)",
            code=1,
        )


if __name__ == "__main__":
    sys.exit(main())
