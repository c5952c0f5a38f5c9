"""Writers never lose data: atomic replace, no output over an input, no empty report."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from planner import files
from planner.cli.main import main
from planner.errors import PlannerError
from planner.files import atomic_write_text

ROOT = Path(__file__).resolve().parent.parent
OWN = ROOT / "data" / "benchmarks" / "pytorch_h200.csv"
OLD = "old,content\n1,2\n"


@pytest.fixture()
def small_csv(tmp_path) -> Path:
    lines = OWN.read_text().splitlines()
    p = tmp_path / "runs.csv"
    p.write_text("\n".join(lines[:41]) + "\n")  # 40 step rows: quick to fit
    return p


def _disk_full(monkeypatch):
    def full(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fsync", full)


# (argv builder, output option) of every writer the CLI has
WRITERS = {
    "predict -o": lambda inp, out: ["predict", str(inp), "-o", str(out)],
    "calibrate -o": lambda inp, out: ["calibrate", str(inp), "-o", str(out)],
    "validate --output": lambda inp, out: [
        "validate", "--public", "--own", str(inp), "--no-serving", "--output", str(out),
    ],
    "validate --details": lambda inp, out: [
        "validate", "--public", "--own", str(inp), "--no-serving", "--details", str(out),
    ],
}  # fmt: skip


@pytest.mark.parametrize("writer", list(WRITERS))
def test_disk_full_keeps_the_old_file(writer, small_csv, tmp_path, monkeypatch, capsys):
    out = tmp_path / "existing.out"
    out.write_text(OLD)
    _disk_full(monkeypatch)
    rc = main(WRITERS[writer](small_csv, out))
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"cannot write {out}" in err and "No space left on device" in err
    assert err.count("\n") == 1
    assert out.read_text() == OLD
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("writer", list(WRITERS))
def test_output_that_is_an_input_is_refused(writer, small_csv, capsys):
    before = small_csv.read_bytes()
    rc = main(WRITERS[writer](small_csv, small_csv))
    err = capsys.readouterr().err
    assert rc == 2 and "it is one of the input files" in err
    assert small_csv.read_bytes() == before


def test_output_through_another_path_to_the_input_is_refused(small_csv, capsys):
    link = small_csv.parent / "link.csv"
    link.symlink_to(small_csv)
    before = small_csv.read_bytes()
    rc = main(["predict", str(small_csv), "-o", str(link)])
    assert rc == 2 and "one of the input files" in capsys.readouterr().err
    rc = main(["calibrate", str(small_csv), "-o", str(small_csv.parent / "." / "runs.csv")])
    assert rc == 2
    assert small_csv.read_bytes() == before


@pytest.mark.parametrize("writer", ["predict -o", "calibrate -o", "validate --output"])
def test_writers_succeed_and_replace(writer, small_csv, tmp_path, capsys):
    out = tmp_path / "existing.out"
    out.write_text(OLD)
    rc = main(WRITERS[writer](small_csv, out))
    assert rc == 0, capsys.readouterr().err
    assert out.read_text() != OLD and out.stat().st_size > 0


def test_validate_with_nothing_selected_keeps_the_report(tmp_path, capsys):
    report = tmp_path / "accuracy.md"
    report.write_text("# the real report\n")
    rc = main(["validate", "--public", "--own", "--output", str(report)])
    err = capsys.readouterr().err
    assert rc == 2 and "nothing to validate" in err
    assert report.read_text() == "# the real report\n"


def test_empty_result_never_replaces_a_file(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text(OLD)
    with pytest.raises(PlannerError, match="refusing to replace .* with an empty"):
        atomic_write_text(p, "", what="predictions")
    assert p.read_text() == OLD
    atomic_write_text(tmp_path / "new.csv", "")  # an empty new file is fine


def test_atomic_write_failures_name_the_path(tmp_path, monkeypatch):
    p = tmp_path / "x.csv"
    p.write_text(OLD)

    def boom(*a, **k):
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(files.tempfile, "mkstemp", boom)
    with pytest.raises(PlannerError, match=r"cannot write .*x.csv: File too large"):
        atomic_write_text(p, "new\n")
    assert p.read_text() == OLD


def test_atomic_write_to_a_folder_or_missing_dir(tmp_path):
    with pytest.raises(PlannerError, match="not a regular file"):
        atomic_write_text(tmp_path, "x")
    atomic_write_text(tmp_path / "sub" / "dir" / "f.txt", "x\n")
    assert (tmp_path / "sub" / "dir" / "f.txt").read_text() == "x\n"


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_real_file_size_limit_keeps_the_old_file(small_csv, tmp_path):
    """A real EFBIG (ulimit -f), not a monkeypatch: the old file survives, the path is named."""
    out = tmp_path / "predicted.csv"
    out.write_text(OLD)
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048)); "
        "from planner.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, "predict", str(small_csv), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "cannot write" in r.stderr and "predicted.csv" in r.stderr
    assert out.read_text() == OLD


def test_validate_holdout_matching_nothing_lists_the_sources(capsys):
    rc = main(["validate", "--own", "--no-serving", "--holdout", "no-such-source-xyz"])
    err = capsys.readouterr().err
    assert rc == 2 and "matches no source" in err and "MLPerf Inference v5.1" in err


def test_validate_holdout_predicts_only_that_source(tmp_path, capsys):
    details = tmp_path / "d.csv"
    rc = main(
        ["validate", "--own", "--holdout", "mlperf inference v5.1", "--details", str(details)]
    )
    assert rc == 0, capsys.readouterr().err
    import pandas as pd

    d = pd.read_csv(details)
    # --holdout holds out the sources whose name contains the text: both MLPerf v5.1 sources
    # (Llama-2-70B and DeepSeek-R1), and no other
    assert len(d) > 0 and "MLPerf Inference v5.1" in set(d["source"])
    assert all("mlperf inference v5.1" in s.lower() for s in set(d["source"]))
