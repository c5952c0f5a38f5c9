"""The MTP / no-MTP pairs of issue 30 ("Done when" item 2) against the same engine release.

``scripts/moe_rows_accuracy.py --spec`` divides each MTP row's throughput by the median of its
baselines, which InferenceX ran on several SGLang / TensorRT-LLM releases over five months.
This table also reads, for every pair at concurrency >= 16, the baseline run of the **same
engine image** as the MTP run (the nearest date when several) and every metric both runs
recorded at the pair's concurrency and lengths (``public_inferencex.csv`` for the baselines,
``public_inferencex_history.csv`` for the MTP runs, joined by the GitHub Actions run id and
the nominal input length): throughput, TPOT and TTFT with and without MTP. Then, with the
bundled profile and the row's workload AL (``moe_rows_accuracy.catalog_al``):

* ``pred ratio``: the predicted throughput ratio (``predicted_ratio``, as ``--spec``);
* ``err median`` / ``err same``: predicted / measured - 1 against the median baseline and
  against the same-release baseline;
* ``v/p``: the step model's verify step over a plain step at the pair's concurrency and mean
  decode context (``moe_rows_accuracy.verify_table``'s ``modelled verify/plain``);
* ``AL at model cost``: the acceptance length that would reconcile the measured same-release
  TPOT ratio with the model's verify cost, ``TPOT_plain / TPOT_mtp x v/p`` (prefill stalls
  taken equal in both runs): a diagnosis, not a fit.

Usage (from the repository root; about a minute)::

    python scripts/mtp_pairs_table.py
    python scripts/mtp_pairs_table.py --tpot   # same-image TPOT speed-up at every concurrency
    python scripts/mtp_pairs_table.py --terms  # what the step model charges a verify step, c >= 32
    python scripts/mtp_pairs_table.py --sides  # c >= 32: the baseline's and the MTP run's own errors
    python scripts/mtp_pairs_table.py [--sides] --holdout /tmp/i30.pkl  # with the profile fitted
        # without each pair's publisher (the pickle of ``issue30_holdout.py --cache``)
    python scripts/mtp_pairs_table.py --others  # the pairs of the other publishers, every c
    python scripts/mtp_pairs_table.py --all  # InferenceX's c >= 16 table + all publishers' tallies
    python scripts/mtp_pairs_table.py --amd-blog  # AMD's MI300X SGLang MTP speed-ups by concurrency
    python scripts/mtp_pairs_table.py --moe-kernel  # aiter's MI355X MoE kernel time vs tokens
    python scripts/mtp_pairs_table.py --sglang-docs  # SGLang's H200 MTP claim (1.8x / 1.5x)
"""

from __future__ import annotations

import pickle
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from moe_rows_accuracy import (  # noqa: E402
    FILES,
    INFERENCEX,
    INFERENCEX_HISTORY,
    _nominal,
    _params,
    _pct,
    as_speedup,
    catalog_al,
    verify_table,
)

from planner.benchmarks.io import read_rows  # noqa: E402
from planner.benchmarks.schema import cell  # noqa: E402
from planner.benchmarks.schema import layout as row_layout  # noqa: E402
from planner.benchmarks.serving_rows import predict_serving_row  # noqa: E402
from planner.benchmarks.speculative_rows import (  # noqa: E402
    _capped,
    graph_max_of_row,
    predict_spec_row,
    predicted_ratio,
    row_workload,
    spec_of_row,
    spec_pairs,
)
from planner.calibration.accuracy import _md_table  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402
from planner.serving import build_replica  # noqa: E402

_RUN = re.compile(r"actions/runs/(\d+)")
_ISL = re.compile(r"(?:nominal input |random_input_len=)(\d+)")
_OSL = re.compile(r"(?:nominal input \d+ / output |random_output_len=)(\d+)")
_IMAGE = re.compile(r"image ([^ )|;]+)")


def _run_key(row) -> tuple | None:
    """(run id, hardware, precision, framework, TP, concurrency, nominal input, output) of an InferenceX row, None elsewhere."""
    notes = cell(row, "notes") or ""
    run, isl, osl = _RUN.search(notes), _ISL.search(notes), _OSL.search(notes)
    if not run or not isl or not osl:
        return None
    conc = str(float(cell(row, "concurrency") or 0))
    hw = (cell(row, "hardware"), cell(row, "precision"), cell(row, "framework"), cell(row, "tp"))
    return (run.group(1), *hw, conc, isl.group(1), osl.group(1))


