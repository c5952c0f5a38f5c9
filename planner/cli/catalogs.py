"""Catalog commands: ``planner gpus``, ``models``, ``precisions``, ``frameworks``, ``prices``."""

from __future__ import annotations

import argparse
from typing import Any

from planner.cli._common import _benchmark_rows, _catalog, _emit, _sub, add_price_args
from planner.errors import PlannerError

PRICES_EXAMPLE = """\
  planner prices
  planner prices --gpu h100 --kind on_demand
  planner prices --gpu mi300x --prices data/prices.yaml  # your own rows, in this format
  planner prices --gpu h200 --quote --format json
  planner prices --format csv > prices.csv
  planner prices --own
  planner prices --own --gpu h200 --format json
  planner prices --coverage
  planner prices --api llama-3.3-70b
  planner prices --segments"""
RENTAL_KINDS = ("on_demand", "reserved", "spot", "serverless", "community")


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
            # what the device has (driver reading, else HBM N GiB), in decimal GB
            "device_memory_gb": None
            if a.memory_gb is None and a.memory_mib is None
            else round(a.memory_bytes / 1e9, 2),
            "mem_bw_gbs": a.mem_bw_gbs,
            "bf16_dense_tflops": a.bf16_dense_tflops or a.fp16_dense_tflops,
            "fp8_dense_tflops": a.fp8_dense_tflops,
            "fp4_dense_tflops": a.fp4_dense_tflops,
            "int8_dense_tops": a.int8_dense_tops,
            "interconnect_gbs_unidir": a.interconnect_gbs_unidir,
            "nvlink_domain_gpus": a.nvlink_domain_gpus,
            "scaleout_gbs_per_gpu": a.scaleout_gbs_per_gpu,
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
    from planner.engine.memory import kv_bytes_per_token
    from planner.engine.params import param_counts

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
            "checkpoint_kv": p.checkpoint_kv,
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


FRAMEWORKS_EXAMPLE = """\
  planner frameworks
  planner frameworks --releases
  planner frameworks --releases --framework vllm@0.11.0 --format json
  planner frameworks --releases --unparsed --format csv"""


def cmd_releases(args: argparse.Namespace) -> int:
    """``planner frameworks --releases``: the engine releases with benchmark rows."""
    from planner.catalog.releases import (
        parse_framework_spec,
        parse_release,
        release_inventory,
        unparsed_versions,
    )

    rows = _benchmark_rows(args)
    if args.unparsed:
        if args.framework:
            raise PlannerError("--unparsed lists every engine; drop --framework")
        _emit(unparsed_versions(rows), args)
        return 0
    table = release_inventory(rows)
    if args.framework:
        have: dict[str, list] = {}
        for r in rows:
            rel = parse_release(r.get("framework", ""), r.get("framework_version"))
            if rel is not None:
                have.setdefault(rel.engine, []).append(rel)
        ids = {f.id for f in _catalog(args).frameworks} | set(have)
        engine, rel = parse_framework_spec(args.framework, sorted(ids), have)
        table = [
            t
            for t in table
            if t["engine"] == engine and (rel is None or t["release"] in {
                x.release for x in have[engine] if x.key == rel.key
            })
        ]  # fmt: skip
    _emit(table, args)
    return 0


def cmd_frameworks(args: argparse.Namespace) -> int:
    if args.releases:
        return cmd_releases(args)
    if args.unparsed or args.framework:
        raise PlannerError("--unparsed and --framework go with --releases")
    cat = _catalog(args)
    rows = [
        {
            "id": f.id,
            "name": f.name,
            "continuous_batching": f.continuous_batching,
            "chunked_prefill": f.chunked_prefill,
            "chunked_prefill_default": f.chunked_prefill_on(),
            "prefix_caching": f.prefix_caching,
            "cuda_graphs": f.cuda_graphs,
            "kv_block_size": f.kv_block_size,
            "default_max_num_seqs": f.default_max_num_seqs,
            "default_max_num_batched_tokens": f.default_max_num_batched_tokens,
            "defaults_by_gpu": "; ".join(t.describe() for t in f.scheduler_tiers) or None,
            "default_memory_utilization": f.default_memory_utilization,
            "memory_utilization_of": f.memory_utilization_of,
            "runtime_overhead_gb": f.runtime_overhead_gb,
            "runtime_overhead_gb_multi_gpu": f.runtime_overhead_gb_multi_gpu,
            "memory_semantics": f.memory_semantics,
            "kv_follows_checkpoint": f.kv_follows_checkpoint,
            "vendors": list(f.vendors),
            "precisions": list(f.precisions),
            "as_of": f.as_of.isoformat(),
            "source": f.source,
        }
        for f in cat.frameworks
    ]
    _emit(rows, args)
    return 0


def _flags(opt, today) -> str | None:
    from planner.cost import row_warnings

    return ", ".join(row_warnings(opt, today)) or None


