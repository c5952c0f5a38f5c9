"""data/moe_dispatch.yaml: SGLang's DEP layouts on AMD gather the MoE tokens (issue 29)."""

from __future__ import annotations

import pytest

from planner.catalog.layout import Layout
from planner.catalog.moe_dispatch import dispatch_records, gathers
from planner.engine.adp import dispatch_bytes_per_token, gathered_dispatch_bytes_per_token
from planner.serving.replica import build_replica

DEP8 = Layout(tp=1, pp=1, ep=8, attention_dp=8)


def test_the_record_is_sourced_and_names_the_first_release_with_mori():
    (r,) = dispatch_records()
    assert (r.framework, r.vendor, r.dispatch) == ("sglang", "amd", "gathered")
    assert (r.all_to_all, r.all_to_all_since) == ("mori", "0.5.9")
    assert "pip download sglang" in r.source and r.as_of.year == 2026


@pytest.mark.parametrize(
    ("framework", "vendor", "release", "expected"),
    [
        ("sglang", "amd", None, True),
        ("sglang", "amd", "0.5.7", True),
        ("sglang", "amd", "0.5.12", True),
        ("sglang", "amd", "0.5.6", False),  # below the first release read
        ("sglang", "nvidia", None, False),  # NVIDIA rows unchanged (DeepEP recipes)
        ("vllm", "amd", None, False),
        (None, "amd", None, False),
    ],
)
def test_gathers(framework, vendor, release, expected):
    assert gathers(framework, vendor, release) is expected


def test_the_gather_bytes_by_hand():
    # DeepSeek-V3 (hidden 7168, 256 experts, top-8), DEP8:
    # gather (decode, MAX_LEN): 2 x 7/8 x 7168 x 2 = 25,088 B per token and MoE layer
    # all-to-all: q = 1 - (1 - 32/256)^8 = 0.65639; 7 x q / 8 x 7168 x 4 = 0.574342 x 28,672 = 16,467.5 B
    assert gathered_dispatch_bytes_per_token(DEP8, 7168, False) == 25_088
    assert dispatch_bytes_per_token(DEP8, 256, 8, 7168) == pytest.approx(16_467.5, abs=0.5)


def _comm(gpu, dispatch, catalog):
    rep = build_replica(
        "deepseek-v3", gpu, "fp8", "sglang", layout=DEP8, catalog=catalog, moe_dispatch=dispatch
    )
    return rep.sm.comm_bytes_per_token


def test_build_replica_charges_the_gather_on_amd_only(catalog):
    a2a = _comm("amd-mi300x", "all_to_all", catalog)
    # 58 MoE layers x (25,088 - 16,467.5) = 499,989 B more per token
    assert _comm("amd-mi300x", None, catalog) - a2a == pytest.approx(58 * 8_620.5, rel=1e-4)
    assert _comm("amd-mi300x", "gathered", catalog) == _comm("amd-mi300x", None, catalog)
    nv = _comm("nvidia-h200-sxm", "all_to_all", catalog)
    assert _comm("nvidia-h200-sxm", None, catalog) == nv