def _metrics(rows) -> dict[tuple, dict[str, float]]:
    """run key -> {metric: value} over every InferenceX row that has one."""
    out: dict[tuple, dict[str, float]] = {}
    for r in rows:
        k = _run_key(r)
        if k is not None:
            out.setdefault(k, {})[cell(r, "metric")] = float(cell(r, "value"))
    return out


def _image(row) -> str:
    m = _IMAGE.search(cell(row, "framework_version") or "")
    return m.group(1) if m else ""


def held_out_profiles(path: str | None):
    """``source`` -> the profile fitted without its publisher (the pickle
    ``scripts/issue30_holdout.py --cache`` writes); None without ``path`` (bundled profile)."""
    if not path:
        return None
    with open(path, "rb") as fh:
        profiles = pickle.load(fh)
    return profiles.get


def pairs_table(profile_for=None) -> pd.DataFrame:
    """The pairs at c >= 16 (module docstring); ``profile_for``: source -> the profile to
    predict with (``held_out_profiles``), None: the bundled one."""
    cat = load_catalog()
    rows = [r for f in [*FILES, INFERENCEX] for r in read_rows(f)[0]]
    hist = read_rows(INFERENCEX_HISTORY)[0]
    met = _metrics([*rows, *hist])
    vt = verify_table().set_index("id")
    recs = []
    for p in spec_pairs(rows):
        conc = p.concurrency or 1
        sid = cell(p.spec_row, "id")
        if p.spec_tokens is None or conc < 16 or sid not in vt.index:
            continue
        s_img, s_date = _image(p.spec_row), str(cell(p.spec_row, "as_of"))
        same = [b for b in p.base_rows if _image(b) == s_img] or list(p.base_rows)
        base = min(same, key=lambda b: abs(pd.Timestamp(cell(b, "as_of")) - pd.Timestamp(s_date)))
        ms, mb = met.get(_run_key(p.spec_row), {}), met.get(_run_key(base), {})
        b0 = p.base_rows[0]
        params = _params(cat, b0, profile_for(cell(b0, "source")) if profile_for else None)
        al = catalog_al(cat, b0, p.method, p.spec_tokens, row_workload(p.spec_row))
        pred = predicted_ratio(p, al, cat, params)[0]
        same_ratio = float(cell(p.spec_row, "value")) / float(cell(base, "value"))
        vp = float(vt.loc[sid, "modelled verify/plain"])
        t_plain, t_mtp = mb.get("tpot_ms_median"), ms.get("tpot_ms_median")
        recs.append(
            {
                "id": sid,
                "gpu": cell(p.spec_row, "hardware"),
                "engine / image": f"{cell(p.spec_row, 'framework')} {s_img.split(':')[-1]}",
                "baseline image": _image(base).split(":")[-1],
                "layout": f"TP{cell(p.spec_row, 'tp')}",
                "prec": cell(p.spec_row, "precision"),
                "ISL": _ISL.search(cell(p.spec_row, "notes")).group(1),
                "c": int(conc),
                "K": p.spec_tokens,
                "AL used": round(al, 3),
                "tok/s MTP": float(cell(p.spec_row, "value")),
                "tok/s base (median)": round(
                    float(cell(p.spec_row, "value")) / p.measured_ratio, 1
                ),
                "tok/s base (same image)": float(cell(base, "value")),
                "ratio (median)": round(p.measured_ratio, 3),
                "ratio (same image)": round(same_ratio, 3),
                "TPOT ms base / MTP": f"{t_plain} / {t_mtp}" if t_plain and t_mtp else "",
                "TPOT ratio": round(t_plain / t_mtp, 3) if t_plain and t_mtp else None,
                "TTFT ms base / MTP": (
                    f"{mb.get('ttft_ms_median')} / {ms.get('ttft_ms_median')}"
                    if mb.get("ttft_ms_median") and ms.get("ttft_ms_median")
                    else ""
                ),
                "pred ratio": round(pred, 3) if pred else None,
                "err median %": _pct(pred, p.measured_ratio),
                "err same %": _pct(pred, same_ratio),
                "v/p": vp,
                "AL at model cost": round(t_plain / t_mtp * vp, 2) if t_plain and t_mtp else None,
            }
        )
    return pd.DataFrame(recs)


