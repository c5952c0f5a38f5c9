"""The KV-cache precision of InferenceX's single-node MTP rows, which carry none: their launch
scripts' (``INFERENCEX_SPEC_KV_PRECISION``), behind ``SPEC_ROW_KV_FROM_SCRIPT`` (OFF: it makes
the issue-30 held-out numbers worse; docs/changes/2026-12-08/mtp32.md)."""

from __future__ import annotations

import pytest

import planner.benchmarks.speculative_rows as sr
from planner.benchmarks.io import read_rows
from planner.catalog.catalog import load_catalog
from planner.catalog.profile import model_family, resolve_params

CAT = load_catalog()
BY_ID = {r["id"]: r for r in read_rows("data/benchmarks/public_inferencex.csv")[0]}


def _params(row):
    m = CAT.model_ref(row["model"], None)
    return resolve_params(row["hardware"], row["framework"], CAT.precision(row["precision"]).id,
                          catalog=CAT, family=model_family(m))[0]  # fmt: skip


def test_the_switch_is_off_and_rows_keep_their_cell(monkeypatch):
    assert sr.SPEC_ROW_KV_FROM_SCRIPT is False
    assert sr.spec_row_kv_precision(BY_ID["ixm-1569"]) in ("", None)
    monkeypatch.setattr(sr, "SPEC_ROW_KV_FROM_SCRIPT", True)
    # MI325X fp8 SGLang: dsr1_fp8_mi325x_mtp.sh @ 8283444dd passes --kv-cache-dtype fp8_e4m3
    assert sr.spec_row_kv_precision(BY_ID["ixm-1569"]) == "fp8"
    # H200 SGLang: dsr1_fp8_h200_mtp.sh passes none (16-bit): the empty cell stays
    assert sr.spec_row_kv_precision(BY_ID["ixm-1554"]) in ("", None)
    # another source, or a row that states its own: untouched
    assert sr.spec_row_kv_precision({**BY_ID["ixm-1569"], "source": "a blog"}) in ("", None)
    assert sr.spec_row_kv_precision({**BY_ID["ixm-1569"], "kv_precision": "bf16"}) == "bf16"


def test_fp8_kv_makes_the_8k_mi325x_mtp_run_faster(monkeypatch):
    # ixm-1569 (MI325X SGLang TP8, 8k/1k, c64, K = 3): MLA's latent KV read per token-layer
    # halves in fp8 (576 B against 1,152 B), and at 8k contexts the step is attention-heavy
    # (54.7 of 95.7 ms in the 16-bit plain step, --verify), so the run predicts faster
    r = BY_ID["ixm-1569"]
    v16 = sr.predict_spec_row(r, 2.5, CAT, _params(r))[0]
    monkeypatch.setattr(sr, "SPEC_ROW_KV_FROM_SCRIPT", True)
    v8 = sr.predict_spec_row(r, 2.5, CAT, _params(r))[0]
    assert v8 > 1.1 * v16
    # the pair's own simulation already reads fp8 (from the baseline row): mtp_pairs_table
    # --sides: 9,373 (own row, 16-bit) -> 11,232 tok/s (pair)
    assert v8 == pytest.approx(11232, rel=0.05)
