"""The package graph: no import cycle between planner's modules, no upward import between its
subpackages. Lazy imports inside functions count too (except the lazy export table of
``planner/__init__.py``). See docs/architecture.md."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "planner"

#: layers, lowest first; a module may import its own layer and the layers before it
ORDER = (
    ("errors", "fmt", "report", "parse_cache", "files"),
    ("catalog",),
    ("cost",),
    ("engine",),
    ("workload",),
    ("serving",),
    ("recommend",),
    ("scenario",),
    ("benchmarks",),
    ("calibration",),
    ("deploy",),
    ("cli",),
)
LAYER = {name: i for i, names in enumerate(ORDER) for name in names}


def _modules() -> dict[str, Path]:
    mods = {}
    for p in PKG.rglob("*.py"):
        rel = p.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts)
        mods[name.removesuffix(".__init__")] = p
    return mods


def _imports(m: str, p) -> list[tuple[str, str | None]]:
    """``(module, name)`` of every import in module ``m`` (file ``p``), lazy ones included;
    relative imports resolved; ``name`` is None for ``import X``."""
    base = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                mod = ".".join(parts + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out += [(mod, a.name) for a in node.names]
    return out


def _edges() -> dict[str, set[str]]:
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        if m == "planner":
            continue  # the lazy export table: `planner.X` names resolved on first access
        for mod, name in _imports(m, p):
            for t in (mod, f"{mod}.{name}") if name else (mod,):
                while t and t not in mods:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != m and not m.startswith(t + "."):
                    edges[m].add(t)
    return edges


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYER.get(parts[1]) if len(parts) > 1 else None


def test_every_subpackage_and_top_level_module_has_a_layer():
    tops = {p.stem if p.is_file() else p.name for p in PKG.iterdir()}
    tops = {t for t in tops if not t.startswith(("_", ".")) and t != "py"}
    assert tops <= set(LAYER), f"add {sorted(tops - set(LAYER))} to ORDER"


def test_no_upward_import_between_subpackages():
    bad = []
    for m, targets in _edges().items():
        lm = _layer(m)
        for t in targets:
            lt = _layer(t)
            if lm is not None and lt is not None and lt > lm:
                bad.append(f"{m} -> {t}")
    assert not bad, "upward imports (see docs/architecture.md):\n" + "\n".join(sorted(bad))


def test_no_import_cycle_between_modules():
    edges = _edges()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_no_module_over_700_lines():
    """planner/, the app's pages (app_pages/) and app.py: no module over 750 lines."""
    files = [*PKG.rglob("*.py"), *(PKG.parent / "app_pages").rglob("*.py"), PKG.parent / "app.py"]
    big = {
        str(p.relative_to(PKG.parent)): n
        for p in files
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 750
    }
    assert not big, big


#: the simulator's private modules (its event loop, compiled with numba, and its parts): a
#: function there stays readable, and a new phase of the loop is a function of its own
KERNEL_MODULES = sorted((PKG / "serving").glob("_*.py"))
MAX_FUNCTION_LINES = 200


def _function_lines(path: Path) -> dict[str, int]:
    """Lines of every function (methods and nested ones too) of ``path``: ``end_lineno -
    lineno + 1`` of its ``def``, decorators not counted."""
    out = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[f"{path.name}:{node.name}:{node.lineno}"] = node.end_lineno - node.lineno + 1
    return out


def test_no_function_of_the_simulator_kernel_over_200_lines():
    assert {p.name for p in KERNEL_MODULES} >= {"_kernel.py", "_phases.py", "_loop_parts.py"}
    long = {
        name: n
        for p in KERNEL_MODULES
        for name, n in _function_lines(p).items()
        if n > MAX_FUNCTION_LINES
    }
    assert not long, long


def test_function_lines_counts_from_def_to_the_last_line(tmp_path):
    # a 3-line function with a decorator, a nested 2-line function counted on its own
    src = "@deco\ndef f(a):\n    def g():\n        return 1\n    return a\n"
    (tmp_path / "m.py").write_text(src)
    assert _function_lines(tmp_path / "m.py") == {"m.py:f:2": 4, "m.py:g:3": 2}


def test_every_lazy_export_resolves_and_import_planner_stays_light():
    import subprocess
    import sys

    code = (
        "import sys, planner; assert 'numpy' not in sys.modules, 'import planner pulled numpy'; "
        "[getattr(planner, n) for n in planner.__all__]; "
        "from planner import build_replica, simulate, max_rate, size_fleet, steady_state, "
        "load_scenario, Workload, SLO, preset; "
        "from planner.catalog import Catalog, Accelerator, ModelArch, RentalPrice, PurchasePrice, "
        "load_catalog, DATA_DIR, Frozen; "
        "from planner.calibration import resolve_params, load_profile; "
        "from planner.errors import PlannerError, read_text"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=PKG.parent, timeout=120
    )
    assert p.returncode == 0, p.stderr


def _private_imports() -> list[str]:
    """``module -> name`` for every import of another package's underscore name (a private
    module such as ``planner.serving._engine``, or a private name from another package)."""
    mods = _modules()
    bad = []
    for m, p in mods.items():
        if m == "planner":
            continue
        pkg = ".".join(m.split(".")[:2])
        for mod, name in _imports(m, p):
            if not mod.startswith("planner.") or mod.startswith(pkg + ".") or mod == pkg:
                continue  # outside planner, or within the importer's own package
            full = mod.split(".") + ([name] if name else [])
            if any(part.startswith("_") and part != "__init__" for part in full[1:]):
                bad.append(f"{m} -> {'.'.join(full)}")
    return sorted(bad)


#: cross-package private imports that stay, as (importer prefix, target prefix): reason. The
#: test fails when a pair is no longer needed, so the list only shrinks.
KNOWN_PRIVATE = {
    # the compiled hot path: serving's numba kernel and event loop call the same scalar
    # formula as StepModel.step_time (docs/architecture.md, "Each formula exists once")
    ("planner.serving", "planner.engine._scalar"): "the kernel compiles the scalar formula",
    ("planner.serving.steady_state", "planner.engine.phases._window_sums"): "window sums",
    ("planner.calibration.iterations", "planner.engine._scalar"): "fits the scalar formula",
    # to be made public by their packages' owners (outside the recommend work)
    ("planner.calibration", "planner.benchmarks.io._hash_files"): "owner: calibration",
    ("planner.calibration", "planner.benchmarks.step_rows._"): "owner: calibration",
    ("planner.calibration", "planner.catalog.profile._"): "owner: calibration",
}


def test_no_import_of_another_packages_private_names():
    found = [x.split(" -> ") for x in _private_imports()]

    def known(m: str, t: str) -> tuple[str, str] | None:
        return next((k for k in KNOWN_PRIVATE if m.startswith(k[0]) and t.startswith(k[1])), None)

    new = sorted(f"{m} -> {t}" for m, t in found if known(m, t) is None)
    assert not new, "private names imported across packages (make them public):\n" + "\n".join(new)
    gone = sorted(set(KNOWN_PRIVATE) - {known(m, t) for m, t in found})
    assert not gone, f"no longer imported; remove from KNOWN_PRIVATE: {gone}"
