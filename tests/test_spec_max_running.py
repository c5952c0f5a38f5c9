"""SGLang's running-request cap under speculative decoding (48 when --max-running-requests is
unset: sglang 0.5.12 server_args._handle_speculative_decoding; 0.5.0rc0 __post_init__),
applied to the InferenceX single-node MTP runs whose scripts leave it unset (MI325X fp8,
MI355X mxfp4) and to rows whose notes print a SGLang server command without it (the AMD
ROCm blog's MI300X MTP runs)."""

from __future__ import annotations

import pytest

import planner.benchmarks.speculative_rows as sr
from planner.benchmarks.io import read_rows
from planner.benchmarks.speculative_rows import (
    INFERENCEX_SPEC_MAX_RUNNING,
    SGLANG_SPEC_DEFAULT_MAX_RUNNING,
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


BLOG_ROWS = read_rows("data/benchmarks/public_blogs_moe.csv")[0]
BLOG = {r["id"]: r for r in BLOG_ROWS}
BLOG_PAIRS = {p.spec_row["id"]: p for p in spec_pairs(BLOG_ROWS)}


def test_a_printed_sglang_command_without_the_flag_gets_sglangs_default(monkeypatch):
    """The AMD ROCm blog's MI300X MTP server command (SGLang 0.5.0rc0) passes no
    --max-running-requests, so NEXTN / EAGLE resets it to 48 (server_args.py of the 0.5.0rc0
    wheel); the command printed with the flag, a baseline row, or the switch OFF: no cap."""
    spec = BLOG["rocmtp-0014"]  # c64, with MTP
    assert "sglang.launch_server" in spec["notes"]
    assert spec_max_running(spec) == SGLANG_SPEC_DEFAULT_MAX_RUNNING == 48
    assert spec_max_running(BLOG["rocmtp-0013"]) is None  # its baseline: no speculative decoding
    flagged = {**spec, "notes": spec["notes"] + " --max-running-requests 128"}
    assert spec_max_running(flagged) is None
    # InferenceX rows are read as before
    assert spec_max_running(BY_ID["ixm-1566"]) == 48
    assert spec_max_running(BY_ID["ixm-1606"]) is None
    monkeypatch.setattr(sr, "SGLANG_PRINTED_CAP_ON", False)
    assert spec_max_running(spec) is None
    assert spec_max_running(BY_ID["ixm-1566"]) == 48


@pytest.mark.parametrize("rid", ["rocmtp-0014", "rocmtp-0012"])
def test_the_blog_cap_binds_at_c64_only(rid, monkeypatch):
    """c64: at most 48 of the 64 clients run, so the MTP run's closed-loop E2E is
    64 / X(48) instead of 64 / X(64), X(b) = b / step(b) its throughput at b running; with a
    step time that does not fall as the batch grows, X(48) / X(64) lies in [48 / 64, 1]: the
    predicted E2E ratio (MTP / baseline, what :func:`predicted_ratio` returns for an E2E
    metric) grows by a factor in (1, 64 / 48] (1.17 on the bundled profile: speed-up 2.09 ->
    1.77, measured 1.25). c32: 32 clients never reach 48, the same ratio."""
    p = BLOG_PAIRS[rid]
    params = _params(p.base_rows[0])
    capped, why = predicted_ratio(p, 2.58, CAT, params)
    assert capped is not None, why
    monkeypatch.setattr(sr, "SGLANG_PRINTED_CAP_ON", False)
    free, why = predicted_ratio(p, 2.58, CAT, params)
    assert free is not None, why
    if p.concurrency > 48:
        assert 1.1 <= capped / free <= 64 / 48
    else:
        assert capped == pytest.approx(free, rel=1e-9)
