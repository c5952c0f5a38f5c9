"""The engine-release level of the calibration (issue 31): which release node a prediction
uses, the band's widening with release distance, ``ENGINE@RELEASE`` on the command line and
``release:`` in scenario files."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from planner.calibration.release_fit import release_trend_check, release_widening, signed
from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.profile import Band, Profile, ProfileNode
from planner.catalog.release_profile import (
    engine_releases,
    release_distance,
    release_order,
    resolve_release_params,
    widen_band,
)
from planner.cli.main import main
from planner.errors import PlannerError
from planner.scenario import scenario_from_dict

CAT = load_catalog()
H100, H200, MI300X = "nvidia-h100-sxm", "nvidia-h200-sxm", "amd-mi300x"


def _node(gpu, release, mem_eff, rows=10, prec="fp8", fw="vllm", family=""):
    g = CAT.gpu(gpu)
    return ProfileNode(
        vendor=g.vendor, framework=fw, arch=g.arch, gpu=g.id, precision=prec, level=5,
        n_rows=rows, params=PRIOR.with_(mem_eff=mem_eff), release=release, family=family,
        families=("dense",),
    )  # fmt: skip


def _profile(*nodes, split=()):
    return Profile(
        created=dt.date(2026, 12, 6), data_hash="x", data_files=(), n_rows_fitted=0,
        method="test", nodes=(), release_nodes=nodes, split_families=split,
    )  # fmt: skip


# vLLM on Hopper at fp8: 0.6.3 and 0.11.0 on the H100, 0.9.2 on the H200; an MI300X node of
# 0.10.2 (another architecture: never a donor to Hopper, but a release of the engine)
PROF = _profile(
    _node(H100, "0.6.3", 0.50),
    _node(H200, "0.9.2", 0.60),
    _node(H100, "0.11.0", 0.70),
    _node(MI300X, "0.10.2", 0.40),
)


def test_release_order_and_distance_hand_derived():
    """vLLM releases with a node, oldest first: 0.6.3 < 0.9.2 < 0.10.2 < 0.11.0 (numbers
    compare as numbers: 10 > 9). 0.6.3 -> 0.11.0 is 3 steps; 0.17 and 0.17.0 are one release;
    a release without a node is counted in: 0.10.0 lies between 0.9.2 and 0.10.2."""
    assert engine_releases(PROF, "vllm") == ["0.6.3", "0.9.2", "0.10.2", "0.11.0"]
    assert release_distance(PROF, "vllm", "0.6.3", "0.11.0") == 3
    assert release_distance(PROF, "vllm", "0.17", "0.17.0") == 0
    # 0.6.3, 0.9.2, 0.10.0, 0.10.2, 0.11.0: 0.10.0 is 2 from 0.6.3, 1 from 0.9.2
    assert release_distance(PROF, "vllm", "0.10.0", "0.6.3") == 2
    assert release_distance(PROF, "vllm", "0.10.0", "0.9.2") == 1
    # rc before the release, post after it
    assert release_order("trtllm", "1.2.0rc5") < release_order("trtllm", "1.2.0")
    assert release_order("trtllm", "1.2.0") < release_order("trtllm", "1.2.0.post1")


def test_own_release_on_the_same_gpu_is_a_fit():
    p, prov, ch = resolve_release_params(H100, "vllm", "fp8", "0.11.0", catalog=CAT, profile=PROF)
    assert (ch.used, ch.distance, p.mem_eff) == ("0.11.0", 0, 0.70)
    assert prov == "fit (vllm@0.11.0/nvidia-h100-sxm/fp8, 10 rows)"
    assert not ch.older


def test_own_release_on_a_sibling_gpu_transfers():
    """0.9.2 has a node on the H200 only: the H100 takes it as its nearest Hopper sibling."""
    p, prov, ch = resolve_release_params(H100, "vllm", "fp8", "0.9.2", catalog=CAT, profile=PROF)
    assert (ch.used, ch.distance, p.mem_eff) == ("0.9.2", 0, 0.60)
    assert prov.startswith(
        "transferred from vllm@0.9.2/nvidia-h200-sxm/fp8, nearest hopper sibling"
    )


def test_unmeasured_release_borrows_the_nearest_release():
    """0.10.2 on the H100: Hopper nodes 0.6.3 (H100), 0.9.2 (H200), 0.11.0 (H100); among the
    releases 0.6.3 < 0.9.2 < 0.10.2 < 0.11.0 they are 2, 1 and 1 away. The tie between 0.9.2
    and 0.11.0 goes to the same GPU (sibling distance 0 < ln(4800/3350) = 0.36): 0.11.0, a
    newer build than the one requested, so not "older"."""
    p, prov, ch = resolve_release_params(H100, "vllm", "fp8", "0.10.2", catalog=CAT, profile=PROF)
    assert (ch.used, ch.distance, p.mem_eff) == ("0.11.0", 1, 0.70)
    assert not ch.older
    # 0.7.0 lies between 0.6.3 (1 away) and 0.9.2 (1 away); both distance 1, 0.6.3 is on the
    # H100 itself -> 0.6.3, an older build: the note says so
    _, _, ch = resolve_release_params(H100, "vllm", "fp8", "0.7.0", catalog=CAT, profile=PROF)
    assert (ch.used, ch.distance, ch.older) == ("0.6.3", 1, True)
    assert ch.note.startswith("predicted from vllm 0.6.3 rows; 0.7.0 requested")


def test_no_release_named_takes_the_newest_on_the_gpu_family():
    _, _, ch = resolve_release_params(H200, "vllm", "fp8", None, catalog=CAT, profile=PROF)
    assert (ch.used, ch.requested, ch.distance) == ("0.11.0", None, 0)
    assert ch.spec == "vllm@0.11.0"
    assert "newest release with a fit on hopper GPUs" in ch.note
    # MI300X: only its own architecture's nodes count
    _, _, ch = resolve_release_params(MI300X, "vllm", "fp8", None, catalog=CAT, profile=PROF)
    assert ch.used == "0.10.2"


def test_no_release_node_keeps_the_fit_over_every_release():
    """bf16 has no release node on Hopper: the choice says so and the parameters are the
    profile's ordinary resolution (here: no base nodes at all -> the prior)."""
    p, prov, ch = resolve_release_params(H100, "vllm", "bf16", "0.11.0", catalog=CAT, profile=PROF)
    assert ch.used is None and ch.node is None
    assert "no vllm release has a fit on hopper GPUs at bf16" in ch.note
    assert prov == "prior" and p == PRIOR


