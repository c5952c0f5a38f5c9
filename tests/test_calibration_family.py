"""Calibration by model family: dense and MoE rows of one (gpu, framework, precision) node.

MoE and MLA models run far from the dense physics on some engines (dstack's DeepSeek-R1 on
MI300X with vLLM ran about 3x below the dense prediction), so a node mixing both families
gives a dense model efficiencies dragged by MoE rows. The fit adds one child per split family
under every mixed node (``planner.calibration.fit._fit_tree``; dense by default, both families
when asked) and the lookup takes the child of the prediction's family, skipping relatives that
hold only another family.

The synthetic rows are the engine's own step times (``tests/test_calibration.py``'s
design): dense models with TRUE, MoE models with MOE_TRUE, whose bandwidth and compute
efficiencies are half of TRUE's.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from test_calibration import CAT, H200, MODELS, TRUE, _rows_frame, _step_design

from planner.benchmarks import load_measurements
from planner.calibration import fit_profile, predict_rows, prepare_rows
from planner.catalog import EfficiencyParams, Profile, load_profile, resolve_params, save_profile
from planner.catalog.profile import SPLIT_FAMILIES, ProfileNode, provenance_tier
from planner.errors import PlannerError

#: MoE stack: bandwidth, KV bandwidth and compute efficiencies half of the dense ones
MOE_TRUE = TRUE.with_(mem_eff=0.35, kv_mem_eff=0.3, compute_eff=0.275)
#: MoE models of two layer counts (48 and 32), both fit one H200 in bf16
MOE_MODELS = ("qwen3-30b-a3b", "mixtral-8x7b")
NODE = ("nvidia", "pytorch", "hopper", H200, "bf16")


def _specs(models, params, tag):
    return [
        (f"{tag}-{m}-{i:02d}", f"source {tag}", m, *d, "bf16", "pytorch", H200, params)
        for m in models
        for i, d in enumerate(_step_design())
    ]


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """(dense rows, MoE rows), all pytorch on H200 in bf16."""
    path = tmp_path_factory.mktemp("family") / "family.csv"
    _rows_frame(_specs(MODELS, TRUE, "dense") + _specs(MOE_MODELS, MOE_TRUE, "moe")).to_csv(
        path, index=False
    )
    got = prepare_rows(load_measurements(path, CAT), CAT)
    dense = [r for r in got if r.family == "dense"]
    moe = [r for r in got if r.family == "moe"]
    assert len(dense) == len(MODELS) * len(_step_design())
    assert len(moe) == len(MOE_MODELS) * len(_step_design())
    return dense, moe


@pytest.fixture(scope="module")
def dense_profile(rows) -> Profile:
    return fit_profile(rows[0], prior_scale=10.0, max_nfev=100)


@pytest.fixture(scope="module")
def mixed_profile(rows) -> Profile:
    """Both families split (a child of each under every node)."""
    return fit_profile(
        rows[0] + rows[1], prior_scale=10.0, max_nfev=100, split_families=("dense", "moe")
    )


@pytest.fixture(scope="module")
def default_profile(rows) -> Profile:
    """The default split (:data:`SPLIT_FAMILIES`: dense only)."""
    return fit_profile(rows[0] + rows[1], prior_scale=10.0, max_nfev=100)


def _mdape(rows, params: EfficiencyParams) -> float:
    return float(np.median([abs(r.predict(params) / r.value - 1) for r in rows]))


def test_moe_rows_differ_from_dense_physics(rows):
    """The test has teeth: the dense parameters miss the MoE rows by far (and back)."""
    dense, moe = rows
    assert _mdape(moe, TRUE) > 0.3 and _mdape(dense, MOE_TRUE) > 0.3
    assert _mdape(moe, MOE_TRUE) < 1e-9 and _mdape(dense, TRUE) < 1e-9


def test_mixed_node_has_one_child_per_family(rows, mixed_profile):
    dense, moe = rows
    at_node = {n.family: n for n in mixed_profile.nodes if n.level == 5}
    assert set(at_node) == {"", "dense", "moe"}
    assert at_node[""].families == ("dense", "moe")
    assert at_node[""].n_rows == len(dense) + len(moe)
    assert (at_node["dense"].n_rows, at_node["moe"].n_rows) == (len(dense), len(moe))
    assert at_node["dense"].families == ("dense",) and at_node["moe"].families == ("moe",)
    # one pair of children per mixed node: global, nvidia, pytorch (all vendors),
    # nvidia x pytorch, hopper, h200, bf16 = 7 nodes x 3
    assert len(mixed_profile.nodes) == 21
    assert mixed_profile.split_families == ("dense", "moe")


def test_default_split_is_dense_only(rows, default_profile, mixed_profile):
    """By default only dense rows get a child: 7 nodes + 7 dense children. The dense child
    is the same fit as with both families split; an MoE prediction takes the node of every
    family, which is the mixed profile's node too."""
    assert SPLIT_FAMILIES == ("dense",) and default_profile.split_families == ("dense",)
    assert len(default_profile.nodes) == 14
    assert {n.family for n in default_profile.nodes} == {"", "dense"}
    for fam in ("dense", None):
        got = resolve_params(H200, "pytorch", "bf16", catalog=CAT, profile=default_profile,
                             family=fam)  # fmt: skip
        assert got == resolve_params(H200, "pytorch", "bf16", catalog=CAT,
                                     profile=mixed_profile, family=fam)  # fmt: skip
    p, prov = resolve_params(H200, "pytorch", "bf16", catalog=CAT, profile=default_profile,
                             family="moe")  # fmt: skip
    assert prov == f"fit (pytorch/{H200}/bf16, {len(rows[0]) + len(rows[1])} rows)"


