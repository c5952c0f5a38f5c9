"""Every import inside a ``try`` is real: an ``except ImportError`` must never hide a typo.

A misspelled module under ``try: ... except ImportError: pass`` turns a feature off without a
word (``predict --calibration`` once ignored every broken profile this way). The scan reads
planner/, app.py and app_pages/ and imports each such module and name.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "planner").rglob("*.py")) + [ROOT / "app.py"]
FILES += sorted((ROOT / "app_pages").rglob("*.py"))


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


def _imports_in_try(path: Path, mod: str = "") -> list[tuple[int, str, tuple[str, ...]]]:
    """(line, absolute module, imported names) of each import inside a ``try`` body of the
    file ``path`` (module name ``mod``, by default from the path)."""
    mod = mod or _module_name(path)
    base = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Try):
            continue
        for stmt in node.body:
            for n in ast.walk(stmt):
                if isinstance(n, ast.Import):
                    found += [(n.lineno, a.name, ()) for a in n.names]
                elif isinstance(n, ast.ImportFrom):
                    target = n.module or ""
                    if n.level:
                        parts = base.split(".")
                        parts = parts[: len(parts) - (n.level - 1)]
                        target = ".".join(parts + ([n.module] if n.module else []))
                    found.append((n.lineno, target, tuple(a.name for a in n.names)))
    return found


CASES = [(p, *imp) for p in FILES for imp in _imports_in_try(p)]


@pytest.mark.parametrize(
    "path,line,module,names",
    CASES,
    ids=[f"{p.relative_to(ROOT)}:{line}" for p, line, *_ in CASES],
)
def test_every_import_inside_a_try_resolves(path, line, module, names):
    mod = importlib.import_module(module)  # ImportError here: the try hides a broken import
    for name in names:
        if not hasattr(mod, name):
            importlib.import_module(f"{module}.{name}")


def test_the_scan_finds_a_broken_import(tmp_path):
    # the scanner itself must see a relative import inside a try (the old predict.py bug)
    p = tmp_path / "predict.py"
    p.write_text("try:\n    from .calibration import load_profile\nexcept ImportError:\n    pass\n")
    (found,) = _imports_in_try(p, "planner.benchmarks.predict")
    assert found == (2, "planner.benchmarks.calibration", ("load_profile",))
    with pytest.raises(ImportError):
        importlib.import_module(found[1])


# ------------------------------------------------------------ predict --calibration refuses
PROFILE = ROOT / "data" / "calibration" / "profile.yaml"
ROWS = ROOT / "data" / "benchmarks" / "pytorch_h200.csv"


def _bad_profiles() -> dict[str, tuple[str, str]]:
    import yaml

    def edited(edit) -> str:
        d = yaml.safe_load(PROFILE.read_text())
        edit(d)
        return yaml.safe_dump(d)

    return {  # name -> (file text, what the one-line error must say)
        "broken YAML": ("nodes: [\n  - {a: 1\n", "YAML"),
        "empty file": ("", "not a calibration profile"),
        "version 99": (edited(lambda d: d.update(planner_calibration_profile=99)), "version 99"),
        "mem_eff -1": (edited(lambda d: d["nodes"][0]["params"].update(mem_eff=-1)), "mem_eff"),
    }


@pytest.mark.parametrize("case", list(_bad_profiles()))
def test_predict_with_a_bad_profile_exits_2_and_keeps_the_output(case, tmp_path, capsys):
    from planner.cli.main import main

    text, expect = _bad_profiles()[case]
    prof = tmp_path / "profile.yaml"
    prof.write_text(text)
    rows = tmp_path / "rows.csv"
    rows.write_text("\n".join(ROWS.read_text().splitlines()[:6]) + "\n")
    out = tmp_path / "predicted.csv"
    out.write_text("old predictions\n")
    rc = main(["predict", str(rows), "--calibration", str(prof), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert str(prof) in err and expect in err, err
    assert out.read_text() == "old predictions\n"  # nothing on disk changes on error