def test_split_family_uses_only_nodes_holding_it():
    """A dense prediction under a profile that splits dense skips release nodes fitted on MoE
    rows only, and takes a release's dense child over its node of every family."""
    moe_only = _node(H100, "0.11.0", 0.9).model_copy(update={"families": ("moe",)})
    mixed = _node(H100, "0.9.2", 0.5).model_copy(update={"families": ("dense", "moe")})
    child = _node(H100, "0.9.2", 0.55, family="dense")
    prof = _profile(moe_only, mixed, child, split=("dense",))
    _, _, ch = resolve_release_params(H100, "vllm", "fp8", None, catalog=CAT, profile=prof,
                                      family="dense")  # fmt: skip
    assert (ch.used, ch.node.params.mem_eff) == ("0.9.2", 0.55)
    _, _, ch = resolve_release_params(H100, "vllm", "fp8", None, catalog=CAT, profile=prof,
                                      family="moe")  # fmt: skip
    assert (ch.used, ch.node.params.mem_eff) == ("0.11.0", 0.9)


def test_moe_prediction_never_takes_a_release_node_of_dense_rows_alone():
    """A MoE prediction skips release nodes whose rows are dense models only, whether or not
    the profile splits dense (the rule that kept the dense side, made symmetric): in the
    leave-one-source-out run of 2026-12-06, DeepSeek-R1 on 8x MI300X with vLLM
    0.7.3.dev138 (dstack) could be predicted from a node of Llama rows alone. Hopper nodes at
    fp8: 0.11.0 of dense rows only (mem_eff 0.9), 0.9.2 of MoE rows (0.5). For 0.11.0 the
    MoE row takes 0.9.2, one release away and older, the dense row its own node; with no
    node holding MoE rows at all, the fit over every release (here the prior)."""
    dense_only = _node(H100, "0.11.0", 0.9)  # families ("dense",)
    moe = _node(H100, "0.9.2", 0.5).model_copy(update={"families": ("moe",)})
    for split in ((), ("dense",)):
        prof = _profile(dense_only, moe, split=split)
        _, _, ch = resolve_release_params(H100, "vllm", "fp8", "0.11.0", catalog=CAT,
                                          profile=prof, family="moe")  # fmt: skip
        assert (ch.used, ch.distance, ch.older, ch.node.params.mem_eff) == ("0.9.2", 1, True, 0.5)
        _, _, ch = resolve_release_params(H100, "vllm", "fp8", "0.11.0", catalog=CAT,
                                          profile=prof, family="dense")  # fmt: skip
        assert (ch.used, ch.distance, ch.node.params.mem_eff) == ("0.11.0", 0, 0.9)
    p, prov, ch = resolve_release_params(H100, "vllm", "fp8", "0.11.0", catalog=CAT,
                                         profile=_profile(dense_only), family="moe")  # fmt: skip
    assert ch.used is None and prov == "prior" and p == PRIOR
    # no family named (a caller that does not know the model): every node, as before
    _, _, ch = resolve_release_params(H100, "vllm", "fp8", "0.11.0", catalog=CAT,
                                      profile=_profile(dense_only, moe))  # fmt: skip
    assert ch.used == "0.11.0"


