"""User-facing errors.

Every error a user can cause (unknown id, bad YAML, impossible numbers, a model
that does not fit) is a :class:`PlannerError`. The CLI prints ``str(err)`` as one
line on stderr and exits with code 2; the app shows it as a message. Nothing the
user types should ever surface as a traceback.
"""

from __future__ import annotations

import difflib
import math
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class PlannerError(ValueError):
    """An error caused by the user's input, with a message that says what to do.

    The message is always one line with control characters escaped, whatever user text
    (a key, an id, a file name) went into it.
    """

    def __init__(self, message: object = "", *args: object):
        if isinstance(message, str):
            message = printable(" ".join(message.split()), 4000)
        super().__init__(message, *args)

    def copy(self) -> PlannerError:
        """The same error (type, message, attributes) as a new object without a traceback:
        what a cache raises again, so that it keeps no frames of earlier raises alive."""
        c = type(self).__new__(type(self), *self.args)
        c.__dict__.update(self.__dict__)
        return c


class UnknownIdError(PlannerError):
    """An id that is not in a catalog; the message lists the closest valid ids."""

    def __init__(self, kind: str, value: str, valid: Iterable[str]):
        valid = sorted(set(valid))
        value = str(value)
        probe = value[:200].lower()  # difflib is quadratic: a huge id must not hang the error
        close = difflib.get_close_matches(probe, valid, n=5, cutoff=0.4)
        if not close:
            close = [v for v in valid if probe in v][:5]
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        listing = ", ".join(valid) if len(valid) <= 40 else ", ".join(valid[:40]) + ", ..."
        super().__init__(f"unknown {kind} '{printable(value)}'.{hint} Valid {kind} ids: {listing}")
        self.kind = kind
        self.value = value
        self.valid = valid
        self.suggestions = close


class MissingDataError(PlannerError):
    """A catalog number that no source gives, so the requested quantity cannot be computed."""


# Size limits of the files a user names, by what the file is (bytes). A limit names itself in
# the message ("larger than the 64 MB limit for a scenario file").
MB = 1_000_000
DEFAULT_READ_LIMIT = 64 * MB
DATA_READ_LIMIT = 1_000 * MB  # measurement / benchmark / trace CSVs (1M rows is ~150 MB)

_NOT_REGULAR = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def printable(value: object, limit: int = 80) -> str:
    """``value`` as text safe to print on one terminal line: control characters escaped,
    cut to ``limit`` characters with an ellipsis."""
    text = str(value)
    cut = len(text) > limit
    text = text[:limit]
    if text.isprintable():  # the usual case: nothing to escape
        return text + ("..." if cut else "")
    out = "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )
    return out + ("..." if cut else "")


def first_validation_error(file_name: str, e: Any, limit: int = 160) -> PlannerError:
    """The first error of a pydantic ``ValidationError`` ``e`` of a data file as a one-line
    :class:`PlannerError`: ``file: field.path: message`` (the message cut to ``limit``)."""
    err = e.errors()[0]
    where = ".".join(str(x) for x in err["loc"])
    return PlannerError(f"{file_name}: {where}: {err['msg'][:limit]}")


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for an error message, cut to about ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def read_text(
    path: str | os.PathLike[str],
    what: str,
    kind: str = "text file",
    limit: int = DEFAULT_READ_LIMIT,
) -> str:
    """Read a UTF-8 text file the user named; every failure is one :class:`PlannerError`.

    Only regular files are read (a FIFO, a device, a socket or a folder is an error naming
    what it is), at most ``limit`` bytes (a larger file is an error naming the limit), a UTF-8
    byte-order mark is dropped and CRLF line ends become LF.

    Parameters
    ----------
    path : the file
    what : how the message names it when missing ("scenario file", "model config", ...)
    kind : what it should have been when ``path`` is a folder ("CSV file", ...)
    limit : the largest size accepted, in bytes
    """
    p = Path(path)
    try:
        st = os.stat(p)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError
        for test, name in _NOT_REGULAR:
            if test(st.st_mode):
                raise PlannerError(f"{p}: is {name}, not a {kind}; give a regular file")
        if st.st_size > limit:
            raise PlannerError(_too_large(p, limit, what))
        with open(p, "rb") as fh:
            data = fh.read(limit + 1)  # files whose size stat does not report (/proc) too
        if len(data) > limit:
            raise PlannerError(_too_large(p, limit, what))
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        text = data.decode("utf-8")
        del data  # large CSVs: do not hold the bytes and the text at once
    except FileNotFoundError:
        raise PlannerError(f"{what} not found: {p}") from None
    except IsADirectoryError:
        raise PlannerError(f"{p}: is a folder, not a {kind}") from None
    except UnicodeDecodeError as e:
        raise PlannerError(
            f"{p}: not a UTF-8 text file (byte {e.start} is not UTF-8 text: {e.reason}); "
            f"a {kind} must be UTF-8"
        ) from None
    except (OSError, ValueError) as e:  # ValueError: a path with a NUL byte
        if isinstance(e, PlannerError):
            raise
        raise PlannerError(
            f"{printable(p)}: cannot read the {what}: {getattr(e, 'strerror', None) or e}"
        ) from None
    return text.replace("\r\n", "\n") if "\r" in text else text


def _too_large(p: Path, limit: int, what: str) -> str:
    return f"{p}: larger than the {limit // MB} MB limit for a {what}"


def whole_number(name: str, value: object, *, minimum: int = 1, maximum: int = 10**9) -> int:
    """``value`` as an int if it is a whole number in [minimum, maximum]; else a
    :class:`PlannerError` naming ``name`` ("32.7 layers" is an error, not 32)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlannerError(f"{name} must be a whole number, got {shown(value)}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise PlannerError(f"{name} must be a whole number, got {shown(value)}")
    if not minimum <= value <= maximum:
        raise PlannerError(f"{name} must be between {minimum} and {maximum:,}, got {shown(value)}")
    return int(value)


def check_physical(name: str, value: float, *, minimum: float = 0.0) -> float:
    """A computed quantity that must be finite and >= ``minimum`` (bytes, parameters, seconds).

    A violation means the inputs describe something impossible; it is a :class:`PlannerError`
    (not an assert, which ``python -O`` removes) naming the quantity.
    """
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise PlannerError(f"impossible result: {name} is not a number ({shown(value)})") from None
    if not math.isfinite(v) or v < minimum:
        raise PlannerError(
            f"impossible result: {name} = {v:.6g} (must be finite and >= {minimum:g}); "
            "check the model and hardware inputs"
        )
    return v


def require_positive(name: str, value: float | int | None, *, allow_zero: bool = False) -> None:
    """Raise :class:`PlannerError` unless ``value`` is a positive (or non-negative) number."""
    if value is None:
        raise PlannerError(f"{name} is required")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PlannerError(f"{name} must be a number, got {shown(value)}") from None
    if v != v:  # NaN
        raise PlannerError(f"{name} must be a number, got NaN")
    if allow_zero and v < 0:
        raise PlannerError(f"{name} must be >= 0, got {value}")
    if not allow_zero and v <= 0:
        raise PlannerError(f"{name} must be > 0, got {value}")