def tpot_pairs(profile_for=None) -> pd.DataFrame:
    """Every InferenceX MTP run's median TPOT (history file) next to the baseline run's of the
    same hardware, precision, engine, TP, concurrency and lengths, on the same engine image
    (nearest date), at every concurrency both swept: the speed-up by concurrency."""
    rows = [*read_rows(INFERENCEX)[0], *read_rows(INFERENCEX_HISTORY)[0]]
    base: dict[tuple, list] = {}
    mtp = []
    for r in rows:
        k = _run_key(r)
        if k is None or cell(r, "metric") != "tpot_ms_median" or "multi-node" in cell(r, "notes"):
            continue
        if "speculative decoding" in (cell(r, "notes") or ""):
            mtp.append((k, r))
        elif "layout_unsupported" not in (cell(r, "notes") or ""):
            base.setdefault((_image(r), *k[1:]), []).append(r)
    cat = load_catalog()
    recs = {}
    for k, r in mtp:
        cands = base.get((_image(r), *k[1:]), [])
        if not cands:
            continue
        b = min(
            cands,
            key=lambda b: abs(pd.Timestamp(cell(b, "as_of")) - pd.Timestamp(cell(r, "as_of"))),
        )
        t0, t1 = float(cell(b, "value")), float(cell(r, "value"))
        params = _params(cat, b, profile_for(cell(b, "source")) if profile_for else None)
        sp = spec_of_row(r)
        al = catalog_al(cat, b, sp[0], sp[1], row_workload(r)) if sp and sp[1] else None
        p0 = predict_serving_row(b, cat, params)[0]
        p1 = predict_spec_row(r, al, cat, params)[0] if al else None
        recs[(*k[1:],)] = {
            "gpu": k[1], "prec": k[2], "engine": f"{k[3]} {_image(r).split(':')[-1]}", "TP": k[4],
            "ISL/OSL": f"{k[6]}/{k[7]}", "c": float(k[5]), "TPOT base ms": t0, "TPOT MTP ms": t1,
            "TPOT ratio": round(t0 / t1, 3), "K": sp[1] if sp else None,
            "AL used": round(al, 3) if al else None,
            "pred TPOT base / MTP ms": f"{p0:.2f} / {p1:.2f}" if p0 and p1 else "",
            "pred ratio": round(p0 / p1, 3) if p0 and p1 else None,
            "err %": _pct(p0 / p1, t0 / t1) if p0 and p1 else None,
            "MTP id": cell(r, "id"), "base id": cell(b, "id"),
        }  # fmt: skip
    return pd.DataFrame(list(recs.values())).sort_values(["gpu", "prec", "ISL/OSL", "c"])


