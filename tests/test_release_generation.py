"""Engine generations in the release level (issue 31): a release borrows (nearest-release
donor) only from release nodes of its own engine generation (vLLM V0 < 0.8.0 <= V1), and a
release node whose rows are all of one split family starts from that family's prior."""

from __future__ import annotations

import datetime as dt

import pytest

from planner.calibration import release_fit
from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.profile import Profile, ProfileNode
from planner.catalog.release_profile import resolve_release_params
from planner.catalog.releases import generation, split_generation
from planner.errors import PlannerError

CAT = load_catalog()
H100, H200 = "nvidia-h100-sxm", "nvidia-h200-sxm"


def _node(gpu, release, mem_eff, fw="vllm", families=("dense",)):
    g = CAT.gpu(gpu)
    return ProfileNode(
        vendor=g.vendor, framework=fw, arch=g.arch, gpu=g.id, precision="fp8", level=5,
        n_rows=10, params=PRIOR.with_(mem_eff=mem_eff), release=release, families=families,
    )  # fmt: skip


def _profile(*nodes):
    return Profile(
        created=dt.date(2026, 12, 7), data_hash="x", data_files=(), n_rows_fitted=0,
        method="test", nodes=(), release_nodes=nodes,
    )  # fmt: skip


def test_vllm_generations_hand_checked():
    """V1 from 0.8.0 (the data entry): 0.7.4.dev181 and 0.8.0rc1 (a pre-release of 0.8.0) are
    V0; 0.8.0, 0.9.2, 0.11.0 are V1; a post/dev build of a V0 release stays V0."""
    assert generation("vllm", "0.6.3.post2.dev308") == "V0"
    assert generation("vllm", "0.7.4.dev181") == "V0"
    assert generation("vllm", "0.8.0rc1") == "V0"
    assert generation("vllm", "0.8.0") == "V1"
    assert generation("vllm", "0.8") == "V1"  # 0.8 is 0.8.0
    assert generation("vllm", "0.9.2") == "V1"
    assert generation("vllm", "0.11.0") == "V1"
    # an engine without generations, an engine the catalog does not list, no release
    assert generation("trtllm", "1.0.0") is None
    assert generation("no-such-engine", "1.0") is None
    assert generation("vllm", None) is None


def test_generation_data_entry_is_sourced():
    """The boundary is data with its source: vLLM PR #13726 made V1 the default in 0.8.0."""
    for fw in CAT.frameworks:
        if fw.generations:
            assert fw.generations_source and len(fw.generations_source) > 20, fw.id
            for name, since in fw.generations.items():
                assert generation(fw.id, since, CAT) == name, (fw.id, name)
    vllm = CAT.framework("vllm")
    assert vllm.generations["V1"] == "0.8.0"
    assert "#13726" in vllm.generations_source
    assert vllm.as_of >= dt.date(2026, 12, 6)


def test_bad_generation_release_is_a_one_line_error():
    bad = CAT.framework("vllm").model_copy(update={"generations": {"V1": "zero.eight"}})
    cat = CAT.model_copy(update={"frameworks": (bad,)})
    with pytest.raises(PlannerError, match=r"vllm.generations.V1: 'zero.eight' is not a release"):
        generation("vllm", "0.9.2", cat)


# vLLM on Hopper at fp8: 0.7.3 (V0) on the H100; 0.10.0 and 0.11.0 (V1) on the H200
PROF = _profile(
    _node(H100, "0.7.3", 0.50), _node(H200, "0.10.0", 0.60), _node(H200, "0.11.0", 0.70)
)


def test_v1_release_never_borrows_a_v0_node():
    """0.8.0 on the H100. Releases with a node, with the request counted in: 0.7.3 < 0.8.0 <
    0.10.0 < 0.11.0, so 0.7.3 and 0.10.0 are both 1 release away. Without generations the tie
    goes to the same GPU (0.7.3 on the H100; test_release_level's rule). 0.8.0 is V1, so only
    0.10.0 and 0.11.0 may donate: 0.10.0 (distance 1 < 2), transferred from the H200."""
    p, prov, ch = resolve_release_params(H100, "vllm", "fp8", "0.8.0", catalog=CAT, profile=PROF)
    assert (ch.used, ch.distance, p.mem_eff) == ("0.10.0", 1, 0.60)
    assert prov.startswith("transferred from vllm@0.10.0/nvidia-h200-sxm/fp8")
    # a V0 request takes the V0 node even where a V1 node is as near: 0.7.4 lies between
    # 0.7.3 and 0.10.0 (1 away each)
    _, _, ch = resolve_release_params(H200, "vllm", "fp8", "0.7.4", catalog=CAT, profile=PROF)
    assert (ch.used, ch.distance) == ("0.7.3", 1)