# --------------------------------------------------------------------------- band widening
BAND = Band(0.8, 1.25, "fit", 100, 5)


def test_widening_hand_derived():
    """step ln(1.1) per release, 2 releases: x1.21 on both sides: 0.8 / 1.21 = 0.6612,
    1.25 x 1.21 = 1.5125."""
    w = widen_band(BAND, 2, math.log(1.1))
    assert w.low_ratio == pytest.approx(0.8 / 1.21)
    assert w.high_ratio == pytest.approx(1.5125)
    assert "widened x1.21 for 2 releases" in w.note
    assert widen_band(BAND, 0, math.log(1.1)) == BAND


@given(
    d1=st.integers(0, 30), d2=st.integers(0, 30), step=st.floats(0.001, 1.0),
    lo=st.floats(0.1, 1.0), width=st.floats(1.0, 5.0),
)  # fmt: skip
def test_widening_is_monotone_in_release_distance(d1, d2, step, lo, width):
    band = Band(lo, lo * width, "fit", 50, 3)
    a, b = widen_band(band, min(d1, d2), step), widen_band(band, max(d1, d2), step)
    assert b.low_ratio <= a.low_ratio <= band.low_ratio
    assert b.high_ratio >= a.high_ratio >= band.high_ratio
    if d1 != d2:
        assert b.high_ratio / b.low_ratio > a.high_ratio / a.low_ratio


def _loso(rows):
    import pandas as pd

    return pd.DataFrame(
        [{"source": s, "framework": "vllm", "release": r, "release_used": u,
          "release_distance": d, "release_signed": sg, "measured": 100.0, "predicted": p,
          "metric_class": "throughput", "ape": abs(p / 100 - 1)}
         for s, r, u, d, sg, p in rows]
    )  # fmt: skip


def test_widening_step_from_held_out_releases_hand_derived():
    """Distance-0 rows miss by 10% (|log| = ln 1.1 = 0.0953): a0 = 0.0953. Group A, 1 release
    away, misses by 21% (ln 1.21 = 0.1906): (0.1906 - 0.0953) / 1 = 0.0953. Group B, 2 away,
    by 33.1% (ln 1.331 = 0.2859): (0.2859 - 0.0953) / 2 = 0.0953. Step = median = ln 1.1 ->
    ratio_p90 = 1.1."""
    d = _loso([("S0", "0.9", "0.9", 0, 0, 110.0), ("S0", "0.9", "0.9", 0, 0, 100 / 1.1),
               ("A", "0.8", "0.9", 1, -1, 121.0), ("B", "0.7", "0.9", 2, -2, 100 / 1.331)])  # fmt: skip
    b = release_widening(d)
    assert b.ratio_p90 == pytest.approx(1.1, abs=1e-4)
    assert (b.n_rows, b.n_sources) == (2, 2)


