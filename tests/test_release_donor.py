"""The cross-architecture release donor's order (planner.catalog.release_donor), the one rule
that the fit, ``planner validate`` and the recommender reach through
``resolve_release_params``.

The profiles are hand-made, in the shape of the InferenceX open-results fold once the SGLang
cookbook's DeepSeek-R1 B200 rows name their release (0.5.6.post1, docs/changes/2026-12-07e/donor.md):
SGLang at fp8 with 0.4.2.post4 on the MI300X (CDNA3), 0.5.3 on the H200 (Hopper) and
0.5.6.post1 on the B200 (Blackwell); the MI355X (CDNA4) has no SGLang node."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.profile import Profile, ProfileNode
from planner.catalog.release_donor import (
    NO_OFFLINE_NODES_ENV,
    VENDOR_FIRST_ENV,
    elsewhere_rank,
    no_offline_nodes,
    offline_only,
    vendor_first,
)
from planner.catalog.release_profile import release_distance, resolve_release_params
from planner.errors import PlannerError

CAT = load_catalog()
MI300X, MI355X, H200, B200 = "amd-mi300x", "amd-mi355x", "nvidia-h200-sxm", "nvidia-b200"


def _node(gpu, release, mem_eff, prec="fp8", rows=10):
    g = CAT.gpu(gpu)
    return ProfileNode(
        vendor=g.vendor, framework="sglang", arch=g.arch, gpu=g.id, precision=prec,
        level=5, n_rows=rows, params=PRIOR.with_(mem_eff=mem_eff), release=release,
        families=("moe",),
    )  # fmt: skip


def _profile(*release_nodes):
    return Profile(
        created=dt.date(2026, 12, 7), data_hash="x", data_files=(), n_rows_fitted=0,
        method="test", nodes=(), release_nodes=release_nodes,
    )  # fmt: skip


OLD_AMD = _node(MI300X, "0.4.2.post4", 0.22, rows=24)
H200_053 = _node(H200, "0.5.3", 0.73, rows=8)
B200_POST1 = _node(B200, "0.5.6.post1", 0.70, rows=18)
AMD_053 = _node(MI300X, "0.5.3", 0.30)


def _used(prof, gpu=MI355X, release="0.5.8"):
    _, prov, ch = resolve_release_params(gpu, "sglang", "fp8", release, catalog=CAT,
                                         profile=prof, family="moe")  # fmt: skip
    return ch.used, ch.node.gpu, prov


def test_default_is_the_nearest_release_and_the_label_moves_the_mi355x(monkeypatch):
    """Releases with a node, oldest first: 0.4.2.post4, 0.5.3, 0.5.6.post1; 0.5.8 counts
    in after them, so 0.5.6.post1 is 1 release away, 0.5.3 is 2 (0.5.6.post1, 0.5.8). Without
    the cookbook label the MI355X takes the H200's 0.5.3 node; with it, the B200's
    0.5.6.post1 node (held out: MI355X TPOT 11.3 -> 15.5 %, changes/s8-sglb200.md)."""
    monkeypatch.delenv(VENDOR_FIRST_ENV, raising=False)
    assert not vendor_first()
    with_label = _profile(OLD_AMD, H200_053, B200_POST1)
    assert release_distance(with_label, "sglang", "0.5.8", "0.5.6.post1") == 1
    assert release_distance(with_label, "sglang", "0.5.8", "0.5.3") == 2
    assert _used(_profile(OLD_AMD, H200_053))[:2] == ("0.5.3", H200)
    used, gpu, prov = _used(with_label)
    assert (used, gpu) == ("0.5.6.post1", B200)
    assert "nearest release on another architecture" in prov


def test_vendor_first_takes_the_vendors_node_of_the_series(monkeypatch):
    """An AMD 0.5.3 node on the MI300X and the B200's 0.5.6.post1: by distance (off) the
    B200 node (1 against 2); vendor first (on) the MI300X node, a release further."""
    prof = _profile(OLD_AMD, H200_053, B200_POST1, AMD_053)
    monkeypatch.setenv(VENDOR_FIRST_ENV, "0")
    assert _used(prof)[:2] == ("0.5.6.post1", B200)
    monkeypatch.setenv(VENDOR_FIRST_ENV, "1")
    assert _used(prof)[:2] == ("0.5.3", MI300X)


def test_vendor_first_falls_back_across_vendors(monkeypatch):
    """Without an AMD node of the 0.5 series (0.4.2.post4 is another series) the rule falls
    back to the nearest release of the other vendor: the same pick as off. This is the
    InferenceX fold: the rule cannot undo what the cookbook label moves."""
    prof = _profile(OLD_AMD, H200_053, B200_POST1)
    monkeypatch.setenv(VENDOR_FIRST_ENV, "1")
    assert _used(prof)[:2] == ("0.5.6.post1", B200)


def test_an_architecture_with_a_node_is_not_a_donor_question(monkeypatch):
    """The MI300X has its own (CDNA3) SGLang node: the nearest release of its architecture,
    whichever order the donor rule takes."""
    prof = _profile(OLD_AMD, H200_053, B200_POST1)
    for flag in ("0", "1"):
        monkeypatch.setenv(VENDOR_FIRST_ENV, flag)
        assert _used(prof, gpu=MI300X)[:2] == ("0.4.2.post4", MI300X)


@pytest.mark.parametrize("bad", ["2", "yes", "on"])
def test_a_bad_switch_value_is_a_one_line_error(monkeypatch, bad):
    monkeypatch.setenv(VENDOR_FIRST_ENV, bad)
    with pytest.raises(PlannerError, match=VENDOR_FIRST_ENV):
        vendor_first()


def test_rank_orders_by_distance_then_vendor_or_vendor_first(monkeypatch):
    """Every ordering of a few candidates: off, the distance never falls along the sorted
    list and a same-vendor node leads only among equal distances; on, every same-vendor
    node precedes every other-vendor node and distances rise within each vendor group."""
    cands = [
        (d, same, near, (0, 5, r), rows, f"g{i}")
        for i, (d, same, near, r, rows) in enumerate(
            itertools.product((1, 2, 3), (True, False), (0.1, float("inf")), (3, 6), (8,))
        )
    ]
    monkeypatch.setenv(VENDOR_FIRST_ENV, "0")
    off = sorted(cands, key=lambda c: elsewhere_rank(*c))
    assert [c[0] for c in off] == sorted(c[0] for c in cands)
    for d in (1, 2, 3):
        same = [c[1] for c in off if c[0] == d]
        assert same == sorted(same, reverse=True)  # True before False
    monkeypatch.setenv(VENDOR_FIRST_ENV, "1")
    on = sorted(cands, key=lambda c: elsewhere_rank(*c))
    flags = [c[1] for c in on]
    assert flags == [True] * flags.count(True) + [False] * flags.count(False)
    for v in (True, False):
        ds = [c[0] for c in on if c[1] is v]
        assert ds == sorted(ds)


class _Row:
    """The fields fit_release_nodes reads of a prepared row (H100, vLLM, fp8, MoE)."""

    def __init__(self, rel, mode):
        self.release, self.mode, self.family, self.vendor = rel, mode, "moe", "nvidia"
        self.framework, self.arch, self.gpu, self.precision = (
            "vllm",
            "hopper",
            "nvidia-h100-sxm",
            "fp8",
        )
        self.expert_parallel, self.source = False, "s"

    def fit_predictor(self, kinds):
        return object()


@pytest.mark.parametrize("flag, kept", [("0", ["0.10.0", "0.9.2"]), ("1", ["0.10.0"])])
def test_the_offline_node_switch_of_the_fit(monkeypatch, flag, kept):
    """Two releases of 5 rows each: 0.9.2 all offline (a max-throughput table), 0.10.0 four
    offline and one at a fixed concurrency. With the switch on, the fit leaves out 0.9.2's
    node only: one serving row is enough to keep a node."""
    from planner.calibration import release_fit

    rows = [_Row("0.9.2", "offline")] * 5 + [_Row("0.10.0", "offline")] * 4
    rows += [_Row("0.10.0", "concurrency")]
    monkeypatch.setattr(release_fit, "resolve_params", lambda *a, **k: (PRIOR, "prior"))
    monkeypatch.setattr(release_fit, "_fit_node", lambda rs, *a: (PRIOR, 0.0))
    monkeypatch.setenv(NO_OFFLINE_NODES_ENV, flag)
    out = release_fit.fit_release_nodes(_profile(), rows, CAT, min_rows=5)
    assert sorted(n.release for n in out.release_nodes) == kept


def test_offline_only():
    assert offline_only(["offline"] * 3)
    assert not offline_only(["offline", "offline", "concurrency"])
    assert not offline_only([])  # no rows: nothing says the node saw only offline runs


def test_both_rules_are_off_by_default(monkeypatch):
    """Measured held out and not taken (docs/changes/2026-12-07e/donor.md)."""
    monkeypatch.delenv(VENDOR_FIRST_ENV, raising=False)
    monkeypatch.delenv(NO_OFFLINE_NODES_ENV, raising=False)
    assert not vendor_first() and not no_offline_nodes()
