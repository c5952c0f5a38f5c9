"""The Plan page's "Deploy files (zip)" download: the same folders as ``planner recommend
--emit`` for the page's ranked options (issue 31)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_deploy_zip_holds_the_emit_folders_of_the_ranked_options():
    from app_pages.runs import _NO_CUSTOM, _recommend_dict, deploy_zip
    from planner.catalog import load_catalog
    from planner.scenario import load_scenario

    cat = load_catalog()
    sc = load_scenario(ROOT / "examples" / "chat-8b.yaml")
    text = json.dumps(sc.model_dump(mode="json", exclude_none=True))
    res = _recommend_dict(_NO_CUSTOM, text, "cost", 2)
    assert "error" not in res, res
    z = zipfile.ZipFile(io.BytesIO(deploy_zip(res, sc, cat)))
    names = z.namelist()
    tops = {n.split("/")[1] for n in names}
    # one folder per ranked option, named <rank>-<slug>, each with the four files
    assert len(tops) == len(res["recommendations"]) == 2
    for r in res["recommendations"]:
        (top,) = [t for t in tops if t.startswith(f"{r['rank']}-")]
        for f in ("serve.sh", "bench.sh", "expected.json", "README.md"):
            assert f"planner-deploy/{top}/{f}" in names
        exp = json.loads(z.read(f"planner-deploy/{top}/expected.json"))
        assert (exp["option"]["gpu"], exp["option"]["framework"]) == (r["gpu"], r["framework"])
        assert z.getinfo(f"planner-deploy/{top}/serve.sh").external_attr >> 16 == 0o755


def test_deploy_zip_says_why_when_nothing_can_be_written():
    from app_pages.runs import deploy_zip
    from planner.catalog import load_catalog
    from planner.scenario import load_scenario

    sc = load_scenario(ROOT / "examples" / "chat-8b.yaml")
    z = zipfile.ZipFile(io.BytesIO(deploy_zip({"recommendations": []}, sc, load_catalog())))
    assert z.namelist() == ["planner-deploy/NOT-WRITTEN.txt"]
    assert "no ranked option" in z.read("planner-deploy/NOT-WRITTEN.txt").decode()
