"""Re-run the README examples whose output depends on the calibration profile.

`planner estimate`, `planner capacity`, `planner simulate` and `planner recommend` blocks of README.md are run
again and their output pasted, so the tour stays real output after a refit.
Usage: ``PATH=.venv/bin:$PATH python scripts/update_readme_outputs.py``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
REFRESH = (
    "$ planner memory",
    "$ planner estimate",
    "$ planner capacity",
    "$ planner simulate",
    "$ planner recommend",
)


def main() -> None:
    lines = README.read_text(encoding="utf-8").splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if line.strip() != "```" or i >= len(lines) or not lines[i].startswith(REFRESH):
            continue
        cmd_lines = [lines[i]]
        while cmd_lines[-1].rstrip().endswith("\\"):
            i += 1
            cmd_lines.append(lines[i])
        i += 1
        out.extend(cmd_lines)
        cmd = " ".join(x.strip().rstrip("\\").strip() for x in cmd_lines)[2:]
        res = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
        if res.returncode != 0:  # a block that shows an error: kept as written
            continue
        out.append(res.stdout)
        while lines[i].strip() != "```":  # skip the old output
            i += 1
    README.write_text("".join(out), encoding="utf-8")


if __name__ == "__main__":
    main()
