"""Every example of every ``--help`` runs when pasted from the repository root (issue 33).

The examples are read from the parser itself (``planner --help`` and each command's epilog:
the lines under ``example:`` / ``examples:`` that start with ``planner``, a line ending in
``\\`` joined with the next, a trailing ``# comment`` dropped) and run with bash, one test
each, in a scratch copy of the repository root: ``examples/``, ``data/`` and ``tests/`` linked,
an empty ``docs/``, so an example that writes a file (``-o``, ``> curve.csv``,
``validate --output docs/accuracy.md``) writes it there, not into the checkout. Nothing is
skipped: a command the test cannot run is a failure that names it.

The README's first lines and its scenario-file length syntax are checked too.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from planner.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
#: seconds one example may take
EXAMPLE_TIMEOUT_S = 1800
#: the examples that refit the whole public data set (`planner calibrate data/benchmarks/
#: public.csv ...`: ~70 s) or cross-validate it (`planner validate ...`: minutes each on the
#: 2-core test machine); they run where PLANNER_SLOW_EXAMPLES=1 (CI) and are otherwise skipped
#: with that reason in the summary (-rs), never silently
SLOW = ("planner validate", "planner calibrate data/benchmarks/public.csv")
RUN_SLOW = os.environ.get("PLANNER_SLOW_EXAMPLES") == "1"


def _epilogs() -> list[tuple[str, str]]:
    """``(command, epilog)`` of ``planner`` and of each of its commands."""
    parser = build_parser()
    out = [("planner", parser.epilog or "")]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            out += [(name, sp.epilog or "") for name, sp in action.choices.items()]
    return out


def examples_of(epilog: str) -> list[str]:
    """The command lines of an epilog's ``example(s):`` section (up to its first blank
    line), continuation lines joined and trailing comments dropped."""
    lines = epilog.splitlines()
    try:
        start = next(i for i, x in enumerate(lines) if x.strip() in ("example:", "examples:"))
    except StopIteration:
        return []
    cmds: list[str] = []
    cur = ""
    for raw in lines[start + 1 :]:
        if not raw.strip():
            break
        text = raw.strip()
        if cur:
            cur += " " + text
        elif text.startswith("planner"):
            cur = text
        else:
            continue  # prose inside the section
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip()
            continue
        cmds.append(re.sub(r"\s+#\s.*$", "", cur).strip())
        cur = ""
    return cmds


EXAMPLES = [(cmd, line) for cmd, ep in _epilogs() for line in examples_of(ep)]


def test_every_command_has_an_example():
    missing = [cmd for cmd, ep in _epilogs() if not examples_of(ep)]
    assert not missing, f"no example in the --help of: {missing}"


def test_the_extractor_joins_continuations_and_drops_comments():
    ep = "examples:\n  planner a \\\n      --b 1\n  planner c   # note\n\nprose"
    assert examples_of(ep) == ["planner a --b 1", "planner c"]


@pytest.fixture(scope="module")
def scratch_root(tmp_path_factory) -> Path:
    """A stand-in for the repository root: the inputs the examples read, linked; an empty
    docs/ (``validate --output docs/accuracy.md`` writes there)."""
    d = tmp_path_factory.mktemp("repo-root")
    for name in ("examples", "data", "tests"):
        (d / name).symlink_to(ROOT / name)
    (d / "docs").mkdir()
    return d


@pytest.mark.parametrize(("command", "line"), EXAMPLES, ids=[e[1][:70] for e in EXAMPLES])
def test_a_help_example_runs_when_pasted(command, line, scratch_root):
    if line.startswith(SLOW) and "--against" not in line and not RUN_SLOW:
        pytest.skip(f"slow example (minutes): set PLANNER_SLOW_EXAMPLES=1 to run `{line}`")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),  # this checkout's planner, as `pip install -e .` gives it
    }
    p = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line],
        cwd=scratch_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=EXAMPLE_TIMEOUT_S,
    )
    assert p.returncode == 0, f"`{line}` (planner {command} --help) failed:\n{p.stderr[-2000:]}"
    assert "error:" not in p.stderr, p.stderr[-2000:]


# --------------------------------------------------------------------------- README
def test_readme_first_lines_install_warm_up_and_leave_planner_on_the_path():
    first, second = (x.strip() for x in (ROOT / "README.md").read_text().splitlines()[:2])
    for line in (first, second):
        assert line.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e")
    # the kernel is compiled and the Plan page's answer kept before the server starts
    assert "python scripts/warm_up.py && streamlit run app.py" in first
    assert (ROOT / "scripts" / "warm_up.py").is_file()


def test_readme_scenario_length_syntax_is_what_scenario_files_accept():
    """README: a fixed length in a scenario file is ``{kind: fixed, tokens: 1500}``; a bare
    number is refused with a message that names the field."""
    from planner.errors import PlannerError
    from planner.scenario import scenario_from_dict

    text = (ROOT / "README.md").read_text()
    assert "`input_tokens: {kind: fixed, tokens:\n1500}`" in text
    base = {
        "model": "llama-3.1-8b",
        "workload": {"traffic": {"peak_rps": 1.0, "mean_rps": 1.0}},
        "slo": {"tpot": {"max_s": 0.1}},
    }
    ok = {**base, "workload": {**base["workload"], "input_tokens": {"kind": "fixed", "tokens": 1500},
                               "output_tokens": {"kind": "lognormal", "mean": 250, "p90": 500}}}  # fmt: skip
    sc = scenario_from_dict(ok)
    assert sc.workload.mean_input_tokens() == 1500
    bare = {**base, "workload": {**base["workload"], "input_tokens": 1500}}
    with pytest.raises(PlannerError, match="input_tokens"):
        scenario_from_dict(bare)