def test_unknown_split_family_is_an_error(rows):
    with pytest.raises(PlannerError, match="the model families are dense, moe"):
        fit_profile(rows[0], max_nfev=1, split_families=("sparse",))


@pytest.mark.parametrize(("family", "true"), [("dense", TRUE), ("moe", MOE_TRUE)])
def test_family_children_recover_their_family(rows, mixed_profile, family, true):
    """Each family's child recovers that family's bandwidth and compute efficiencies within
    10% and re-predicts its rows within 2% (median)."""
    params, prov = resolve_params(
        H200, "pytorch", "bf16", catalog=CAT, profile=mixed_profile, family=family
    )
    n = len(rows[0] if family == "dense" else rows[1])
    assert prov == f"fit (pytorch/{H200}/bf16, {n} {family} rows)"
    for f in ("mem_eff", "compute_eff"):
        assert getattr(params, f) == pytest.approx(getattr(true, f), rel=0.10), f
    assert _mdape(rows[0] if family == "dense" else rows[1], params) < 0.02


def test_dense_prediction_does_not_move_when_moe_rows_are_added(rows, dense_profile, mixed_profile):
    """Dense rows predicted with the dense-only fit and with the dense child of the mixed
    fit agree within 1% (median) and 2% (worst row: the child is still shrunk toward the
    mixed node by its prior); the mixed node itself (no family asked) is dragged > 10%."""
    dense = rows[0]
    alone, prov = resolve_params(H200, "pytorch", "bf16", catalog=CAT, profile=dense_profile)
    assert prov == f"fit (pytorch/{H200}/bf16, {len(dense)} rows)"  # no family named
    child, _ = resolve_params(
        H200, "pytorch", "bf16", catalog=CAT, profile=mixed_profile, family="dense"
    )
    moved = [abs(r.predict(child) / r.predict(alone) - 1) for r in dense]
    assert np.median(moved) < 0.01 and max(moved) < 0.02
    mixed, prov = resolve_params(H200, "pytorch", "bf16", catalog=CAT, profile=mixed_profile)
    assert prov == f"fit (pytorch/{H200}/bf16, {len(dense) + len(rows[1])} rows)"
    assert _mdape(dense, mixed) > 0.10


