"""Engine commands: ``planner memory`` and ``planner estimate``."""

from __future__ import annotations

import argparse

from planner.cli._common import (
    _catalog,
    _emit,
    _sub,
    batch_size,
    checked_release,
    gpu_count,
    release_fields,
    release_params,
    say_release,
    token_count,
    utilization,
)
from planner.cli.speculative import add_spec_args, check_workload_used, spec_kwargs


# --------------------------------------------------------------------------- memory
def cmd_memory(args: argparse.Namespace) -> int:
    from planner.engine.memory import plan_memory
    from planner.engine.params import param_counts

    cat = _catalog(args)
    plan = plan_memory(
        args.model,
        args.gpu,
        args.precision,
        kv_precision=args.kv_precision,
        layout=_layout(args),
        context_len=args.context,
        memory_utilization=args.memory_utilization,
        framework=checked_release(args.framework, None, args, cat, "--framework")[0],
        catalog=cat,
    )
    out = plan.as_dict()
    pc = param_counts(cat.model(args.model))
    out["params_total"] = pc.total
    out["params_active"] = pc.active
    _emit(out, args)
    return 0


def _layout(args: argparse.Namespace):
    """The command line's :class:`~planner.catalog.layout.Layout` (one-line errors)."""
    from planner.catalog.layout import layout_of

    return layout_of(
        args.tp, args.pp, args.ep, args.attention_dp,
        attention_dp_balance=getattr(args, "attention_dp_balance", None),
    )  # fmt: skip


# --------------------------------------------------------------------------- estimate
def _framework_warnings(fw, gpu, prec) -> list[str]:
    out = []
    if fw is None:
        return out
    if prec.id not in fw.precisions:
        out.append(
            f"{fw.id} does not list precision {prec.id} (supports {', '.join(fw.precisions)})"
        )
    return out


