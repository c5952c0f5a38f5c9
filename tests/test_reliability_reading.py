"""Reading files safely: only regular files, bounded size, BOM/CRLF, strict YAML and JSON."""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path

import pytest

from planner import errors
from planner.benchmarks.io import load_measurements, read_rows
from planner.catalog import load_catalog, model_from_hf_config
from planner.catalog.profile import load_profile
from planner.cli.main import main
from planner.errors import PlannerError, UnknownIdError, read_text
from planner.files import load_json, load_yaml
from planner.scenario import load_scenario
from planner.workload.traffic import load_trace

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
BOM = b"\xef\xbb\xbf"


def _crlf_bom(text: str) -> bytes:
    return BOM + text.replace("\n", "\r\n").encode()


# ----------------------------------------------------------------- only regular files
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    t = time.monotonic()
    with pytest.raises(PlannerError, match=r"pipe.yaml: is a FIFO \(named pipe\), not a"):
        load_scenario(fifo)
    assert time.monotonic() - t < 2


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
@pytest.mark.parametrize(
    "reader",
    [load_scenario, read_rows, load_trace, model_from_hf_config, lambda p: load_measurements(p)],
)
def test_dev_zero_is_refused(reader):
    with pytest.raises(PlannerError, match="/dev/zero: is a character device"):
        reader("/dev/zero")


def test_socket_and_folder_are_named(tmp_path):
    with pytest.raises(PlannerError, match="is a folder"):
        read_text(tmp_path, "scenario file", "scenario file")
    path = tmp_path / "s.sock"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(path))
    except OSError:  # pragma: no cover - no unix sockets here
        pytest.skip("cannot bind a unix socket")
    try:
        with pytest.raises(PlannerError, match="is a socket"):
            read_text(path, "scenario file", "scenario file")
    finally:
        s.close()


def test_size_limit_names_itself(tmp_path):
    p = tmp_path / "big.yaml"
    p.write_text("a: 1\n" * 1000)
    with pytest.raises(PlannerError, match=r"big.yaml: larger than the 0 MB limit for a scenario"):
        read_text(p, "scenario file", limit=100)
    assert errors.DEFAULT_READ_LIMIT == 64 * errors.MB
    assert "1 MB limit for a catalog file" in errors._too_large(p, errors.MB, "catalog file")


def test_nul_byte_in_path_is_one_line():
    with pytest.raises(PlannerError, match="cannot read"):
        read_text("bad\x00name.yaml", "scenario file")


# ----------------------------------------------------------------- BOM and CRLF
def test_bom_crlf_predict_csv(tmp_path):
    src = (DATA / "benchmarks" / "pytorch_h200.csv").read_text().splitlines()[:4]
    p = tmp_path / "bom.csv"
    p.write_bytes(_crlf_bom("\n".join(src) + "\n"))
    rows, cols = read_rows(p)
    assert cols[0] == "id" and "metric" in cols and len(rows) == 3
    assert not any(k.endswith("\r") for k in cols) and not rows[0]["notes"].endswith("\r")


def test_bom_crlf_calibration_csv(tmp_path, catalog):
    src = (DATA / "benchmarks" / "pytorch_h200.csv").read_text().splitlines()[:4]
    p = tmp_path / "bom.csv"
    p.write_bytes(_crlf_bom("\n".join(src) + "\n"))
    df = load_measurements(p, catalog)
    assert len(df) == 3 and "id" in df.columns


def test_bom_crlf_trace_and_histogram(tmp_path):
    t = tmp_path / "trace.csv"
    t.write_bytes(_crlf_bom("timestamp,input_tokens,output_tokens\n0,100,50\n1,200,60\n"))
    tr = load_trace(str(t))
    assert len(tr.input_tokens) == 2
    h = tmp_path / "hist.csv"
    h.write_bytes(_crlf_bom("tokens,weight\n100,1\n200,2\n"))
    from planner.workload.lengths import _read_hist_csv

    tokens, weights = _read_hist_csv(str(h))
    assert list(tokens) == [100, 200]


def test_bom_crlf_scenario(tmp_path):
    text = (ROOT / "examples" / "chat-8b.yaml").read_text()
    p = tmp_path / "s.yaml"
    p.write_bytes(_crlf_bom(text))
    assert load_scenario(p).model == "llama-3.1-8b"


