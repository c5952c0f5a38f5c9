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
"""

from __future__ import annotations

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
    catalog_al,
    verify_table,
)

from planner.benchmarks.io import read_rows  # noqa: E402
from planner.benchmarks.schema import cell  # noqa: E402
from planner.benchmarks.schema import layout as row_layout  # noqa: E402
from planner.benchmarks.serving_rows import predict_serving_row  # noqa: E402
from planner.benchmarks.speculative_rows import (  # noqa: E402
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


def pairs_table() -> pd.DataFrame:
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
        params = _params(cat, b0)
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


def tpot_pairs() -> pd.DataFrame:
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
        params = _params(cat, b)
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


def main() -> int:
    if "--terms" in sys.argv:
        print(_md_table(terms_table()))
        return 0
    if "--tpot" in sys.argv:
        print(_md_table(tpot_pairs()))
        return 0
    t = pairs_table()
    print(_md_table(t))
    hi = t[t["c"] >= 32]
    for col in ("err median %", "err same %"):
        e = hi[col].abs()
        print(
            f"\nc >= 32, {col}: {int((e <= 15).sum())} of {len(e)} within 15 %, median {e.median():.1f} %"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