def sides_table(min_conc: int = 32, profile_for=None) -> pd.DataFrame:
    """Which side of each pair at concurrency >= ``min_conc`` the ratio's error sits on.

    ``predicted_ratio`` simulates both runs from the pair's first baseline row (its client
    lengths and launch flags) and the MTP one with K, the row's workload AL and the MTP run's
    running-request cap, so ``pred ratio / (MTP value / that baseline's value) = (1 + MTP
    err) / (1 + base err)`` exactly, with:

    * ``base err %``: the simulated baseline against that baseline row's own value;
    * ``MTP err %``: the simulated MTP run (the same simulation ``predicted_ratio`` divides)
      against the MTP row's own value;
    * ``MTP err, own row %``: ``predict_spec_row`` of the MTP row from its own cells, for
      comparison: the MTP rows carry no ``kv_precision`` (``kv in rows``, base / MTP), so where
      the run used an fp8 KV cache that simulation reads a 16-bit one;
    * the two runs' engine releases (``framework_version``) and dates."""
    cat = load_catalog()
    rows = [r for f in [*FILES, INFERENCEX] for r in read_rows(f)[0]]
    recs = []
    for p in spec_pairs(rows):
        conc = p.concurrency or 1
        if p.spec_tokens is None or conc < min_conc or _nominal(p.spec_row) is None:
            continue  # InferenceX's pairs only (``other_pairs_table``: the other publishers)
        b = p.base_rows[0]
        params = _params(cat, b, profile_for(cell(b, "source")) if profile_for else None)
        al = catalog_al(cat, b, p.method, p.spec_tokens, row_workload(p.spec_row))
        srow = {**b, "_spec_method": p.method, "_spec_tokens": p.spec_tokens,
                "_acceptance_length": float(al),
                "_spec_graph_max_seqs": graph_max_of_row(p.spec_row)}  # fmt: skip
        v1 = predict_serving_row(_capped(srow, p.spec_row), cat, params)[0]
        v0 = predict_serving_row(b, cat, params)[0]
        own = predict_spec_row(p.spec_row, al, cat, params)[0]
        m1, m0 = float(cell(p.spec_row, "value")), float(cell(b, "value"))
        rel = lambda r: (_IMAGE.search(cell(r, "framework_version") or "") or [""])[0]  # noqa: E731
        recs.append(
            {
                "id": cell(p.spec_row, "id"),
                "base id": cell(b, "id"),
                "gpu": cell(b, "hardware"),
                "prec": cell(b, "precision"),
                "ISL": _ISL.search(cell(p.spec_row, "notes")).group(1),
                "c": int(conc),
                "K": p.spec_tokens,
                "AL used": round(al, 3),
                "release base / MTP": f"{rel(b).split(':')[-1]} ({cell(b, 'as_of')}) / "
                f"{rel(p.spec_row).split(':')[-1]} ({cell(p.spec_row, 'as_of')})",
                "kv in rows": f"{cell(b, 'kv_precision') or '-'} / {cell(p.spec_row, 'kv_precision') or '-'}",
                "base tok/s meas / pred": f"{m0:,.0f} / {v0:,.0f}",
                "base err %": _pct(v0, m0),
                "MTP tok/s meas / pred": f"{m1:,.0f} / {v1:,.0f}",
                "MTP err %": _pct(v1, m1),
                "MTP err, own row %": _pct(own, m1),
                "ratio meas (this base)": round(m1 / m0, 3),
                "pred ratio": round(v1 / v0, 3),
                "ratio err %": _pct(v1 / v0, m1 / m0),
            }
        )
    return pd.DataFrame(recs)


def _max_base_concurrency(rows) -> dict[tuple, float]:
    """(hardware, precision, engine, TP, attention DP) -> the largest concurrency of any
    non-speculative DeepSeek row: the most sequences a plain step was measured at."""
    out: dict[tuple, float] = {}
    for r in rows:
        notes = cell(r, "notes") or ""
        if cell(r, "model") != "deepseek-v3" or "speculative decoding" in notes:
            continue
        key = (cell(r, "hardware"), cell(r, "precision"), cell(r, "framework"), cell(r, "tp"),
               cell(r, "attention_dp") or "1")  # fmt: skip
        c = float(cell(r, "concurrency") or cell(r, "batch") or 0)
        out[key] = max(out.get(key, 0.0), c)
    return out


