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


# ---------------------------------------------------------------- predict copies input cells
def test_predict_output_copies_input_cells_exactly(tmp_path):
    """``predict`` writes each input row's cells as the file had them (no re-quoting, the fast
    path) and quotes only the cells it adds: parsed back, every cell equals what
    ``csv.writer`` would write for the same rows, whatever the quoting, a cell spanning
    lines, a short row or a row with surplus cells."""
    import csv
    import io

    from planner.benchmarks.io import ROW_TEXT, iter_rows, write_rows
    from planner.benchmarks.predict import Predictor

    src = (ROOT / "data" / "benchmarks" / "pytorch_h200.csv").read_text().splitlines()
    tricky = [
        src[1].replace("planner own measurement (bench/pytorch_ref.py)", '"planner, own ""m"""', 1),
        src[2].replace("planner own measurement", '"line one\nline two"', 1),
        ",".join(src[3].split(",")[:22]),  # short: stops after the metric column
        src[4] + ",surplus,cells",
        "",  # a blank line is skipped
        src[5],
    ]
    p = tmp_path / "rows.csv"
    p.write_text("\n".join([src[0], *tricky]) + "\n")
    pred = Predictor()

    def written(keep_text: bool) -> list[list[str]]:
        cols, _, rows = iter_rows(p, keep_text=keep_text)
        columns = [*cols, "predicted", "provenance", "reason"]
        rows = [pred.predict_row(r, copy=False) for r in rows]
        assert sum(ROW_TEXT in r for r in rows) == (4 if keep_text else 0)  # not the surplus row
        buf = io.StringIO()
        write_rows(rows, columns, buf)
        return list(csv.reader(io.StringIO(buf.getvalue())))

    fast, plain = written(True), written(False)
    assert fast == plain and len(fast) == 6
    assert fast[1][1] == 'planner, own "m"' and fast[2][1].startswith("line one\nline two")
    assert fast[1][-3] and fast[1][-2].startswith("fit (")  # predicted, with its provenance