def test_no_node_of_the_generation_takes_the_fit_over_every_release():
    """Only a V0 node (0.7.3) on Hopper: a V1 release (0.9.2) takes the fit over every release
    (here no base nodes: the prior), the note names the generation, and the distance to the
    nearest node of the other generation (0.7.3 < 0.9.2: 1) still widens the band."""
    prof = _profile(_node(H100, "0.7.3", 0.50))
    p, prov, ch = resolve_release_params(H100, "vllm", "fp8", "0.9.2", catalog=CAT, profile=prof)
    assert ch.node is None and ch.used is None and ch.distance == 1
    assert "no vllm V1 release has a fit on hopper GPUs at fp8" in ch.note
    assert prov == "prior" and p == PRIOR
    # the other way: only V1 nodes, a V0 release
    prof = _profile(_node(H200, "0.11.0", 0.70))
    _, _, ch = resolve_release_params(H200, "vllm", "fp8", "0.6.4", catalog=CAT, profile=prof)
    assert ch.node is None and "no vllm V0 release" in ch.note


def test_no_release_named_takes_the_newest_whatever_its_generation():
    _, _, ch = resolve_release_params(H100, "vllm", "fp8", None, catalog=CAT, profile=PROF)
    assert ch.used == "0.11.0"


def test_engine_without_generations_borrows_as_before():
    """TensorRT-LLM lists no generations: 1.0 on the H100 borrows the nearest node (0.16.0
    on the H100 and 1.2.0 on the H200 are both 1 away; the same GPU wins)."""
    prof = _profile(_node(H100, "0.16.0", 0.5, fw="trtllm"), _node(H200, "1.2.0", 0.7, fw="trtllm"))
    _, _, ch = resolve_release_params(H100, "trtllm", "fp8", "1.0", catalog=CAT, profile=prof)
    assert (ch.used, ch.distance) == ("0.16.0", 1)


def test_split_generation_keeps_every_node_without_a_release():
    nodes = PROF.release_nodes
    assert split_generation("vllm", None, nodes, CAT) == (list(nodes), [])
    same, other = split_generation("vllm", "0.9.2", nodes, CAT)
    assert [n.release for n in same] == ["0.10.0", "0.11.0"]
    assert [n.release for n in other] == ["0.7.3"]


def test_single_family_release_node_starts_from_its_family_prior(monkeypatch):
    """fit_release_nodes asks resolve_params for the prior of each release node: a release
    whose rows are all dense (a split family) gets the dense child's prior (family "dense");
    a release of mixed rows gets the mixed node (None) for its node of every family and the
    dense child for its dense child; a release of MoE rows only (moe is not split) gets the
    mixed node."""

    class Row:
        def __init__(self, rel, family):
            self.release, self.family, self.vendor, self.framework = rel, family, "nvidia", "vllm"
            self.arch, self.gpu, self.precision, self.expert_parallel = "hopper", H100, "fp8", False
            self.source = "s"

        def fit_predictor(self, kinds):
            return object()

    rows = [Row("0.9.2", "dense")] * 5 + [Row("0.10.0", "dense")] * 5 + [Row("0.10.0", "moe")] * 5
    rows += [Row("0.11.0", "moe")] * 5
    calls = []

    def resolve(gpu, fw, prec, *, catalog, profile, family):
        calls.append(family)
        return PRIOR, "prior"

    monkeypatch.setattr(release_fit, "resolve_params", resolve)
    monkeypatch.setattr(release_fit, "_fit_node", lambda rs, *a: (PRIOR, 0.0))
    prof = _profile().model_copy(update={"split_families": ("dense",)})
    out = release_fit.fit_release_nodes(prof, rows, CAT, min_rows=5)
    got = sorted(zip(((n.release, n.family) for n in out.release_nodes), calls, strict=True))
    assert got == [
        (("0.10.0", ""), None),  # mixed rows: the mixed node
        (("0.10.0", "dense"), "dense"),  # its dense child
        (("0.11.0", ""), None),  # MoE only: moe is not split, the mixed node
        (("0.9.2", ""), "dense"),  # dense only: the dense child's prior (the patch)
    ]
