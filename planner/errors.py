"""User-facing errors.

Every error a user can cause (unknown id, bad YAML, impossible numbers, a model
that does not fit) is a :class:`PlannerError`. The CLI prints ``str(err)`` as one
line on stderr and exits with code 2; the app shows it as a message. Nothing the
user types should ever surface as a traceback.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path


class PlannerError(ValueError):
    """An error caused by the user's input, with a message that says what to do."""


class UnknownIdError(PlannerError):
    """An id that is not in a catalog; the message lists the closest valid ids."""

    def __init__(self, kind: str, value: str, valid: Iterable[str]):
        valid = sorted(set(valid))
        close = difflib.get_close_matches(value.lower(), valid, n=5, cutoff=0.4)
        if not close:
            close = [v for v in valid if value.lower() in v][:5]
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        listing = ", ".join(valid) if len(valid) <= 40 else ", ".join(valid[:40]) + ", ..."
        super().__init__(f"unknown {kind} '{value}'.{hint} Valid {kind} ids: {listing}")
        self.kind = kind
        self.value = value
        self.valid = valid
        self.suggestions = close


class MissingDataError(PlannerError):
    """A catalog number that no source gives, so the requested quantity cannot be computed."""


def read_text(path: str | os.PathLike[str], what: str, kind: str = "text file") -> str:
    """Read a UTF-8 text file the user named; every failure is one :class:`PlannerError`.

    Parameters
    ----------
    path : the file
    what : how the message names it when missing ("scenario file", "model config", ...)
    kind : what it should have been when ``path`` is a folder ("CSV file", ...)
    """
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlannerError(f"{what} not found: {p}") from None
    except IsADirectoryError:
        raise PlannerError(f"{p}: is a folder, not a {kind}") from None
    except UnicodeDecodeError as e:
        raise PlannerError(
            f"{p}: not a UTF-8 text file (byte {e.start} is not UTF-8 text: {e.reason}); "
            f"a {kind} must be UTF-8"
        ) from None
    except OSError as e:
        raise PlannerError(f"{p}: cannot read the {what}: {e.strerror or e}") from None


def require_positive(name: str, value: float | int | None, *, allow_zero: bool = False) -> None:
    """Raise :class:`PlannerError` unless ``value`` is a positive (or non-negative) number."""
    if value is None:
        raise PlannerError(f"{name} is required")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PlannerError(f"{name} must be a number, got {value!r}") from None
    if v != v:  # NaN
        raise PlannerError(f"{name} must be a number, got NaN")
    if allow_zero and v < 0:
        raise PlannerError(f"{name} must be >= 0, got {value}")
    if not allow_zero and v <= 0:
        raise PlannerError(f"{name} must be > 0, got {value}")
