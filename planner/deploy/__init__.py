"""From a recommended option to a running deployment, and back: the artefacts of
``planner recommend --emit`` (launch command per engine release, Kubernetes manifests, a load
test and the planner's expected result) and the benchmark results that check them."""

from planner.deploy.emit import emit_all, emit_zip
from planner.deploy.expected import Expected, read_expected, write_expected

__all__ = ["Expected", "emit_all", "emit_zip", "read_expected", "write_expected"]