def cmd_prices(args: argparse.Namespace) -> int:
    """The price rows with provenance; with ``--gpu`` the quote per kind (what recommend uses)."""
    import datetime as dt
    import sys

    from planner.cost import PriceOption, quote_price
    from planner.report import emit

    if args.gpu is not None and not args.gpu.strip():
        raise PlannerError("--gpu: expected a GPU id or alias (see 'planner gpus'), got ''")
    views = [
        f
        for f in ("own", "coverage", "api", "segments")
        if getattr(args, f, None) not in (None, False)
    ]
    if len(views) > 1:
        raise PlannerError(f"--{views[0]} and --{views[1]} are separate views: give one")
    if views and (args.quote or args.kind):
        raise PlannerError(f"--{views[0]} takes neither --quote nor --kind")
    cat = _catalog(args)
    gpu = cat.gpu(args.gpu).id if args.gpu else None
    today = dt.date.today()
    if views:
        from planner.cli.buyer_views import VIEWS

        return VIEWS[views[0]](args, cat, gpu, today)
    rows = []
    for r in cat.rental_prices:
        if (gpu and r.gpu != gpu) or (args.kind and r.kind != args.kind):
            continue
        rows.append(
            {
                "gpu": r.gpu,
                "provider": r.provider,
                "kind": r.kind,
                "usd_per_gpu_hour": r.usd_per_gpu_hour,
                "usd_per_gpu_hour_range": list(r.usd_per_gpu_hour_range)
                if r.usd_per_gpu_hour_range
                else None,
                "offering": r.offering,
                "region": r.region,
                "commitment": r.commitment,
                "as_of": str(r.as_of),
                "flags": _flags(PriceOption.from_row(r), today),
                "source": r.source,
            }
        )
    for r in cat.purchase_prices:
        if (gpu and r.gpu != gpu) or args.kind:
            continue
        rows.append(
            {
                "gpu": r.gpu,
                "provider": "(purchase)",
                "kind": f"purchase {r.kind}",
                "usd": r.usd,
                "usd_range": list(r.usd_range) if r.usd_range else None,
                "as_of": str(r.as_of),
                "source": r.source,
            }
        )
    if not rows:
        raise PlannerError(
            f"no prices{f' for {gpu}' if gpu else ''}{f' of kind {args.kind}' if args.kind else ''} "
            "in data/prices.yaml" + (f" or {args.prices}" if args.prices else "")
        )
    quotes = []
    if gpu:
        for kind in (args.kind,) if args.kind else RENTAL_KINDS:
            if not any(r.gpu == gpu and r.kind == kind for r in cat.rental_prices):
                continue
            q = quote_price(cat, gpu, kind, today=today)
            quotes.append(
                {
                    "kind": kind,
                    "price_rows": q.price_rows,
                    "rows_set_aside": q.rows_set_aside,
                    "min": q.min_usd_per_gpu_hour,
                    "median": q.median_usd_per_gpu_hour,
                    "max": q.max_usd_per_gpu_hour,
                    "warnings": ", ".join(q.warnings) or None,
                    "rule": q.rule,
                }
            )
    if args.quote:
        if not gpu:
            raise PlannerError("--quote needs --gpu (the quote is per GPU and kind)")
        emit(quotes, args.format)
        return 0
    emit(rows, args.format)
    if quotes and args.format == "table":
        sys.stdout.write(
            "\nquote [USD per GPU-hour]: the median of the rows used (mean of the two middle "
            "rows for an even count), as recommend uses it; low-confidence rows and rows "
            "older than 12 months are set aside while another row remains\n"
        )
        emit(quotes, "table")
    return 0


# --------------------------------------------------------------------------- parser
def register(sub) -> None:
    _sub(sub, "gpus", "List the accelerator catalog with sources.",
         "planner gpus --format csv", cmd_gpus)  # fmt: skip
    _sub(sub, "models", "List the model catalog: computed vs published parameter counts.",
         "planner models --format json", cmd_models)  # fmt: skip
    _sub(sub, "precisions", "List weight formats (bits per weight, compute dtype, support).",
         "planner precisions", cmd_precisions)  # fmt: skip
    f = _sub(sub, "frameworks", "List serving frameworks and their scheduler defaults "
             "(--releases: the engine releases with benchmark rows).",
             FRAMEWORKS_EXAMPLE.strip(), cmd_frameworks)  # fmt: skip
    f.add_argument("--releases", action="store_true",
                   help="list per engine and GPU the releases named by benchmark rows' "
                   "framework_version (rows, first/last as_of, number of sources)")  # fmt: skip
    f.add_argument("--framework", metavar="ENGINE[@RELEASE]",
                   help="with --releases: only this engine, or one release (vllm@0.11.0)")  # fmt: skip
    f.add_argument("--unparsed", action="store_true",
                   help="with --releases: every framework_version that names no release, "
                   "with its row count and sources")  # fmt: skip
    q = _sub(
        sub,
        "prices",
        "List the price catalog (rental and purchase) with providers, sources and dates.",
        PRICES_EXAMPLE.strip(),
        cmd_prices,
    )
    q.description = (
        "Rental prices [USD per GPU-hour] and purchase prices [USD per GPU] of "
        "data/prices.yaml (and --prices FILE), with provider, kind, source, date and flags "
        "(low confidence, older than 12 months); --gpu adds the quote per kind: the median "
        "of the rows used, min, max and the row count, as recommend uses them."
    )
    q.add_argument("--gpu", help="only this GPU (id or alias)")
    q.add_argument("--kind", choices=RENTAL_KINDS, help="only this kind of rental price")
    q.add_argument(
        "--quote",
        action="store_true",
        help="with --gpu: print only the quote per kind (median, min, max, price_rows, "
        "warnings), e.g. --quote --format json",
    )
    q.add_argument("--own", action="store_true",
                   help="the cost of owning each GPU with a purchase price: capital, power, ops "
                   "[USD per GPU-hour], the owning terms used, and the utilisation above which "
                   "owning beats renting on demand")  # fmt: skip
    q.add_argument("--coverage", action="store_true",
                   help="per GPU: rental rows per kind (trusted / all) and whether it has a "
                   "purchase price; which GPUs a basis cannot price")  # fmt: skip
    q.add_argument("--api", nargs="?", const="", metavar="MODEL",
                   help="hosted-API prices [USD per million input / output tokens] of "
                   "data/api_prices.yaml, all models or one")  # fmt: skip
    q.add_argument("--segments", action="store_true",
                   help="InferenceX buyer segments (data/segments.yaml): all-in USD per "
                   "GPU-hour per GPU, for recommend --segment")  # fmt: skip
    add_price_args(q)
