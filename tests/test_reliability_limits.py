"""Nothing unbounded: request and row caps that name themselves, progress only on a terminal."""

from __future__ import annotations

import importlib
import io
from pathlib import Path

import pytest

from planner.cli.main import main
from planner.errors import PlannerError
from planner.files import Progress

calibration = importlib.import_module("planner.calibration.fit")
simulate = importlib.import_module("planner.serving.simulate")
ROOT = Path(__file__).resolve().parent.parent
SCENARIO = str(ROOT / "examples" / "chat-8b.yaml")


@pytest.mark.parametrize(
    "argv, match",
    [
        (["simulate", SCENARIO, "--requests", "1000000000"], "above the supported 3,000,000"),
        (["capacity", SCENARIO, "--requests", "100000000"], "above the supported 1,000,000"),
        (["simulate", SCENARIO, "--seed", "-1"], "--seed"),
        (["simulate", SCENARIO, "--rate", "1e308"], "--rate"),
        (["simulate", SCENARIO, "--offline", "--concurrency", "4"], "conflict"),
        (["simulate", SCENARIO, "--rate", "5", "--concurrency", "4"], "conflict"),
        (["simulate", SCENARIO, "--warmup", "1"], "--warmup"),
    ],
)
def test_unbounded_or_conflicting_flags_are_errors(argv, match, capsys):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and match in err and err.count("\n") == 1


def test_request_caps_are_in_the_library_too():
    with pytest.raises(PlannerError, match="above the supported"):
        simulate._check_request_count(simulate.MAX_SIM_REQUESTS + 1, simulate.MAX_SIM_REQUESTS, "x")


def test_calibrate_refuses_above_its_row_cap(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(calibration, "MAX_CALIBRATE_ROWS", 10)
    src = ROOT / "data" / "benchmarks" / "pytorch_h200.csv"
    rc = main(["calibrate", str(src), "-o", str(tmp_path / "p.yaml")])
    err = capsys.readouterr().err
    assert rc == 2 and "above the 10 that calibrate fits" in err
    assert not (tmp_path / "p.yaml").exists()


def test_scenario_rate_and_memory_bounds(tmp_path, capsys):
    s = tmp_path / "s.yaml"
    s.write_text(Path(SCENARIO).read_text().replace("peak_rps: 60", "peak_rps: 1e308"))
    rc = main(["capacity", str(s)])
    assert rc == 2 and "peak_rps" in capsys.readouterr().err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal():
    quiet = io.StringIO()
    with Progress("validate", total=3, stream=quiet) as bar:
        bar.update(1)
    assert quiet.getvalue() == ""
    tty = _Tty()
    with Progress("validate", total=4, stream=tty) as bar:
        bar.update(2, "source x")
    text = tty.getvalue()
    assert "validate: 2/4 (50%) source x" in text and text.endswith("\r")


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--peak-rps", "1e308"], "--peak-rps"),
        (["--peak-rps", "1e-9"], "--peak-rps"),
        (["--ttft-p99", "1e300"], "--ttft-p99"),
        (["--max-gpus", "1000000000"], "--max-gpus"),
        (["--tp", "1,2,1000000000"], "--tp"),
        (["--usd-per-gpu-hour", "h100=1e9"], "--usd-per-gpu-hour"),
        (["--fit-percentile", "250"], "--fit-percentile"),
        (["--seed", "-1"], "--seed"),
        (["--headroom", "1e300"], "--headroom"),
    ],
)
def test_recommend_flags_have_plausible_bounds(flags, match, capsys):
    rc = main(["recommend", SCENARIO, *flags])
    err = capsys.readouterr().err
    assert rc == 2 and match in err and err.count("\n") == 1


@pytest.mark.parametrize("cmd", ["recommend", "prices"])
def test_recommend_and_prices_errors_are_one_line(cmd, tmp_path, capsys):
    (tmp_path / "hardware.yaml").write_text("accelerators:\n  - id: a\n    id: b\n")
    argv = [cmd, SCENARIO] if cmd == "recommend" else [cmd]
    rc = main([*argv, "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("planner: error:") and err.count("\n") == 1