def terms_table(min_conc: int = 32) -> pd.DataFrame:
    """What the step model charges the verify step of every pair at concurrency >=
    ``min_conc``, next to the plain step of the same sequences (bundled profile, the run's
    mean decode context as ``moe_rows_accuracy.verify_table``):

    * ``B / rank``: decoding sequences per attention rank (concurrency / attention DP);
    * ``verify tok``: positions the target runs per step, ``B x (K + 1)``; ``draft passes``:
      one draft-extend pass over those positions plus K - 1 single-token passes;
    * ``experts plain -> verify``: expected distinct routed experts per MoE layer per GPU
      (``StepModel.expected_experts``) of B and of B (K + 1) tokens, of the GPU's ``local``;
    * ``GB weights``, ``TFLOP`` (GEMM), ``KV passes`` (``spec_kv_passes``) plain -> verify;
    * the time terms (ms) plain -> verify, and verify / plain modelled against the one the
      measured same-image TPOT ratio implies at the row's AL (``AL / TPOT ratio``);
    * ``base c max``: the largest concurrency any plain run of that GPU, precision, engine and
      TP was measured at, i.e. the most tokens per step the fitted profile has seen there."""
    cat = load_catalog()
    rows = [r for f in [*FILES, INFERENCEX] for r in read_rows(f)[0]]
    hist = read_rows(INFERENCEX_HISTORY)[0]
    cmax = _max_base_concurrency([*rows, *hist])
    pt = pairs_table().set_index("id")
    recs = []
    for p in spec_pairs(rows):
        sid = cell(p.spec_row, "id")
        conc = p.concurrency or 1
        nom = _nominal(p.spec_row)
        if p.spec_tokens is None or conc < min_conc or nom is None or sid not in pt.index:
            continue
        b = p.base_rows[0]
        k, lay = p.spec_tokens, row_layout(b)
        al = catalog_al(cat, b, p.method, k, row_workload(p.spec_row))
        ctx = (1 + nom[2]) / 2 * (nom[0] + nom[1] / 2)
        sm = {}
        st = {}
        for on in (False, True):
            kw = dict(spec_method=p.method, spec_tokens=k, acceptance_length=al) if on else {}
            rep = build_replica(cell(b, "model"), cell(b, "hardware"), cell(b, "precision"),
                                cell(b, "framework"), layout=lay.layout, params=_params(cat, b),
                                catalog=cat, **kw)  # fmt: skip
            sm[on], st[on] = rep.sm, rep.sm.step(conc, conc, conc, conc * ctx, conc * ctx)
        adp = lay.layout.attention_dp
        t0, t1 = float(st[False].time_s), float(st[True].time_s)
        tr = pt.loc[sid, "TPOT ratio"]
        key = (cell(b, "hardware"), cell(b, "precision"), cell(b, "framework"), cell(b, "tp"),
               cell(b, "attention_dp") or "1")  # fmt: skip
        rec = {
            "id": sid, "gpu": cell(b, "hardware"), "engine": cell(b, "framework"),
            "prec": cell(b, "precision"), "ISL": int(nom[0]), "c": int(conc),
            "B / rank": conc / adp, "K": k, "AL used": round(al, 3),
            "draft passes": f"1 x {conc * (k + 1):.0f} tok + {k - 1} x {conc:.0f}",
            "verify tok": int(conc * (k + 1)),
            "experts plain -> verify": f"{float(sm[False].expected_experts(conc)):.0f} -> "
            f"{float(sm[True].expected_experts(conc * (k + 1))):.0f} of "
            f"{sm[False].local_experts:.0f}",
            "GB weights": f"{float(st[False].weight_bytes) / 1e9:.1f} -> "
            f"{float(st[True].weight_bytes) / 1e9:.1f}",
            "TFLOP": f"{float(st[False].matmul_flops) / 1e12:.2f} -> "
            f"{float(st[True].matmul_flops) / 1e12:.2f}",
            "KV passes": round(float(sm[True].spec_kv_passes), 3),
        }  # fmt: skip
        for term in ("t_gemm_s", "t_attn_s", "t_comm_s", "t_overhead_s", "t_draft_s"):
            rec[f"{term[2:-2]} ms"] = (
                f"{1e3 * float(getattr(st[False], term)):.2f} -> "
                f"{1e3 * float(getattr(st[True], term)):.2f}"
            )
        rec.update({
            "plain ms": round(1e3 * t0, 2), "verify ms": round(1e3 * t1, 2),
            "v/p model": round(t1 / t0, 3),
            "v/p implied": round(al / tr, 3) if tr and tr == tr else None,
            "base c max": cmax.get(key),
            "err median %": pt.loc[sid, "err median %"],
        })  # fmt: skip
        recs.append(rec)
    return pd.DataFrame(recs)


# AMD ROCm blog "Efficient LLM Serving with MTP: DeepSeek V3 and SGLang on AMD Instinct GPUs"
# (2025-09-11; github ROCm/rocm-blogs blogs/software-tools-optimization/mtp/README.md
# @3ffb1486), Table 1: mean end-to-end latency [ms] without / with MTP, 8x MI300X, SGLang
# v0.5.0rc0 (lmsysorg/sglang:v0.5.0rc0-rocm630-mi30x), DeepSeek-V3 TP8, aiter attention,
# --speculative-num-steps 2 --speculative-eagle-topk 1 --speculative-num-draft-tokens 3 (K = 2)
# --speculative-accept-threshold-single=0.001, sglang.bench_serving --dataset-name random
# --random-input 3200 --random-output 800, max concurrency 1 .. 64. "We observe that the
# speedup ratio decreases as the max concurrency increases."
AMD_BLOG_E2E_MS = {
    1: (17348.25, 8229.37),
    2: (17162.29, 8408.02),
    4: (17948.30, 9736.64),
    8: (19919.06, 11742.82),
    16: (23708.94, 15483.11),
    32: (30868.39, 21399.39),
    64: (43848.20, 35074.26),
}

