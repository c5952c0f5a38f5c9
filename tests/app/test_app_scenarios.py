"""The app reads a scenario file exactly as ``planner recommend FILE`` does (issue 18).

Each example is uploaded to the Plan page (through the uploader's session_state slot,
``widgets.UPLOAD``: AppTest has no file uploader) and the page's top option, GPU count and
$/h are compared with the CLI's JSON for the same file: both come from ``planner``, so they
must agree exactly. Errors are the CLI's one-line messages.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

from app_pages import widgets as w  # noqa: E402
from planner import fmt  # noqa: E402
from planner.cli.main import main as cli_main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
EXAMPLES = ROOT / "examples"
TIMEOUT = 600  # a cold numba compile plus a search on a shared 2-core machine


def _cards(at: AppTest) -> dict[str, str]:
    """Label -> value of the page's number cards (``widgets.cards``, HTML)."""
    out: dict[str, str] = {}
    for h in at.get("html"):
        out.update(w.cards_of(h.value))
    return out


def _plan_with_upload(name: str, raw: bytes) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[w.UPLOAD] = (name, raw)
    return at.run()


def _cli_json(*argv: str) -> dict:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli_main(["recommend", *argv, "--format", "json"])
    assert rc == 0
    return json.loads(buf.getvalue())


def _cli_error(*argv: str) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["recommend", *argv])
    assert rc == 2
    return err.getvalue().strip()


def _tables(at: AppTest) -> list:
    """The page's result tables, read back from their HTML (``app_pages.tables``: one
    ``st.html`` element each): ``.shown`` the text of each cell, ``.values`` the raw values."""
    from app_pages.tables import WRAP_CLASS, parse_tables

    out = []
    for el in at.get("html"):
        if el.proto.body.startswith(f'<div class="{WRAP_CLASS}"'):
            out += parse_tables(el.proto.body)
    return out


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


SINGLE = sorted(
    p.name for p in EXAMPLES.glob("*.yaml") if "classes:" not in p.read_text(encoding="utf-8")
)


