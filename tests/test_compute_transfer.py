"""Moving a fitted GEMM efficiency (``compute_eff``) to a sibling GPU by the two GPUs' measured
prefill steps of the reference engine (planner.catalog.bandwidth.step_compute_ratio, issue 32
"Done when" item 2)."""

from __future__ import annotations

import pytest
from conftest import DATA_DIR

from planner.catalog import load_catalog, resolve_params
from planner.catalog.bandwidth import step_compute_ratio, transfer_params
from planner.catalog.efficiency import EfficiencyParams
from planner.catalog.profile import load_profile
from planner.catalog.siblings import nearest_sibling

CAT = load_catalog(DATA_DIR)
H100, H200 = "nvidia-h100-sxm", "nvidia-h200-sxm"
_HEAD = "source,metric,hardware,framework,model,precision,kv_precision,tp,batch,isl,value,notes\n"


def _row(gpu, isl, t, batch=1, metric="prefill_s", prec="bf16"):
    return (
        f"planner own measurement (bench/ref_engine.py),{metric},{gpu},pytorch,llama-3.1-8b,"
        f"{prec},bf16,1,{batch},{isl},{t},eager forward\n"
    )


def test_step_compute_ratio_by_hand(tmp_path):
    # Llama-3.1-8B: 32 layers, 32 heads of 128. A 4,096-token prompt's causal attention:
    # 2 x 32 x 32 x 128 x 4096^2 = 4.398047e12 FLOPs at attn_eff 0.5 of the donor's 989 TFLOP/s
    # = 8.89393 ms; fixed terms 10 us + 32 x 30 us + 2 us = 0.972 ms.
    #   a: 100 ms - 8.89393 - 0.972 = 90.13407 ms of GEMMs; b: 102 ms -> 92.13407 ms
    #   ratio (b's rate over a's) = 90.13407 / 92.13407 = 0.978293
    rows = [_row("gpu-a", 4096, 0.100), _row("gpu-b", 4096, 0.102)]
    # left out: prompts outside 2,048-8,192 tokens, two sequences, decode rows
    rows += [_row("gpu-a", 512, 0.010), _row("gpu-b", 512, 0.020)]
    rows += [_row("gpu-a", 16384, 0.5), _row("gpu-b", 16384, 0.4)]
    rows += [_row("gpu-a", 2048, 0.05, batch=2), _row("gpu-b", 2048, 0.09, batch=2)]
    rows += [_row("gpu-a", 2048, 0.05, metric="decode_step_s"),
             _row("gpu-b", 2048, 0.09, metric="decode_step_s")]  # fmt: skip
    (tmp_path / "reference_x.csv").write_text(_HEAD + "".join(rows), encoding="utf-8")
    a = CAT.gpu(H200).model_copy(update={"id": "gpu-a"})
    b = CAT.gpu(H100).model_copy(update={"id": "gpu-b"})
    params = EfficiencyParams().with_(
        attn_eff=0.5, step_overhead_s=10e-6, layer_overhead_s=30e-6, seq_overhead_s=2e-6
    )
    sc = step_compute_ratio(params, a, b, tmp_path)
    assert sc.ratio == pytest.approx(90.13407 / 92.13407, rel=1e-6)
    assert (sc.n_pairs, sc.low, sc.high) == (1, sc.ratio, sc.ratio)
    assert step_compute_ratio(params, b, a, tmp_path).ratio == pytest.approx(92.13407 / 90.13407)
    # a GPU without such steps, or another engine or precision: no ratio
    assert step_compute_ratio(params, a, CAT.gpu(H100), tmp_path) is None
    assert step_compute_ratio(params, a, b, tmp_path, "vllm") is None
    assert step_compute_ratio(params, a, b, tmp_path, "pytorch", "fp8") is None


def test_step_compute_ratio_from_the_two_step_sweeps():
    d = DATA_DIR / "benchmarks"
    donor = nearest_sibling(load_profile(), CAT, H100, "pytorch", "bf16")
    sc = step_compute_ratio(donor.params, CAT.gpu(H200), CAT.gpu(H100), d)
    # 3 models x prompts of 2,048 / 4,096 / 8,192 tokens on both; e.g. Llama-3.1-8B at 4,096:
    # H200 101.554 ms, H100 104.445 ms, less 15.010 ms of attention (4.398e12 FLOPs at
    # 0.29626 x 989 TFLOP/s) and 1.078 ms of fixed terms: 85.466 / 88.357 = 0.967
    assert sc.n_pairs == 9
    assert 0.95 < sc.low <= sc.ratio <= sc.high < 1.01
    assert sc.ratio < 0.99  # the H100 runs the same prefill slower at the same peak
    assert sc.source == "reference_h100_steps_micro.csv, reference_h200.csv"


def test_resolve_params_moves_compute_eff_by_the_prefill_steps(monkeypatch):
    import planner.catalog.bandwidth as bw

    d = DATA_DIR / "benchmarks"
    donor = nearest_sibling(load_profile(), CAT, H100, "pytorch", "bf16")
    sc = step_compute_ratio(donor.params, CAT.gpu(H200), CAT.gpu(H100), d)
    on = transfer_params(donor.params, CAT.gpu(H200), CAT.gpu(H100), d, node=donor)
    # equal bf16 peaks (989 TFLOP/s on both datasheets): compute_eff x the ratio
    assert on.compute_eff == pytest.approx(round(donor.params.compute_eff * sc.ratio, 5))
    assert on.compute_eff < donor.params.compute_eff
    p, _ = resolve_params(H100, "pytorch", "bf16", catalog=CAT, siblings=True, family="dense")
    assert p.compute_eff == on.compute_eff
    # switch off, or no node (release transfers): compute_eff kept; nothing else moves
    monkeypatch.setattr(bw, "STEP_COMPUTE_RULE", False)
    off = transfer_params(donor.params, CAT.gpu(H200), CAT.gpu(H100), d, node=donor)
    assert off.compute_eff == donor.params.compute_eff
    assert off.with_(compute_eff=on.compute_eff) == on
    monkeypatch.setattr(bw, "STEP_COMPUTE_RULE", True)
    bare = transfer_params(donor.params, CAT.gpu(H200), CAT.gpu(H100), d)
    assert bare.compute_eff == donor.params.compute_eff


def test_fp8_transfer_keeps_compute_eff():
    # the prefill steps of the H100 are bf16 only: an fp8 transfer keeps the donor's fraction
    donor = nearest_sibling(load_profile(), CAT, H100, "pytorch", "fp8")
    p, _ = resolve_params(H100, "pytorch", "fp8", catalog=CAT, siblings=True, family="dense")
    assert p.compute_eff == donor.params.compute_eff
