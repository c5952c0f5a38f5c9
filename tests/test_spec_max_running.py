"""SGLang's running-request cap under speculative decoding (48 when --max-running-requests is
unset: sglang 0.5.12 server_args._handle_speculative_decoding), applied to the InferenceX
single-node MTP runs whose scripts leave it unset (MI325X fp8, MI355X mxfp4)."""

from __future__ import annotations

import pytest

from planner.benchmarks.io import read_rows
from planner.benchmarks.speculative_rows import (
    INFERENCEX_SPEC_MAX_RUNNING,
    predicted_ratio,
    spec_max_running,
    spec_pairs,
)
from planner.catalog.catalog import load_catalog
from planner.catalog.profile import model_family, resolve_params

CAT = load_catalog()
ROWS = read_rows("data/benchmarks/public_inferencex.csv")[0]
BY_ID = {r["id"]: r for r in ROWS}
PAIRS = {p.spec_row["id"]: p for p in spec_pairs(ROWS)}


def _params(row):
    m = CAT.model_ref(row["model"], None)
    return resolve_params(row["hardware"], row["framework"], CAT.precision(row["precision"]).id,
                          catalog=CAT, family=model_family(m))[0]  # fmt: skip


def test_which_runs_are_capped():
    # MI325X fp8 SGLang MTP, c64: dsr1_fp8_mi325x_mtp.sh sets no --max-running-requests
    assert spec_max_running(BY_ID["ixm-1566"]) == 48
    # MI355X mxfp4 SGLang MTP, c64: dsr1_fp4_mi355x_mtp.sh sets none either
    assert spec_max_running(BY_ID["ixm-1601"]) == 48
    # MI355X fp8: its script sets MAX_RUNNING_REQUESTS=$CONC
    assert spec_max_running(BY_ID["ixm-1606"]) is None
    # H200: the row's notes state max_num_seqs (512 at 1k/1k) from the script
    assert spec_max_running(BY_ID["ixm-1554"]) is None
    # a row of another source, same GPU and engine: no cap
    other = {**BY_ID["ixm-1566"], "source": "some blog"}
    assert spec_max_running(other) is None
    assert set(INFERENCEX_SPEC_MAX_RUNNING.values()) == {48}


@pytest.mark.parametrize("rid", ["ixm-1566", "ixm-1564"])
def test_the_cap_binds_only_above_48_running(rid):
    """ixm-1566 (c64): 64 clients, at most 48 running -> the capped MTP run is slower, so
    its predicted ratio over the (uncapped) baseline is lower than without the cap.
    ixm-1564 (c16): 16 clients never reach 48 -> the same ratio with and without it."""
    p = PAIRS[rid]
    base = p.base_rows[0]
    params = _params(base)
    capped, why = predicted_ratio(p, 2.5, CAT, params)
    assert capped is not None, why
    uncapped_pair = type(p)(
        {**p.spec_row, "source": "some blog"}, p.base_rows, p.method, p.spec_tokens
    )
    free, why = predicted_ratio(uncapped_pair, 2.5, CAT, params)
    assert free is not None, why
    if p.concurrency > 48:
        assert capped < 0.95 * free
    else:
        assert capped == pytest.approx(free, rel=1e-9)