def cmd_estimate(args: argparse.Namespace) -> int:
    from planner.catalog import default_kv_precision
    from planner.catalog.latency import first_token_path
    from planner.catalog.profile import error_band, load_profile, model_family
    from planner.catalog.speculative import spec_decode
    from planner.engine import estimate, step_model
    from planner.engine.memory import plan_memory
    from planner.engine.speculative import per_token, with_spec

    cat = _catalog(args)
    m = cat.model(args.model)
    gpu = cat.gpu(args.gpu)
    prec = cat.precision(args.precision)
    fw_id, release = checked_release(args.framework, None, args, cat, "--framework")
    fw = cat.framework(fw_id)
    lay = _layout(args)
    params, provenance, choice = release_params(
        args, gpu.id, fw.id, prec.id, release, cat, model_family(m), lay, m
    )
    kv = args.kv_precision or default_kv_precision(prec, fw, m).id
    sk = spec_kwargs(args)
    spec = spec_decode(
        m, sk["spec_method"], sk["spec_tokens"], sk["acceptance_length"], sk["draft_model"],
        framework=fw, workload=sk["spec_workload"],
    )  # fmt: skip
    check_workload_used(args, spec)
    sm = with_spec(
        step_model(m, gpu, prec, kv, args.tp, args.pp, params, cat, layout=lay), spec, cat
    )
    plan = plan_memory(
        m,
        gpu,
        prec,
        kv_precision=args.kv_precision,
        layout=lay,
        context_len=args.input_len + args.output_len,
        framework=fw,
        catalog=cat,
        suggest=False,
        draft=sm.draft,
    )
    est0 = estimate(sm, args.batch, args.input_len, args.output_len)
    est = per_token(est0, spec, args.batch, args.output_len)
    warnings = _framework_warnings(fw, gpu, prec)
    path = first_token_path(fw.id, release)  # trtllm-serve's, outside the engine
    ft_s = path.latency_s if path is not None else 0.0
    if path is not None:
        warnings.append(f"TTFT and E2E include the {path.describe()}")
    # the plan's assumptions (a context beyond the model's window) are the estimate's too
    warnings += [a for a in plan.assumptions if "max_position_embeddings" in a]
    if not plan.fits:
        warnings.append(plan.reason)
    elif args.batch > plan.max_concurrent_sequences:
        warnings.append(
            f"batch {args.batch} exceeds the {plan.max_concurrent_sequences} sequences of "
            f"{args.input_len + args.output_len} tokens that fit in KV memory"
        )
    n_gpus = lay.num_gpus
    decode = est.decode_mid.as_dict()
    knobs = _serving_knobs(m, gpu, prec, fw, lay, args, params, provenance, release, cat, sk)
    prof = load_profile(args.calibration)
    rel_out, band = release_fields(choice, error_band(provenance, prof, gpu.vendor, fw.id), prof)
    out = {
        "model": m.id,
        "gpu": gpu.id,
        "precision": prec.id,
        "kv_precision": plan.kv_precision_basis,
        "framework": fw.id,
        **rel_out,
        "tp": lay.tp,
        "pp": lay.pp,
        "ep": lay.ep,
        "attention_dp": lay.attention_dp,
        "layout": lay.describe(gpu),
        "num_gpus": n_gpus,
        "batch": args.batch,
        "input_len": args.input_len,
        "output_len": args.output_len,
        "prefill_s": est.prefill_s,
        "ttft_s": est.ttft_s + ft_s,
        "tpot_s": est.tpot_s,
        "e2e_s": est.e2e_s + ft_s,
        "first_token_path_s": ft_s,
        "output_tok_s": est.output_tok_s,
        "total_tok_s": est.total_tok_s,
        "output_tok_s_per_gpu": est.output_tok_s / n_gpus,
        "output_tok_s_low": band.speed_interval(est.output_tok_s)[0],
        "output_tok_s_high": band.speed_interval(est.output_tok_s)[1],
        "tpot_s_low": band.time_interval(est.tpot_s)[0],
        "tpot_s_high": band.time_interval(est.tpot_s)[1],
        **_spec_fields(est0, spec, band, args),
        "error_band": band.describe(),
        **knobs,
        "fits_in_memory": bool(plan.fits and args.batch <= plan.max_concurrent_sequences),
        "max_concurrent_sequences": plan.max_concurrent_sequences,
        "params_provenance": provenance,
        "params": params.model_dump(),
        "prefill": est.prefill.as_dict(),
        "decode": {"context_len": args.input_len + (args.output_len - 1) // 2, **decode},
        "warnings": warnings,
    }
    say_release(args, choice)
    _emit(out, args)
    return 0


def _serving_knobs(m, gpu, prec, fw, lay, args, params, provenance, release, cat, sk) -> dict:
    """The engine knobs a served replica of this deployment runs with (the ones capacity,
    simulate and recommend print: :func:`planner.serving.answer.engine_knobs`), so a static
    batch states the engine it stands for; each None when the model does not fit."""
    from planner.errors import PlannerError
    from planner.serving import build_replica
    from planner.serving.answer import engine_knobs

    try:
        rep = build_replica(
            m, gpu, prec, fw, layout=lay, kv_precision=args.kv_precision, params=params,
            params_source=provenance, catalog=cat, release=release,
            **{k: v for k, v in sk.items() if v is not None},
        )  # fmt: skip
    except PlannerError:  # does not fit: the plan's reason is in warnings
        return dict.fromkeys(("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization",
                              "kv_cache_dtype", "prefill_chunk_tokens", "max_model_len"))  # fmt: skip
    return engine_knobs(rep).as_dict()


def _spec_fields(est0, spec, band, args) -> dict:
    """Speculative decoding's fields of ``estimate``: the settings, and the acceptance
    spread folded into the TPOT and throughput bands (AL high: the fast end)."""
    from planner.engine.speculative import per_token

    if spec is None:
        return {"spec_method": None, "spec_tokens": None, "acceptance_length": None}
    lo, hi = spec.al_band
    fast = per_token(est0, spec, args.batch, args.output_len, hi)
    slow = per_token(est0, spec, args.batch, args.output_len, lo)
    return {
        "spec_method": spec.method,
        "spec_tokens": spec.spec_tokens,
        "acceptance_length": spec.acceptance_length,
        "acceptance_length_band": [lo, hi],
        "acceptance_basis": spec.basis,
        "spec_workload": spec.workload,
        "speculative": spec.label(),
        "verify_step_s": est0.tpot_s,
        "tpot_s_low": band.time_interval(fast.tpot_s)[0],
        "tpot_s_high": band.time_interval(slow.tpot_s)[1],
        "output_tok_s_low": band.speed_interval(slow.output_tok_s)[0],
        "output_tok_s_high": band.speed_interval(fast.output_tok_s)[1],
    }


# --------------------------------------------------------------------------- parser
def _layout_flags(p) -> None:
    p.add_argument(
        "--ep",
        type=gpu_count,
        default=1,
        help="expert-parallel size (MoE models; default 1). The width rule: tp x attention-dp "
        "GPUs = moe-tp x ep",
    )
    p.add_argument(
        "--attention-dp",
        type=gpu_count,
        default=1,
        help="attention data-parallel ranks, each with its own sequences' KV (MoE models; "
        "default 1). DEP8 = --tp 1 --attention-dp 8 --ep 8",
    )
    p.add_argument(
        "--attention-dp-balance",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="balance prompt work over the attention-DP ranks (trtllm "
        "attention_dp_config.enable_balance; default: the engine's, off)",
    )


def register(sub) -> None:
    p = _sub(
        sub,
        "memory",
        "Memory plan of one GPU in a TP x PP replica: weights, KV cache, max concurrency.",
        "planner memory --model llama-3.1-70b --gpu nvidia-h100-sxm --precision fp8 "
        "--tp 2 --context 8192\n"
        "  planner memory --model deepseek-v3 --gpu nvidia-h200-sxm --precision fp8 "
        "--framework sglang --attention-dp 8 --ep 8",
        cmd_memory,
    )
    p.add_argument("--model", required=True, help="catalog id or path to a HF config.json")
    p.add_argument("--gpu", required=True, help="accelerator id (see 'planner gpus')")
    p.add_argument("--precision", default="bf16", help="weight format id (default bf16)")
    p.add_argument(
        "--kv-precision",
        default=None,
        help="KV-cache precision (default: what the framework does with the checkpoint)",
    )
    p.add_argument("--tp", type=gpu_count, default=1, help="tensor-parallel GPUs (default 1)")
    p.add_argument("--pp", type=gpu_count, default=1, help="pipeline stages (default 1)")
    _layout_flags(p)
    p.add_argument("--context", type=token_count, default=4096,
                   help="tokens per sequence, prompt + output [tokens] (default 4096)")  # fmt: skip
    p.add_argument(
        "--framework",
        default=None,
        help="serving framework id, optionally @release (block size, defaults)",
    )
    p.add_argument("--memory-utilization", type=utilization, default=None,
                   help="fraction of GPU memory the engine may use (default: framework's, or 0.9)")  # fmt: skip

    p = _sub(
        sub,
        "estimate",
        "Static-batch latency and throughput: prefill, TPOT, tokens/s with a full breakdown.",
        "planner estimate --model llama-3.1-8b --gpu nvidia-h100-sxm --precision bf16 "
        "--framework vllm --batch 8 --input-len 1024 --output-len 256\n"
        "  planner estimate --model deepseek-v3 --gpu nvidia-h200-sxm --precision fp8 --tp 8 "
        "--framework sglang --batch 1 --input-len 1024 --output-len 1024 --spec-method mtp\n"
        "  planner estimate --model llama-3.1-70b --gpu nvidia-h100-sxm --precision fp8 --tp 2 "
        "--framework vllm@0.11.0 --batch 64 --input-len 1024 --output-len 1024\n"
        "  planner estimate --model deepseek-v3 --gpu nvidia-b200 --precision fp4 --framework "
        "trtllm --attention-dp 8 --ep 8 --attention-dp-balance --batch 512 --input-len 1024 "
        "--output-len 1024",
        cmd_estimate,
    )
    add_spec_args(p)
    p.add_argument("--model", required=True, help="catalog id or path to a HF config.json")
    p.add_argument("--gpu", required=True, help="accelerator id")
    p.add_argument("--precision", required=True, help="weight format id")
    p.add_argument(
        "--framework",
        required=True,
        help="serving framework id, optionally @release: vllm or vllm@0.11.0 (selects efficiencies; "
        "default release: the newest with a fit on the GPU family)",
    )
    p.add_argument("--batch", type=batch_size, required=True, help="sequences in the batch")
    p.add_argument("--input-len", type=token_count, required=True, help="prompt tokens")
    p.add_argument("--output-len", type=token_count, required=True, help="generated tokens")
    p.add_argument("--tp", type=gpu_count, default=1, help="tensor-parallel GPUs (default 1)")
    p.add_argument("--pp", type=gpu_count, default=1, help="pipeline stages (default 1)")
    _layout_flags(p)
    p.add_argument(
        "--kv-precision",
        default=None,
        help="KV-cache precision (default: what the framework does with the checkpoint)",
    )