def test_predict_rows_uses_each_rows_family(rows, mixed_profile):
    for r, value, prov in predict_rows(rows[0][:3] + rows[1][:3], mixed_profile, CAT):
        assert f" {r.family} rows)" in prov
        assert value == pytest.approx(r.value, rel=0.05), r.id


def test_fit_for_family_targets_gives_the_full_fits_nodes(rows, mixed_profile):
    """LOSO fits only what a target's family resolves to: the same node as the full fit."""
    part = fit_profile(rows[0] + rows[1], prior_scale=10.0, max_nfev=100,
                       targets=[(*NODE, "moe")], split_families=("dense", "moe"))  # fmt: skip
    assert {n.family for n in part.nodes} == {"", "moe"}
    for prof in (part, mixed_profile):
        got = resolve_params(H200, "pytorch", "bf16", catalog=CAT, profile=prof, family="moe")
        assert got == resolve_params(
            H200, "pytorch", "bf16", catalog=CAT, profile=mixed_profile, family="moe"
        )


# ---------------------------------------------------------------- lookup on hand-made profiles
def _node(key, family="", families=("dense", "moe"), n=10, mem_eff=0.5) -> ProfileNode:
    level = max((i + 1 for i, x in enumerate(key) if x is not None), default=0)
    return ProfileNode(
        vendor=key[0], framework=key[1], arch=key[2], gpu=key[3], precision=key[4],
        level=level, n_rows=n, params=TRUE.with_(mem_eff=mem_eff), family=family,
        families=families, gpus=("amd-mi300x",),
    )  # fmt: skip


def _profile(*nodes, split=("dense", "moe")) -> Profile:
    return Profile(created="2026-12-02", data_hash="x", data_files=(), n_rows_fitted=1,
                   method="hand-made", nodes=nodes, split_families=split)  # fmt: skip


GLOBAL = (None, None, None, None, None)
AMD_VLLM = ("amd", "vllm", None, None, None)
MI300X_FP8 = ("amd", "vllm", "cdna3", "amd-mi300x", "fp8")


def test_resolve_skips_a_node_of_the_other_family_only():
    """A dense prediction on a GPU whose exact node holds only MoE rows takes the nearest
    relative with dense rows (its dense child); an MoE prediction takes the exact node."""
    prof = _profile(
        _node(GLOBAL, n=100, mem_eff=0.6),
        _node(GLOBAL, "dense", ("dense",), n=60, mem_eff=0.7),
        _node(GLOBAL, "moe", ("moe",), n=40, mem_eff=0.3),
        _node(AMD_VLLM, n=30, mem_eff=0.55),
        _node(AMD_VLLM, "dense", ("dense",), n=20, mem_eff=0.65),
        _node(AMD_VLLM, "moe", ("moe",), n=10, mem_eff=0.35),
        _node(MI300X_FP8, families=("moe",), n=8, mem_eff=0.25),
    )
    p, prov = resolve_params("amd-mi300x", "vllm", "fp8", catalog=CAT, profile=prof,
                             family="dense")  # fmt: skip
    assert p.mem_eff == 0.65
    assert prov == "transferred from vllm on amd (amd-mi300x, 20 dense rows)"
    assert provenance_tier(prov) == "vendor_framework"
    p, prov = resolve_params("amd-mi300x", "vllm", "fp8", catalog=CAT, profile=prof,
                             family="moe")  # fmt: skip
    assert (p.mem_eff, prov) == (0.25, "fit (vllm/amd-mi300x/fp8, 8 rows)")
    # no family asked (an old caller): the nearest node, as before families
    p, _ = resolve_params("amd-mi300x", "vllm", "fp8", catalog=CAT, profile=prof)
    assert p.mem_eff == 0.25
    # another framework on AMD: no AMD node of sglang, the global dense child
    p, prov = resolve_params("amd-mi300x", "sglang", "fp8", catalog=CAT, profile=prof,
                             family="dense")  # fmt: skip
    assert p.mem_eff == 0.7 and provenance_tier(prov) == "global"
    assert prov == "transferred from global fit over all frameworks (60 dense rows)"


