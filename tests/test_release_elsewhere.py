"""A named release on an architecture where the engine has no fit (issue 31, issue 29's
MI355X frontier): the nearest release of the engine on another architecture, before the
vendor's pooled node of an old build (planner.catalog.release_profile.choose_release_elsewhere).

The profiles are hand-made: SGLang at fp8 with 0.4.2.post4 on the MI300X (CDNA3, the 2025
dstack build, mem_eff 0.22), 0.5.3 on the H200 (Hopper, 0.73), and 0.5.6 on the B200 at bf16
(Blackwell, 0.76); the MI355X (CDNA4) has no SGLang node of any kind."""

from __future__ import annotations

import datetime as dt

from planner.calibration.release_fit import _with_elsewhere
from planner.catalog import load_catalog
from planner.catalog.bandwidth import transfer_params
from planner.catalog.efficiency import PRIOR
from planner.catalog.profile import Profile, ProfileNode, provenance_tier
from planner.catalog.release_profile import _series, release_distance, resolve_release_params

CAT = load_catalog()
MI300X, MI355X, H200, B200 = "amd-mi300x", "amd-mi355x", "nvidia-h200-sxm", "nvidia-b200"


def _node(gpu, release, mem_eff, prec="fp8", rows=10, level=5):
    g = CAT.gpu(gpu)
    return ProfileNode(
        vendor=g.vendor, framework="sglang", arch=g.arch, gpu=g.id, precision=prec,
        level=level, n_rows=rows, params=PRIOR.with_(mem_eff=mem_eff), release=release,
        families=("moe",),
    )  # fmt: skip


def _profile(*release_nodes, nodes=()):
    return Profile(
        created=dt.date(2026, 12, 6), data_hash="x", data_files=(), n_rows_fitted=0,
        method="test", nodes=nodes, release_nodes=release_nodes,
    )  # fmt: skip


OLD_AMD = _node(MI300X, "0.4.2.post4", 0.22, rows=24)
H200_053 = _node(H200, "0.5.3", 0.73, rows=8)
B200_056 = _node(B200, "0.5.6", 0.76, prec="bf16", rows=18)
PROF = _profile(OLD_AMD, H200_053, B200_056)


def _resolve(gpu, release, prec="fp8", prof=PROF):
    return resolve_release_params(gpu, "sglang", prec, release, catalog=CAT, profile=prof,
                                  family="moe")  # fmt: skip


def test_new_build_on_an_architecture_without_a_fit_takes_the_nearest_release():
    """MI355X, SGLang 0.5.8, fp8. Releases with a node, oldest first: 0.4.2.post4, 0.5.3,
    0.5.6; 0.5.8 is counted in after them. Distances: 0.5.3 -> 2 (0.5.6, 0.5.8), 0.4.2.post4
    -> 3. 0.5.6 is bf16 and a node at fp8 exists, so it is not a candidate. The H200's 0.5.3
    node wins over the MI300X's 0.4.2.post4 node (which the pooled "sglang on amd" rule of
    the fit over every release would give), its efficiencies moved to the MI355X by the two
    datasheets (the sibling transfer)."""
    assert release_distance(PROF, "sglang", "0.5.8", "0.5.3") == 2
    assert release_distance(PROF, "sglang", "0.5.8", "0.4.2.post4") == 3
    p, prov, ch = _resolve(MI355X, "0.5.8")
    assert (ch.used, ch.distance, ch.node.gpu) == ("0.5.3", 2, H200)
    assert p == transfer_params(H200_053.params, CAT.gpu(H200), CAT.gpu(MI355X))
    assert prov == (
        "transferred from sglang@0.5.3/nvidia-h200-sxm/fp8 on all GPUs "
        "(8 rows; nearest release on another architecture)"
    )
    # the band is the framework tier's (the same engine on other GPUs), never "fit"
    assert provenance_tier(prov) == "framework"
    assert "no sglang fit on cdna4 GPUs at fp8" in ch.note and ch.older


def test_an_architecture_with_a_node_keeps_it():
    """MI300X (CDNA3) and MI325X (its sibling) keep the 0.4.2.post4 node of their own
    architecture, three releases away: held out, that node gave InferenceX's 0.5.x MI300X
    output tok/s at 0.70-0.95 of measured, the H200's 0.5.3 node at 1.28-1.78."""
    p, prov, ch = _resolve(MI300X, "0.5.8")
    assert (ch.used, ch.distance, p.mem_eff) == ("0.4.2.post4", 3, 0.22)
    assert prov == "fit (sglang@0.4.2.post4/amd-mi300x/fp8, 24 rows)"
    _, prov, ch = _resolve("amd-mi325x", "0.5.8")
    assert ch.used == "0.4.2.post4" and "nearest cdna3 sibling" in prov


def test_without_a_node_at_the_precision_any_precision():
    """MI355X at fp4: no SGLang release node at fp4 anywhere, so every precision counts.
    For 0.5.12: 0.5.6 is 1 release away (0.5.6, 0.5.12), 0.5.3 is 2, 0.4.2.post4 is 3."""
    _, prov, ch = _resolve(MI355X, "0.5.12", prec="fp4")
    assert (ch.used, ch.distance, ch.node.gpu) == ("0.5.6", 1, B200)
    assert prov.startswith("transferred from sglang@0.5.6/nvidia-b200/bf16 on all GPUs")