def test_trend_check_validates_only_a_real_trend():
    """Errors proportional to the signed distance (log err = -0.1 x signed): the
    leave-one-group-out slope is exactly -0.1 and removes them (trend MdAPE 0 < nearest);
    errors of random sign around a trend of 0 do not validate."""
    rows = [(f"S{i}", f"0.{i}", "0.9", abs(k), k, 100 * math.exp(-0.1 * k))
            for i, k in enumerate([1, 2, 3, -1, -2])]  # fmt: skip
    t = release_trend_check(_loso(rows))
    assert t["validates"] and t["trend_mdape_pct"] == 0.0 and t["groups"] == 5
    rows = [(f"S{i}", f"0.{i}", "0.9", 1, 1, 100 * math.exp(e))
            for i, e in enumerate([0.2, -0.2, 0.2, -0.2])]  # fmt: skip
    assert not release_trend_check(_loso(rows))["validates"]


def test_signed_distance():
    assert signed("vllm", "0.11.0", "0.6.3", 3) == 3  # predicted from an older build
    assert signed("vllm", "0.6.3", "0.11.0", 3) == -3
    assert signed("vllm", "0.6.3", "0.6.3", 0) == 0


# --------------------------------------------------------------------------- CLI and scenario
def test_unknown_release_is_a_one_line_error_listing_the_known_ones(capsys):
    code = main(["estimate", "--model", "llama-3.1-8b", "--gpu", H100, "--precision", "bf16",
                 "--framework", "vllm@0.99.0", "--batch", "1", "--input-len", "128",
                 "--output-len", "16"])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "\n" not in err
    assert "--framework vllm@0.99.0: no benchmark rows for vllm 0.99.0" in err
    assert "0.11.0" in err and "0.6.3.post2.dev308" in err  # releases with rows are listed