def test_a_family_not_split_takes_the_nearest_node():
    """With only dense split, an MoE prediction takes the nearest node even if it holds only
    dense rows (and never a dense child); a dense prediction still skips MoE-only nodes."""
    prof = _profile(
        _node(GLOBAL, n=100, mem_eff=0.6),
        _node(GLOBAL, "dense", ("dense",), n=60, mem_eff=0.7),
        _node(AMD_VLLM, families=("dense",), n=20, mem_eff=0.65),
        _node(MI300X_FP8, families=("moe",), n=8, mem_eff=0.25),
        split=("dense",),
    )
    p, prov = resolve_params("amd-mi300x", "vllm", "bf16", catalog=CAT, profile=prof,
                             family="moe")  # fmt: skip
    assert (p.mem_eff, prov) == (0.65, "transferred from vllm on amd (amd-mi300x, 20 rows)")
    p, _ = resolve_params("amd-mi300x", "sglang", "fp8", catalog=CAT, profile=prof,
                          family="moe")  # fmt: skip
    assert p.mem_eff == 0.6
    p, _ = resolve_params("amd-mi300x", "vllm", "fp8", catalog=CAT, profile=prof,
                          family="dense")  # fmt: skip
    assert p.mem_eff == 0.65


@pytest.mark.parametrize(
    ("label", "tier"),
    [
        ("fit (vllm/amd-mi300x/fp8, 81 dense rows)", "fit"),
        ("transferred from vllm on nvidia-h100-sxm, all precisions (23 dense rows)", "same_gpu"),
        ("transferred from vllm on cdna3 GPUs (15 moe rows)", "same_arch"),
        ("transferred from vllm on amd (amd-mi300x, 81 dense rows)", "vendor_framework"),
        ("transferred from all frameworks on amd (amd-mi300x, 30 moe rows)", "vendor"),
        ("transferred from sglang on all GPUs (27 rows; no relative has dense rows)",
         "framework"),
        ("transferred from global fit over all frameworks (1651 dense rows)", "global"),
    ],
)  # fmt: skip
def test_family_labels_keep_their_error_band_tier(label, tier):
    assert provenance_tier(label) == tier


def test_resolve_falls_back_to_any_family_and_says_so():
    prof = _profile(_node(GLOBAL, families=("moe",), n=8, mem_eff=0.3),
                    _node(MI300X_FP8, families=("moe",), n=8, mem_eff=0.25))  # fmt: skip
    p, prov = resolve_params("amd-mi300x", "vllm", "fp8", catalog=CAT, profile=prof,
                             family="dense")  # fmt: skip
    assert p.mem_eff == 0.25
    assert prov == "fit (vllm/amd-mi300x/fp8, 8 rows; no relative has dense rows)"
    assert provenance_tier(prov) == "fit"


def test_profile_without_families_still_loads_and_resolves(tmp_path, rows, mixed_profile):
    """A format-2 profile (written before families: no ``family``/``families`` keys) loads,
    and every node serves every family, as it did."""
    path = tmp_path / "new.yaml"
    save_profile(mixed_profile, path)
    d = yaml.safe_load(path.read_text())
    d["planner_calibration_profile"] = 2
    del d["split_families"]
    d["nodes"] = [n for n in d["nodes"] if not n.pop("family")]
    for n in d["nodes"]:
        del n["families"]
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump(d, sort_keys=False))
    prof = load_profile(old)
    assert len(prof.nodes) == 7 and all(n.family == "" and n.families == () for n in prof.nodes)
    n = len(rows[0]) + len(rows[1])
    for family in ("dense", "moe", None):
        _, prov = resolve_params(H200, "pytorch", "bf16", catalog=CAT, profile=prof,
                                 family=family)  # fmt: skip
        assert prov == f"fit (pytorch/{H200}/bf16, {n} rows)"
    # the new format reads back unchanged
    assert load_profile(path).nodes == mixed_profile.nodes