# ----------------------------------------------------------------- YAML
def test_duplicate_key_names_key_and_lines(tmp_path):
    with pytest.raises(PlannerError, match=r"x.yaml: duplicate key 'memory_gb' at lines 2 and 4"):
        load_yaml("a:\n  memory_gb: 80\n  b: 1\n  memory_gb: 8\n", "x.yaml")


def test_duplicate_key_in_catalog_and_scenario(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    hw = data / "hardware.yaml"
    text = hw.read_text()
    i = text.index("    memory_gb:")
    end = text.index("\n", i) + 1
    hw.write_text(text[:end] + "    memory_gb: 8\n" + text[end:])
    with pytest.raises(PlannerError, match=r"hardware.yaml: duplicate key 'memory_gb' at lines"):
        load_catalog(data)
    s = tmp_path / "s.yaml"
    s.write_text("model: llama-3.1-8b\nmodel: llama-3.1-70b\n")
    with pytest.raises(PlannerError, match=r"duplicate key 'model' at lines 1 and 2"):
        load_scenario(s)


def test_merge_keys_still_work():
    assert load_yaml("b: &b {x: 1}\nd:\n  <<: *b\n  x: 2\n", "m") == {"b": {"x": 1}, "d": {"x": 2}}


def _bomb(levels: int = 12) -> str:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, levels):
        prev, name = chr(96 + i), chr(97 + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_fast(tmp_path):
    p = tmp_path / "bomb.yaml"
    p.write_text(_bomb())
    t = time.monotonic()
    with pytest.raises(PlannerError, match="alias") as ei:
        load_scenario(p)
    assert time.monotonic() - t < 2
    assert len(str(ei.value)) < 300


def test_yaml_error_quotes_a_short_excerpt():
    with pytest.raises(PlannerError) as ei:
        load_yaml("a: [" + "x, " * 10000 + "\nb: }", "long.yaml")
    assert len(str(ei.value)) < 250 and "\n" not in str(ei.value)


def test_deep_yaml_and_json_are_one_line():
    with pytest.raises(PlannerError, match="deep"):
        load_json("[" * 100_000 + "]" * 100_000, "deep.json")
    with pytest.raises(PlannerError):
        load_yaml("[" * 100_000, "deep.yaml")
    with pytest.raises(PlannerError):
        load_yaml("a:\n" + "".join("  " * i + "- \n" for i in range(1, 400)), "deep.yaml")


def test_deep_config_json_via_cli(tmp_path, capsys):
    p = tmp_path / "config.json"
    p.write_text("[" * 100_000 + "]" * 100_000)
    rc = main(["memory", "--model", str(p), "--gpu", "nvidia-h100-sxm"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "deep" in err


def test_profile_with_duplicate_key(tmp_path):
    p = tmp_path / "p.yaml"
    text = (DATA / "calibration" / "profile.yaml").read_text()
    p.write_text(text + "method: again\n")
    with pytest.raises(PlannerError, match="duplicate key 'method'"):
        load_profile(p)


# ----------------------------------------------------------------- ids on the terminal
def test_control_characters_in_ids_are_escaped():
    err = UnknownIdError("model", "llama\x1b[2J\x07\n", ["llama-3.1-8b"])
    text = str(err)
    assert "\x1b" not in text and "\x07" not in text and "\n" not in text
    assert "\\x1b" in text


def test_cli_error_line_escapes_control_characters(capsys):
    rc = main(["memory", "--model", "evil\x1b[31m", "--gpu", "nvidia-h100-sxm"])
    err = capsys.readouterr().err
    assert rc == 2 and "\x1b" not in err and err.count("\n") == 1


def test_huge_id_does_not_hang():
    t = time.monotonic()
    err = UnknownIdError("model", "x" * 1_000_000, ["llama-3.1-8b"])
    assert time.monotonic() - t < 1 and len(str(err)) < 500


def test_unknown_kv_default_names_the_value(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    p = data / "precisions.yaml"
    text = p.read_text()
    i = text.index("kv_default:")
    end = text.index("\n", i)
    p.write_text(text[:i] + "kv_default: fp3-magic" + text[end:])
    with pytest.raises(PlannerError, match="kv_default 'fp3-magic' is not a kv precision"):
        load_catalog(data)
