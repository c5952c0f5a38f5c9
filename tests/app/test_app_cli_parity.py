"""The app and the CLI give the same numbers for every ``examples/`` scenario (issue 33).

Each example is loaded on the Plan page (through the uploader's session_state slot,
``widgets.UPLOAD``), then What-if and Memory are opened in the same session. Each page shows
the command that answers what it shows (``planner recommend FILE``, ``planner capacity FILE
--gpu ...``, ``planner memory ...``); the test runs that command through the CLI's ``main`` and
compares the page's numbers with the command's JSON, formatted as the page formats them. Both
come from ``planner``, so they must agree exactly.

Also here: the other App = CLI cases of issue 33 (Mean follows Peak, a scenario's
``latency_cost_cap``, a broken upload, shared links, the glossary's links).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

from app_pages import widgets as w  # noqa: E402
from planner import fmt  # noqa: E402
from planner.cli.main import main as cli_main  # noqa: E402
from planner.errors import PlannerError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
EXAMPLES = ROOT / "examples"
TIMEOUT = 600  # a cold numba compile plus a search on a shared 2-core machine
ALL = sorted(p.name for p in EXAMPLES.glob("*.yaml"))
SINGLE = [n for n in ALL if "classes:" not in (EXAMPLES / n).read_text(encoding="utf-8")]


def _cards(at: AppTest) -> dict[str, str]:
    out: dict[str, str] = {}
    for h in at.get("html"):
        out.update(w.cards_of(h.value))
        if h.proto.body.startswith('<div class="pl-chart">'):  # What-if's outputs (one block)
            out.update(w.cards_of(w.svg_of(h.proto.body)))
    return out


def _cli(argv: list[str]) -> dict:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli_main(argv)
    assert rc == 0, argv
    return json.loads(buf.getvalue())


def _commands(at: AppTest, prefix: str) -> list[list[str]]:
    """The page's command lines (inline code, ``widgets.command_line``) that start with
    ``prefix``, as argv lists for ``planner.cli.main``."""
    out = []
    for m in at.markdown:
        code = re.fullmatch(r"(`+) ?(planner [^`]+?) ?\1", m.value.strip())
        if code and code.group(2).startswith(prefix):
            out.append(shlex.split(code.group(2))[1:])
    return out


def _json(argv: list[str]) -> list[str]:
    argv = [a for a in argv if a not in ("--format", "json", "table")]
    return [*argv, "--format", "json"]


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _loaded(name: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[w.UPLOAD] = (name, (EXAMPLES / name).read_bytes())
    at.run()
    _no_exception(at)
    assert not at.main.error, [e.value for e in at.main.error]
    return at


@pytest.mark.parametrize("name", ALL)
def test_plan_what_if_and_memory_equal_the_cli_for_every_example(name, monkeypatch):
    monkeypatch.chdir(EXAMPLES)  # the pages name the file as uploaded: examples/NAME
    at = _loaded(name)
    data = yaml.safe_load((EXAMPLES / name).read_text(encoding="utf-8"))

    # ---- Plan: the page's `planner recommend NAME ...`
    (argv,) = _commands(at, "planner recommend")
    assert argv[1] == name  # the file itself, unchanged by the form
    ref = _cli(_json(argv))
    cards = _cards(at)
    if "classes" in data:
        tot = ref["per_class_total"]
        assert cards["A pool per class: GPUs"] == fmt.count(tot["num_gpus"])
        assert cards["A pool per class: fleet [$/h]"] == fmt.usd(tot["usd_per_hour"])
        best = ref["shared"]["recommendations"][0]
        assert cards["Shared pool: GPUs"] == fmt.count(best["num_gpus"])
        assert at.subheader[0].value == w.md(ref["verdict"])
        return  # What-if takes one workload (the page says so)
    win = ref["recommendations"][0]
    assert cards["GPUs"] == fmt.count(win["num_gpus"])
    assert cards["$/M output tokens"] == fmt.usd(win["usd_per_mtok_output"])
    assert cards["Fleet [$/month]"] == fmt.usd(win["usd_per_month"])

    # ---- What-if: its knobs start at the file's deployment, as `planner capacity NAME` does
    at.switch_page("app_pages/what_if.py").run()
    _no_exception(at)
    dep = data["deployment"]
    assert at.selectbox(key="wi_gpu").value == dep["gpu"]
    assert at.selectbox(key="wi_fw").value == dep["framework"]
    assert at.selectbox(key="wi_prec").value == dep["precision"]
    assert at.select_slider(key="wi_tp").value == dep["tp"]
    (cap_argv,) = _commands(at, "planner capacity")
    (mem_argv,) = _commands(at, "planner memory")
    cap = _cli(_json(cap_argv))
    mem = _cli(_json(mem_argv))
    cards = _cards(at)
    assert cards["Sequences that fit"] == f"{mem['max_concurrent_sequences']:,.0f}"
    # the deployment's answer (issue 32): the command's fleet, tokens/s and latencies
    assert cards["Output tok/s per GPU"] == f"{cap['output_tok_s_per_gpu']:,.0f}"
    assert cards["GPUs needed"] == f"{cap['num_gpus']:,.0f}"
    assert cards["TTFT P99 [ms]"] == f"{cap['ttft_p99_at_planned_s'] * 1e3:,.0f}"
    assert cards["TPOT P99 [ms]"] == f"{cap['tpot_p99_at_planned_s'] * 1e3:,.1f}"

    # ---- Memory: the scenario's model and deployment, and the page's `planner memory ...`
    at.switch_page("app_pages/memory.py")
    at.query_params.update(
        model=data["model"], gpu=dep["gpu"], precision=dep["precision"], tp=str(dep["tp"])
    )
    at.run()
    _no_exception(at)
    (mem_argv,) = _commands(at, "planner memory")
    mem = _cli(_json(mem_argv))
    cards = _cards(at)
    assert cards["Max concurrent sequences"] == f"{mem['max_concurrent_sequences']:,}"
    assert cards["Weights per GPU"] == f"{mem['weight_bytes_per_gpu'] / 1e9:.1f} GB"
    assert cards["KV cache per token"] == f"{mem['kv_cache_bytes_per_token'] / 1e3:,.1f} kB"


def test_memory_default_is_the_readme_question_as_planner_memory_answers_it():
    """README: `planner memory --model llama-3.1-70b --gpu nvidia-h100-sxm --precision fp8 --tp 2
    --context 8192` says 29 sequences (issue 33: the page said 61 with vLLM's defaults)."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page("app_pages/memory.py").run()
    _no_exception(at)
    (argv,) = _commands(at, "planner memory")
    assert argv == shlex.split(
        "memory --model llama-3.1-70b --gpu nvidia-h100-sxm --precision fp8 --tp 2 --context 8192"
    )
    assert (
        _cards(at)["Max concurrent sequences"]
        == "29"
        == str(_cli(_json(argv))["max_concurrent_sequences"])
    )


# --------------------------------------------------------------------------- Mean follows Peak
def test_mean_follows_peak_until_set_as_the_cli_plans_a_flat_day():
    """Issue 33: Peak 50 left Mean at 4 ($4.46/M against the CLI's $0.357/M). The app's Mean
    follows Peak, as `planner recommend --peak-rps 50` (no --mean-rps) sets mean = peak."""
    small = {"gpus": ["nvidia-h100-sxm", "nvidia-l40s"], "frameworks": ["vllm"]}
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in small.items():
        at.session_state[k] = v
    at.query_params["model"] = "llama-3.1-8b"
    at.run()
    at.number_input(key="peak_rps").set_value(50.0).run()
    _no_exception(at)
    assert at.number_input(key="mean_rps").value == 50.0
    ref = _cli(
        ["recommend", "--model", "llama-3.1-8b", "--preset", "chat", "--peak-rps", "50",
         "--ttft-p99", "1", "--tpot-p99", "0.05", "--attainment", "0.99", "--headroom", "0.2",
         "--gpus", "nvidia-h100-sxm,nvidia-l40s", "--frameworks", "vllm", "--format", "json"]
    )  # fmt: skip
    win = ref["recommendations"][0]
    assert _cards(at)["$/M output tokens"] == fmt.usd(win["usd_per_mtok_output"])
    # once set, Mean stays where the user put it
    at.number_input(key="mean_rps").set_value(5.0).run()
    at.number_input(key="peak_rps").set_value(40.0).run()
    _no_exception(at)
    assert at.number_input(key="mean_rps").value == 5.0


# --------------------------------------------------------------------------- latency_cost_cap
def test_a_scenarios_latency_cost_cap_reaches_the_search(monkeypatch):
    """Issue 33: the app passed 2.0 whatever the file said; now the file's constraints go to
    recommend whole, as the CLI passes them."""
    import planner.recommend as rec_pkg

    seen = []
    real = rec_pkg.recommend

    def spy(*a, **kw):
        seen.append(kw.get("constraints"))
        return real(*a, **kw)

    monkeypatch.setattr(rec_pkg, "recommend", spy)
    monkeypatch.chdir(EXAMPLES)
    text = (EXAMPLES / "chat-8b.yaml").read_text(encoding="utf-8")
    text = text.replace("constraints:", "constraints:\n  latency_cost_cap: 1.37", 1)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[w.UPLOAD] = ("cap.yaml", text.encode())
    at.run()
    _no_exception(at)
    assert seen and seen[-1].latency_cost_cap == 1.37
    notes = " ".join(c.value for c in at.sidebar.caption)
    assert "latency_cost_cap" in notes  # named among the file's fields the form does not show


# --------------------------------------------------------------------------- broken upload
def test_a_broken_upload_replaces_the_answer_with_its_error():
    """Issue 33: the error showed only in the sidebar and the old recommendation stayed."""
    at = _loaded("chat-8b.yaml")
    assert any(s.value.startswith("Recommended") for s in at.subheader)
    at.session_state[w.UPLOAD] = ("broken.yaml", b"model: llama-3.1-8b\nworkload: [1, 2\n")
    at.run()
    _no_exception(at)
    main = [e.value for e in at.main.error]
    assert any("broken.yaml" in m for m in main), main  # where the answer would be
    assert not any(s.value.startswith("Recommended") for s in at.subheader)  # no stale answer
    assert not _cards(at)


# --------------------------------------------------------------------------- shared links
def test_a_shared_link_carries_the_uploaded_scenario():
    at = _loaded("mixed-70b.yaml")
    blob = at.query_params[w.SHARED_FILE]
    assert at.query_params[w.SHARED_NAME] == "mixed-70b.yaml"
    assert (
        w.decode_scenario(blob)
        == json.dumps(
            yaml.safe_load((EXAMPLES / "mixed-70b.yaml").read_text(encoding="utf-8"))
        ).encode()
    )
    # a new session opened on the link shows the same plan
    other = AppTest.from_file(APP, default_timeout=TIMEOUT)
    other.query_params[w.SHARED_FILE] = blob
    other.query_params[w.SHARED_NAME] = "mixed-70b.yaml"
    other.run()
    _no_exception(other)
    assert other.subheader[0].value == at.subheader[0].value
    assert _cards(other) == _cards(at)


def test_a_damaged_shared_link_is_a_one_line_error_in_the_main_area():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params[w.SHARED_FILE] = "not-base64!!"
    at.run()
    _no_exception(at)
    assert any(w.SHARED_FILE in e.value for e in at.main.error)
    bomb = w.encode_scenario("a: " + "x" * (w.SHARED_MAX_BYTES * 4))  # expands past the limit
    with pytest.raises(PlannerError, match="expands past"):
        w.decode_scenario(bomb)


# --------------------------------------------------------------------------- glossary
def test_every_glossary_link_in_the_pages_names_a_defined_term():
    """Every ``term_link`` / ``LINKED`` term of the pages is in the glossary, and the terms
    issue 33 names are defined."""
    terms = {t for t, _ in w.GLOSSARY}
    anchors = {w.term_anchor(t) for t in terms}
    assert len(anchors) == len(terms)  # one anchor per term
    for t in ("attainment", "headroom", "binding constraint", "knee", "robustness",
              "provenance", "goodput", "TTFT", "TPOT", "E2E", "ITL", "tie-break"):  # fmt: skip
        assert t in terms, t
    used = set()
    for p in (ROOT / "app_pages").glob("*.py"):
        used |= set(re.findall(r"term_link\(\s*['\"]([^'\"]+)['\"]", p.read_text()))
    src = (ROOT / "app_pages" / "what_if.py").read_text()  # a page script: read, not imported
    used |= set(ast.literal_eval(re.search(r"^LINKED = (\(.*?\))$", src, re.M | re.S).group(1)))
    assert {"binding constraint", "robustness", "knee", "Pareto front", "tie-break"} <= used
    assert used <= terms, used - terms
    # the Definitions page has a heading per term (Streamlit makes its anchor from the text)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page("app_pages/definitions.py").run()
    _no_exception(at)
    text = " ".join(m.value for m in at.markdown)
    for t in terms:
        assert f"##### {w.md(t)}\n" in text, t


# --------------------------------------------------------------------------- tie-break
def _opt(rank: int, usd_h: float, mtok: float, e2e: float, gpus: int, prec: str) -> dict:
    return {"rank": rank, "gpu": "nvidia-h100-sxm", "framework": "vllm", "precision": prec,
            "kv_precision": "fp8", "tp": 1, "pp": 1, "usd_per_hour": usd_h,
            "usd_per_mtok_output": mtok, "e2e_p99_s": e2e, "num_gpus": gpus}  # fmt: skip


def test_the_tie_break_is_said_when_the_winner_is_off_its_own_front():
    """Issue 33: #1 drawn dominated in its cost / latency chart, without a word. Objective
    cost: #2 costs the same $/h (one TIE_REL bucket) and is faster, but a tie goes to the
    fewer GPUs, so #1 (2 GPUs) ranks above #2 (4 GPUs)."""
    from planner import load_catalog

    win = _opt(1, 10.0, 1.0, 5.0, 2, "fp8")
    faster = _opt(2, 10.0, 1.0, 3.0, 4, "fp4")
    note = w.dominated_note([win, faster], "cost", "fleet $/h")
    assert note.startswith("Why #1 is not on the front: #2 ")
    assert "they tie ($10.00/h and $10.00/h, within 1%)" in note
    assert "here the fewer GPUs (#1: 2, #2: 4)" in note
    assert "Latency does not break a tie" in note
    # equal GPUs: more bits per weight decides (data/precisions.yaml: fp8 8 bits, fp4 4.25:
    # 4-bit values plus their block scales)
    same = _opt(2, 10.0, 1.0, 3.0, 2, "fp4")
    note = w.dominated_note([win, same], "cost", "fleet $/h", load_catalog())
    assert "here more bits per weight (#1: 8, #2: 4.25)" in note
    # equal bits too: the nearer evidence decides (a fit before a transfer)
    win["provenance"] = "fit (vllm/nvidia-h100-sxm/fp8, 40 rows)"
    twin = {**_opt(2, 10.0, 1.0, 3.0, 2, "fp8"), "provenance": "prior"}
    note = w.dominated_note([win, twin], "cost", "fleet $/h", load_catalog())
    assert "here the nearer evidence" in note and "#2 prior" in note
    # on the front (nothing both cheaper-or-equal and faster-or-equal): no note
    assert w.dominated_note([win, _opt(2, 12.0, 1.2, 3.0, 4, "fp4")], "cost", "x") is None
    # another objective ranks by itself, not by the chart's axes
    assert "not by this chart's axes" in w.dominated_note([win, faster], "energy", "J/token")


# --------------------------------------------------------------------------- hostile uploads
HOSTILE = """\
model: llama-3.1-8b
workload:
  preset: chat
  traffic: {peak_rps: 2, mean_rps: 1}
  output_tokens: {kind: lognormal, median: 100, sigma: 5, max_tokens: 500}
slo:
  tpot: {max_s: 0.1, percentile: p99}
  attainment: 0.3
constraints:
  gpus: [nvidia-h100-sxm]
  frameworks: [vllm]
  headroom: 1.5
"""


def test_an_upload_with_values_beyond_the_forms_ranges_gives_the_cli_answer(tmp_path, monkeypatch):
    """Issue 33: limits beyond a widget's range (headroom 1.5 > 1, attainment 0.3 < 0.5)
    crashed the Plan page; the CLI accepts the file. The form now shows each clamped, with a
    note, and the file's own values are used. (max_total_gpus beyond the flag's limit,
    100,000, is now refused by the CLI and the app alike: tests/test_reliability_hostile2.py.)"""
    p = tmp_path / "hostile.yaml"
    p.write_text(HOSTILE, encoding="utf-8")
    ref = _cli(["recommend", str(p), "--format", "json"])["recommendations"][0]
    monkeypatch.chdir(tmp_path)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[w.UPLOAD] = ("hostile.yaml", HOSTILE.encode())
    at.run()
    _no_exception(at)
    assert not at.main.error, [e.value for e in at.main.error]
    notes = " ".join(c.value for c in at.sidebar.caption)
    for field in ("headroom = 1.5", "attainment = 0.3"):
        assert field in notes, field
    cards = _cards(at)
    assert cards["GPUs"] == fmt.count(ref["num_gpus"])
    assert cards["$/M output tokens"] == fmt.usd(ref["usd_per_mtok_output"])
    (argv,) = _commands(at, "planner recommend")
    assert argv[1] == "hostile.yaml"  # the file unchanged: its own values, not the clamped ones


# --------------------------------------------------------------------------- compile note
def test_kernel_cached_looks_for_numbas_index_of_the_event_loop(tmp_path, monkeypatch):
    """The Plan page says it compiles (runs.COMPILE_NOTE) when neither the package's
    __pycache__ nor NUMBA_CACHE_DIR holds the index of planner/serving/_kernel.py's _loop."""
    import planner.serving
    from app_pages import runs

    pkg = tmp_path / "serving"
    (pkg / "__pycache__").mkdir(parents=True)
    monkeypatch.setattr(planner.serving, "__file__", str(pkg / "__init__.py"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    assert not runs.kernel_cached()  # a fresh install
    d = tmp_path / "numba" / "serving_0123"
    d.mkdir(parents=True)
    (d / "_kernel._loop-139.py311.nbi").write_bytes(b"")
    assert runs.kernel_cached()  # compiled into NUMBA_CACHE_DIR
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert not runs.kernel_cached()
    (pkg / "__pycache__" / "_kernel._loop-139.py311.nbi").write_bytes(b"")
    assert runs.kernel_cached()  # compiled next to the package
    assert "scripts/warm_up.py" in runs.COMPILE_NOTE


def test_plan_growth_chart_equals_planner_grow(tmp_path, monkeypatch):
    """Issue 33 (growth "in the app as a chart"): Plan's growth section gives, month by month,
    the cards of ``planner grow`` for the same scenario, growth and lead time."""
    src = (EXAMPLES / "chat-8b.yaml").read_text(encoding="utf-8")
    ref = _cli(["grow", str(EXAMPLES / "chat-8b.yaml"), "--growth-per-month", "0.1",
                "--months", "6", "--lead-time-months", "0", "--format", "json"])  # fmt: skip
    monkeypatch.chdir(tmp_path)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[w.UPLOAD] = ("chat-8b.yaml", src.encode())
    at.session_state["grow_open"] = True
    at.session_state["grow_pct"] = 10.0
    at.session_state["grow_months"] = 6
    at.session_state["grow_lead"] = 0
    at.run()
    _no_exception(at)
    frames = [d.value for d in at.dataframe if "num_gpus" in d.value.columns]
    assert frames, "the growth table is shown"
    got = [int(x) for x in frames[-1]["num_gpus"]]
    assert got == [m["num_gpus"] for m in ref["months"]]
    assert got == sorted(got)  # traffic grows: cards never fall