def test_same_release_ties_go_to_the_same_vendor():
    """0.5.3 measured on the H200 and on the MI300X: the same distance (2) from 0.5.8, so the
    MI355X takes the AMD node (CDNA3 -> CDNA4 by the datasheets)."""
    amd_053 = _node(MI300X, "0.5.3", 0.30)
    prof = _profile(OLD_AMD, H200_053, amd_053)
    p, _, ch = _resolve(MI355X, "0.5.8", prof=prof)
    assert (ch.used, ch.node.gpu) == ("0.5.3", MI300X)
    assert p == transfer_params(amd_053.params, CAT.gpu(MI300X), CAT.gpu(MI355X))


def test_release_free_rows_and_fitted_architectures_are_unchanged():
    """No release named: the fit over every release, as before (here the prior: no base
    node). A base node of SGLang on the MI355X (rows naming no release) is evidence of the
    engine on CDNA4: the ordinary resolution keeps it."""
    p, prov, ch = _resolve(MI355X, None)
    assert ch.used is None and prov == "prior" and p == PRIOR
    base = _node(MI355X, "", 0.66).model_copy(update={"release": None})
    p, prov, ch = _resolve(MI355X, "0.5.8", prof=_profile(OLD_AMD, H200_053, nodes=(base,)))
    assert ch.used is None and p.mem_eff == 0.66
    assert prov.startswith("fit (sglang/amd-mi355x/fp8")


def test_leave_one_source_out_fits_the_donor_nodes():
    """The release nodes a fold fits: its held-out rows' (framework, arch, precision), and,
    for CDNA4 where SGLang has no release rows, SGLang at fp8 on every architecture; at fp4,
    where no architecture has any, SGLang at every precision. vLLM is never added."""
    groups = {
        ("amd", "sglang", "cdna3", MI300X, "fp8", "0.4.2.post4", ""): [],
        ("nvidia", "sglang", "hopper", H200, "fp8", "0.5.3", ""): [],
        ("nvidia", "sglang", "blackwell", B200, "bf16", "0.5.6", ""): [],
        ("nvidia", "vllm", "hopper", H200, "fp8", "0.11.0", ""): [],
    }
    assert _with_elsewhere(None, groups) is None
    assert _with_elsewhere({("sglang", "cdna3", "fp8")}, groups) == {("sglang", "cdna3", "fp8")}
    assert _with_elsewhere({("sglang", "cdna4", "fp8")}, groups) == {
        ("sglang", "cdna4", "fp8"), ("sglang", "cdna3", "fp8"), ("sglang", "hopper", "fp8"),
    }  # fmt: skip
    assert _with_elsewhere({("sglang", "cdna4", "fp4")}, groups) == {
        ("sglang", "cdna4", "fp4"), ("sglang", "cdna3", "fp8"), ("sglang", "hopper", "fp8"),
        ("sglang", "blackwell", "bf16"),
    }  # fmt: skip


def test_only_the_same_release_series_gives():
    """0.6.1 on the MI355X: no node of the 0.6 series anywhere, so no donor from another
    architecture (0.5.6 is one release away, but of the 0.5 series): the fit over every
    release, here the prior. 0.4.9 takes 0.4.2.post4, the only 0.4 node (on the MI300X)."""
    assert _series("sglang", "0.5.8") == (0, 5) == _series("sglang", "0.5.6")
    assert _series("vllm", "0.11.0") == (0, 11) != _series("vllm", "0.7.4.dev181")
    assert _series("trtllm", "1.2.0rc5") == (1, 2)
    assert _series("trtllm", "1.0") == (1, 0)  # trailing zeros dropped: (1,) padded
    p, prov, ch = _resolve(MI355X, "0.6.1")
    assert ch.used is None and prov == "prior" and p == PRIOR
    _, _, ch = _resolve(MI355X, "0.4.9")
    assert (ch.used, ch.node.gpu) == ("0.4.2.post4", MI300X)


def test_series_first_switch(monkeypatch):
    """``SERIES_FIRST`` (what-if, shipped off): MI300X at SGLang 0.5.8. Its architecture's
    nearest release node is 0.4.2.post4, series (0, 4), not 0.5.8's (0, 5). Off: that node
    (the test above). On: the 0.5 series' node elsewhere, 0.5.3 on the H200 at fp8 (distance
    2), its efficiencies moved by the two datasheets. A 0.4.x request keeps its series'
    MI300X node either way."""
    import planner.catalog.release_profile as rp

    assert _series("sglang", "0.4.2.post4") == (0, 4) and _series("sglang", "0.5.8") == (0, 5)
    monkeypatch.setattr(rp, "SERIES_FIRST", True)
    p, prov, ch = _resolve(MI300X, "0.5.8")
    assert (ch.used, ch.distance, ch.node.gpu) == ("0.5.3", 2, H200)
    assert p == transfer_params(H200_053.params, CAT.gpu(H200), CAT.gpu(MI300X))
    assert prov.startswith("transferred from sglang@0.5.3/nvidia-h200-sxm/fp8 on all GPUs")
    p, prov, ch = _resolve(MI300X, "0.4.3")
    assert (ch.used, p.mem_eff) == ("0.4.2.post4", 0.22)
    monkeypatch.setattr(rp, "SERIES_FIRST", False)
    p, _, ch = _resolve(MI300X, "0.5.8")
    assert (ch.used, p.mem_eff) == ("0.4.2.post4", 0.22)