def test_a_published_release_without_rows_borrows_and_says_it_extrapolates(capsys):
    # data/engine_releases.yaml (pip index versions vllm, 2026-12-06) lists vLLM 0.34.0; no
    # benchmark row names it, so it is accepted, predicted from the nearest release with a fit
    # and flagged as newer than every release with a fit; 0.99.0 is listed nowhere: refused
    from planner.catalog.releases import published_releases

    assert any(r.release == "0.34.0" for r in published_releases()["vllm"])
    code = main(["estimate", "--model", "llama-3.1-8b", "--gpu", H100, "--precision", "bf16",
                 "--framework", "vllm@0.34.0", "--batch", "8", "--input-len", "1024",
                 "--output-len", "256", "--format", "json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["release_requested"] == "0.34.0"
    assert out["release"] != "vllm@0.34.0"  # predicted from another release's rows
    assert "newer than every vllm release with a fit" in out["release_note"]
    assert "an extrapolation" in out["release_note"]


def test_malformed_release_is_a_one_line_error(capsys):
    code = main(["memory", "--model", "llama-3.1-8b", "--gpu", H100, "--precision", "bf16",
                 "--framework", "vllm@latest"])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "release 'latest' is not a version" in err


def test_estimate_names_the_release(capsys):
    """The bundled profile has release nodes; ``vllm@0.11.0`` on the H100 at bf16 is fitted on
    its own rows (14 rows of vLLM 0.11.0 bf16 on the H100 in public_nvidia.csv)."""
    code = main(["estimate", "--model", "llama-3.1-8b", "--gpu", H100, "--precision", "bf16",
                 "--framework", "vllm@0.11.0", "--batch", "8", "--input-len", "1024",
                 "--output-len", "256", "--format", "json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["framework"] == "vllm" and out["release_requested"] == "0.11.0"
    assert out["release"].startswith("vllm@")
    assert out["params_provenance"].startswith(("fit (vllm@", "transferred from vllm@"))


def test_estimate_without_release_says_which(capsys):
    code = main(["estimate", "--model", "llama-3.1-8b", "--gpu", H100, "--precision", "bf16",
                 "--framework", "vllm", "--batch", "8", "--input-len", "1024",
                 "--output-len", "256"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0
    assert "planner: release: vllm " in err and "newest release with a fit" in err


with open(Path(__file__).parents[1] / "examples" / "chat-8b.yaml", encoding="utf-8") as _f:
    BASE = {k: v for k, v in yaml.safe_load(_f).items() if k != "deployment"}


def test_scenario_release_field_and_framework_at_release():
    sc = scenario_from_dict({**BASE, "deployment": {"gpu": H100, "framework": "vllm@0.11.0",
                                                    "precision": "bf16"}})  # fmt: skip
    assert (sc.deployment.framework, sc.deployment.release) == ("vllm", "0.11.0")
    sc2 = scenario_from_dict({**BASE, "deployment": {"gpu": H100, "framework": "vllm",
                                                     "release": "0.10.2", "precision": "bf16"}})  # fmt: skip
    assert sc2.resolve_deployment().release == "0.10.2"
    # the file's release goes with the file's framework only
    assert sc2.resolve_deployment(framework="sglang").release is None
    assert sc2.resolve_deployment(release="0.11.0").release == "0.11.0"


def test_scenario_bad_release_names_the_field():
    with pytest.raises(PlannerError, match="release") as e:
        scenario_from_dict({**BASE, "deployment": {"gpu": H100, "framework": "vllm",
                                                   "release": "newest", "precision": "bf16"}})  # fmt: skip
    assert "\n" not in str(e.value)
    assert "deployment" in str(e.value)


def test_release_section_is_put_between_the_kept_sections(tmp_path):
    """``validate --output`` writes the section by release with put_section: the other kept
    sections stay, the release section goes before the layout kinds (KEPT_SECTIONS order),
    and a second write replaces it."""
    from planner.calibration.release_report import release_section
    from planner.calibration.sections import LAYOUT_SECTION, RELEASE_SECTION, put_section

    rows = [("S0", "0.9", "0.9", 0, 0, 110.0), ("A", "0.8", "0.9", 1, -1, 121.0),
            ("B", "0.7", "0.9", 2, -2, 100 / 1.331)]  # fmt: skip
    loso = _loso(rows).assign(
        vendor="nvidia", log_err=lambda d: (d["predicted"] / 100).map(math.log)
    )
    block = release_section({"loso": loso})
    assert block.startswith(RELEASE_SECTION[0]) and block.endswith(RELEASE_SECTION[1] + "\n")
    assert "| own release |" in block and "| nearest release |" in block
    p = tmp_path / "accuracy.md"
    layout = f"{LAYOUT_SECTION[0]}\nlayouts\n{LAYOUT_SECTION[1]}\n"
    p.write_text("# report\n\n" + layout, encoding="utf-8")
    put_section(p, block, RELEASE_SECTION)
    put_section(p, block, RELEASE_SECTION)
    doc = p.read_text(encoding="utf-8")
    assert doc.count(RELEASE_SECTION[0]) == 1 and layout in doc
    assert doc.index(RELEASE_SECTION[0]) < doc.index(LAYOUT_SECTION[0])


def test_recommend_option_carries_its_release():
    """An option's release shows as ENGINE@RELEASE in its JSON record and label; without one
    the record says None and the label the framework alone."""
    from dataclasses import replace

    from planner.catalog.layout import layout_of
    from planner.recommend.options import Option

    opt = Option(CAT.gpu(H100), CAT.framework("vllm"), CAT.precision("bf16"), "bf16", layout_of(1))
    assert (opt.engine, opt.ids()["release"]) == ("vllm", None)
    rel = replace(opt, release="0.11.0")
    assert rel.engine == "vllm@0.11.0" and rel.ids()["release"] == "vllm@0.11.0"
    assert rel.ids()["framework"] == "vllm"
    assert rel.label().startswith("nvidia-h100-sxm vllm@0.11.0 bf16")