@pytest.mark.parametrize("name", SINGLE)
def test_an_uploaded_example_gives_the_cli_answer(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    path = EXAMPLES / name
    at = _plan_with_upload(name, path.read_bytes())
    _no_exception(at)
    assert not at.error, [e.value for e in at.error]
    ref = _cli_json(str(path))["recommendations"][0]
    ranked = _tables(at)[0]  # "Ranked options"
    top = ranked.values.iloc[0]  # rank 1
    assert top["rank"] == 1
    got = (top["GPU"], top["framework"], top["precision"], top["KV precision"], top["TP"])
    assert got == (ref["gpu"], ref["framework"], ref["precision"], ref["kv_precision"], ref["tp"])
    assert top["GPUs"] == ref["num_gpus"]
    assert top["fleet [$/h]"] == pytest.approx(ref["usd_per_hour"], rel=1e-12)
    assert ranked.shown.iloc[0]["fleet [$/h]"] == fmt.usd(ref["usd_per_hour"])
    # the page names the command that gives this answer (inline code, w.command_line)
    assert any(f"`planner recommend {name} " in m.value for m in at.markdown)


def test_rag_70b_on_b200_keeps_every_field_of_the_file(monkeypatch):
    """Issue 18: with serving:, kv_precisions, fit_percentile ... dropped, the app said
    2 x B200 at $21/h where the CLI says 3 x B200 at $32/h."""
    monkeypatch.chdir(ROOT)
    text = (EXAMPLES / "rag-70b.yaml").read_text(encoding="utf-8")
    text = text.replace("constraints:", "constraints:\n  gpus: [nvidia-b200]", 1)
    assert "gpus: [nvidia-b200]" in text
    at = _plan_with_upload("rag-b200.yaml", text.encode())
    _no_exception(at)
    ref = _cli_json(str(EXAMPLES / "rag-70b.yaml"), "--gpus", "b200")["recommendations"][0]
    top = _tables(at)[0].values.iloc[0]
    assert (top["GPU"], top["GPUs"]) == ("nvidia-b200", ref["num_gpus"])
    assert top["fleet [$/h]"] == pytest.approx(ref["usd_per_hour"], rel=1e-12)


def test_a_duplicate_key_upload_shows_the_cli_message(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = (EXAMPLES / "chat-8b.yaml").read_text(encoding="utf-8") + "\nmodel: llama-3.1-70b\n"
    p = tmp_path / "dup.yaml"
    p.write_text(text, encoding="utf-8")
    cli = _cli_error(str(p))  # "planner: error: /tmp/.../dup.yaml: duplicate key ..."
    assert "duplicate key" in cli
    at = _plan_with_upload("dup.yaml", text.encode())
    _no_exception(at)
    shown = [e.value for e in at.sidebar.error]
    assert any("duplicate key" in m and m.startswith("dup.yaml:") for m in shown), shown
    assert any(m.split(": ", 1)[1] in cli for m in shown)  # the same words after the file name
    # the file was not loaded: no "loaded dup.yaml" and the form keeps its defaults
    assert not any("dup.yaml" in c.value for c in at.sidebar.caption)
    assert at.number_input(key="peak_rps").value == w.SCENARIO_DEFAULTS["peak_rps"]


@pytest.mark.parametrize("raw", [bytes(range(256)) * 4, b"\x00\x01garbage", b"- just\n- a list\n"])
def test_binary_or_garbage_uploads_get_one_line_errors(raw, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    p = tmp_path / "bad.yaml"
    p.write_bytes(raw)
    cli = _cli_error(str(p))
    with pytest.raises(Exception) as e:
        w.read_uploaded_scenario("bad.yaml", raw)
    msg = str(e.value)
    assert msg.startswith("bad.yaml:") and "\n" not in msg
    assert msg.split(": ", 1)[1] in cli


def test_a_peak_of_zero_shows_an_error_and_no_result(monkeypatch):
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["peak_rps"] = "10"
    at.run()
    _no_exception(at)
    assert _tables(at)  # a result first
    at.number_input(key="peak_rps").set_value(0.0).run()
    _no_exception(at)
    side = [e.value for e in at.sidebar.error]
    assert any("Peak [req/s] must be" in m for m in side), side  # beside the widget
    assert any("Fix the scenario first" in e.value for e in at.main.error)
    assert not _tables(at) and not _cards(at)  # nothing that looks current
    at.number_input(key="peak_rps").set_value(1e9).run()
    assert any("Peak [req/s] must be" in e.value for e in at.sidebar.error)
    assert not _tables(at)


def test_mixed_70b_renders_both_pool_plans(monkeypatch):
    monkeypatch.chdir(ROOT)
    path = EXAMPLES / "mixed-70b.yaml"
    at = _plan_with_upload(path.name, path.read_bytes())
    _no_exception(at)
    ref = _cli_json(str(path))
    # the verdict names two prices: their `$` escaped, or Streamlit draws LaTeX between them
    assert "$" in ref["verdict"]
    assert at.subheader[0].value == ref["verdict"].replace("$", "\\$") if at.subheader else False
    per_class_t, shared_t = _tables(at)
    per_class, shared = per_class_t.shown, shared_t.shown
    assert list(per_class["class"]) == ["chat", "rag", "batch"] == list(shared["class"])
    for (_, row), (_, raw) in zip(per_class.iterrows(), per_class_t.values.iterrows(), strict=True):
        r = ref["per_class"][row["class"]]
        assert row["GPUs"] == f"{r['num_gpus']:,}" and raw["GPUs"] == r["num_gpus"]
        assert row["fleet [$/h]"] == fmt.usd(r["usd_per_hour"])
        assert raw["fleet [$/h]"] == pytest.approx(r["usd_per_hour"], rel=1e-12)
    m = _cards(at)
    assert len(m) == 4
    assert m["Shared pool: GPUs"] == f"{ref['shared']['recommendations'][0]['num_gpus']:,}"
    assert m["A pool per class: GPUs"] == f"{ref['per_class_total']['num_gpus']:,}"
    # each class's SLO and its attainment in the shared pool
    assert all(shared["SLO"].str.len() > 0) and "attainment [%]" in shared