# ROCm/aiter aiter/configs/model_configs/a8w8_blockscale_tuned_fmoe_ds_v3.csv @e4048607
# (2026-08-22): tuned fused-MoE time [us] of one DeepSeek-V3 layer under TP8 on gfx950
# (cu_num 256: MI355X), model_dim 7168, inter_dim 256, 257 experts top 9 (the shared expert
# fused in), fp8 blockscale (QuantType.per_1x128), by tokens in the step.
AITER_MI355X_FP8_MOE_US = {16: 112.6776, 32: 158.4834, 64: 212.9873, 128: 241.6039,
                           256: 249.5786, 512: 260.9691}  # fmt: skip


def amd_blog_table(context_tokens: float = 3600.0) -> pd.DataFrame:
    """AMD's MI300X SGLang MTP speed-ups (``AMD_BLOG_E2E_MS``) against the step model's, by
    concurrency. The relaxed acceptance (threshold 0.001) makes the blog's AL unknown, so both
    are shown relative to concurrency 1 (AL cancels: the step model's verify cost does not
    depend on it). The model: bundled MI300X SGLang fp8 profile, TP8, K = 2, B = concurrency
    decoding sequences at ``context_tokens`` each (3200 in + 800 / 2 out), plain and verify
    step; E2E's TTFT share is left in the blog's ratio (it lowers it by TTFT / E2E)."""
    from planner.catalog.profile import model_family, resolve_efficiency

    cat = load_catalog()
    m = cat.model_ref("deepseek-v3", None)
    params = resolve_efficiency("amd-mi300x", "sglang", "fp8", None, cat, model_family(m))[0]
    reps = {
        on: build_replica(
            m,
            "amd-mi300x",
            "fp8",
            "sglang",
            tp=8,
            params=params,
            catalog=cat,
            **(dict(spec_method="mtp", spec_tokens=2, acceptance_length=2.0) if on else {}),
        )  # fmt: skip
        for on in (False, True)
    }
    recs = []
    for c, (e0, e1) in AMD_BLOG_E2E_MS.items():
        t = [float(reps[on].sm.step(c, c, c, c * context_tokens, c * context_tokens).time_s)
             for on in (False, True)]  # fmt: skip
        recs.append({"c": c, "blog E2E ratio": round(e0 / e1, 3), "plain ms": round(1e3 * t[0], 2),
                     "verify ms": round(1e3 * t[1], 2), "model v/p": round(t[1] / t[0], 3)})  # fmt: skip
    d = pd.DataFrame(recs)
    d["blog / blog at c1"] = (d["blog E2E ratio"] / d["blog E2E ratio"].iloc[0]).round(3)
    d["model / model at c1"] = (d["model v/p"].iloc[0] / d["model v/p"]).round(3)
    # the held-out check of planner.engine.speculative.SPEC_HOST_SEQ_S (chosen on InferenceX):
    # the verify iteration waits for the host, the plain one overlaps it (SGLang's overlap
    # scheduler is off with speculative decoding)
    from planner.engine.speculative import SPEC_HOST_SEQ_S

    host = 1e3 * SPEC_HOST_SEQ_S["sglang"] * d["c"]
    vp = (d["verify ms"] + host) / d["plain ms"]
    d["host ms (SPEC_HOST_SEQ_S x c)"] = host.round(2)
    d["model with host / at c1"] = (vp.iloc[0] / vp).round(3)
    return d


# SGLang docs, DeepSeek V3 usage, "Multi-token Prediction" (docs/references/deepseek.md and
# its successors, e.g. code index id 9276946009): "the decoding speed can be improved by 1.8x
# for batch size 1 and 1.5x for batch size 32 respectively on H200 TP8 setting"; the example
# command beside it: --speculative-num-steps 1 --speculative-eagle-topk 1
# --speculative-num-draft-tokens 2 (K = 1). K is not stated next to the numbers; later
# versions of the page keep the sentence and name 3 / 1 / 4 (K = 3) the default.
SGLANG_DOCS_H200_SPEEDUP = {1: 1.8, 32: 1.5}


def sglang_docs_table(context_tokens: float = 1000.0) -> pd.DataFrame:
    """The step model's decoding speed-up ``AL x t_plain / t_verify`` for SGLang's H200 TP8
    claim (``SGLANG_DOCS_H200_SPEEDUP``), bundled H200 SGLang fp8 profile, natural-text AL
    (data/speculative.yaml) at K = 1, 2, 3: which K reading the claim fits. Decode steps only
    (the docs measure decoding speed), at ``context_tokens`` per sequence."""
    from planner.catalog.profile import model_family, resolve_efficiency
    from planner.catalog.speculative import spec_decode

    cat = load_catalog()
    m = cat.model_ref("deepseek-v3", None)
    gpu = "nvidia-h200-sxm"
    params = resolve_efficiency(gpu, "sglang", "fp8", None, cat, model_family(m))[0]
    plain = build_replica(m, gpu, "fp8", "sglang", tp=8, params=params, catalog=cat).sm
    recs = []
    for k in (1, 2, 3):
        al = spec_decode(m, "mtp", k).acceptance_length
        spec = build_replica(m, gpu, "fp8", "sglang", tp=8, params=params, catalog=cat,
                             spec_method="mtp", spec_tokens=k, acceptance_length=al).sm  # fmt: skip
        for b, claim in SGLANG_DOCS_H200_SPEEDUP.items():
            a = (b, b, b, b * context_tokens, b * context_tokens)
            sp = al * float(plain.step(*a).time_s) / float(spec.step(*a).time_s)
            recs.append({"K": k, "AL": round(al, 3), "batch": b, "docs": claim,
                         "model": round(sp, 3), "err %": _pct(sp, claim)})  # fmt: skip
    return pd.DataFrame(recs)


def moe_kernel_table() -> pd.DataFrame:
    """aiter's tuned MI355X fp8 MoE layer time (``AITER_MI355X_FP8_MOE_US``) relative to 64
    tokens, against the step model's routed-expert bytes relative to 64 tokens: expected
    distinct experts of the bundled MI355X SGLang fp8 TP8 profile plus the shared expert
    (aiter fuses it as the 257th): how much more a verify step's extra tokens cost the MoE."""
    from planner.catalog.profile import model_family, resolve_efficiency

    cat = load_catalog()
    m = cat.model_ref("deepseek-v3", None)
    params = resolve_efficiency("amd-mi355x", "sglang", "fp8", None, cat, model_family(m))[0]
    sm = build_replica(m, "amd-mi355x", "fp8", "sglang", tp=8, params=params, catalog=cat).sm
    ex = {t: float(sm.expected_experts(t)) + 1.0 for t in AITER_MI355X_FP8_MOE_US}
    k0, e0 = AITER_MI355X_FP8_MOE_US[64], ex[64]
    return pd.DataFrame(
        [{"tokens": t, "aiter us": us, "aiter / 64 tok": round(us / k0, 3),
          "experts + shared": round(ex[t], 1), "model / 64 tok": round(ex[t] / e0, 3)}
         for t, us in AITER_MI355X_FP8_MOE_US.items()]
    )  # fmt: skip


def host_table() -> pd.DataFrame:
    """What each same-image TPOT pair (:func:`tpot_pairs`) leaves unexplained on the MTP side,
    per verify iteration and per sequence: the diagnosis behind
    ``planner.engine.speculative.SPEC_HOST_SEQ_S`` (run it with that switch off).

    The MTP run's predicted TPOT is first scaled by the baseline's measured / predicted TPOT
    (the plain step's own error, which both runs share), then ``missing ms per iteration =
    AL x (measured MTP TPOT - scaled predicted MTP TPOT)``, and ``per sequence`` divides it
    by the concurrency (every pair runs TP8 without attention DP: one scheduler)."""
    t = tpot_pairs()
    out = []
    for _, r in t.iterrows():
        if not r["pred TPOT base / MTP ms"] or not r["AL used"]:
            continue
        p0, p1 = (float(x) for x in r["pred TPOT base / MTP ms"].split(" / "))
        scaled = p1 * r["TPOT base ms"] / p0
        miss = r["AL used"] * (r["TPOT MTP ms"] - scaled)
        out.append({
            "gpu": r["gpu"], "prec": r["prec"], "engine": r["engine"], "ISL/OSL": r["ISL/OSL"],
            "c": r["c"], "K": r["K"], "AL used": r["AL used"], "base meas / pred": round(r["TPOT base ms"] / p0, 3),
            "MTP TPOT meas / pred scaled ms": f"{r['TPOT MTP ms']:.2f} / {scaled:.2f}",
            "missing ms per iteration": round(miss, 2), "per sequence ms": round(miss / r["c"], 3),
            "per verify position ms": round(miss / (r["c"] * r["K"]), 3),
        })  # fmt: skip
    return pd.DataFrame(out)


def other_pairs_table(profile_for=None) -> pd.DataFrame:
    """The MTP / no-MTP pairs of the publishers outside InferenceX (``FILES``), at every
    concurrency: measured and predicted speed-up (``as_speedup``: a latency pair's ratio is
    inverted) with the row's workload AL, and ``err %`` = predicted / measured - 1.
    ``profile_for``: source -> profile (``held_out_profiles``; a source it does not know, or
    None, takes the bundled profile)."""
    cat = load_catalog()
    rows = [r for f in FILES for r in read_rows(f)[0]]
    recs = []
    for p in spec_pairs(rows):
        b0 = p.base_rows[0]
        prof = profile_for(cell(b0, "source")) if profile_for else None
        al = catalog_al(cat, b0, p.method, p.spec_tokens, row_workload(p.spec_row))
        pred, why = predicted_ratio(p, al, cat, _params(cat, b0, prof)) if al else (None, "no AL")
        meas = as_speedup(p.measured_ratio, p.spec_row)
        pred = as_speedup(pred, p.spec_row)
        recs.append({
            "id": cell(p.spec_row, "id"), "source": cell(p.spec_row, "source")[:48],
            "gpu": cell(p.spec_row, "hardware"), "metric": cell(p.spec_row, "metric"),
            "c": int(p.concurrency or 1), "K": p.spec_tokens, "AL used": round(al, 3) if al else None,
            "measured": round(meas, 3), "predicted": round(pred, 3) if pred else why[:60],
            "err %": _pct(pred, meas) if pred else None,
        })  # fmt: skip
    return pd.DataFrame(recs)


def _tally(e: pd.Series, label: str) -> str:
    e = e.dropna().abs()
    return f"{label}: {int((e <= 15).sum())} of {len(e)} within 15 %, median {e.median():.1f} %"


def main() -> int:
    if "--amd-blog" in sys.argv:
        print(_md_table(amd_blog_table()))
        return 0
    if "--sglang-docs" in sys.argv:
        print(_md_table(sglang_docs_table()))
        return 0
    if "--moe-kernel" in sys.argv:
        print(_md_table(moe_kernel_table()))
        return 0
    held = None
    if "--holdout" in sys.argv:
        held = held_out_profiles(sys.argv[sys.argv.index("--holdout") + 1])
    if "--sides" in sys.argv:
        print(_md_table(sides_table(profile_for=held)))
        return 0
    if "--terms" in sys.argv:
        print(_md_table(terms_table()))
        return 0
    if "--host" in sys.argv:
        h = host_table()
        print(_md_table(h))
        sg = h[h["engine"].str.startswith("sglang") & (h["c"] >= 16)]
        print(
            f"\nSGLang, c >= 16: per sequence median {sg['per sequence ms'].median():.3f} ms "
            f"(range {sg['per sequence ms'].min():.3f} to {sg['per sequence ms'].max():.3f}, "
            f"{len(sg)} pairs); per verify position median {sg['per verify position ms'].median():.3f} ms"
        )
        return 0
    if "--tpot" in sys.argv:
        print(_md_table(tpot_pairs(held)))
        return 0
    if "--others" in sys.argv:
        o = other_pairs_table(held)
        print(_md_table(o))
        print("\n" + _tally(o[o["c"] <= 1]["err %"], "batch 1"))
        print(_tally(o[o["c"] >= 32]["err %"], "c >= 32"))
        return 0
    t = pairs_table(held)
    print(_md_table(t))
    hi = t[t["c"] >= 32]
    for col in ("err median %", "err same %"):
        e = hi[col].abs()
        print(
            f"\nc >= 32, {col}: {int((e <= 15).sum())} of {len(e)} within 15 %, median {e.median():.1f} %"
        )
    if "--all" in sys.argv:  # + the pairs of the other publishers (``--others``)
        o = other_pairs_table(held)
        both = pd.concat([hi["err median %"], o[o["c"] >= 32]["err %"]])
        print("\nall publishers, " + _tally(o[o["c"] <= 1]["err %"], "batch 1"))
        print("all publishers, " + _tally(both, "c >= 32 (InferenceX: err median %)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
