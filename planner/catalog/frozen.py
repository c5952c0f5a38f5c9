"""The base of every catalog record: :class:`Frozen` (immutable, no unknown keys, no inf/nan, and
one rule for every field at once: :func:`_check_value`), :class:`Sourced` (a catalog entry's
``source`` and ``as_of``), the field errors that name the field, and the byte units the
records use.
"""

from __future__ import annotations

import datetime as _dt
from functools import cache
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, model_validator

MIB = 2**20  # bytes in a mebibyte
GIB = 2**30  # bytes in a gibibyte


class Frozen(BaseModel):
    """Base for every catalog record: immutable, no unknown keys, and one rule for every
    field at once (:func:`_check_value`): a number field takes numbers only (not ``true``
    nor ``"80"``), a ``*_range`` pair is ordered, a date is not in the future (a date written
    with a time of day, ``2026-01-01T10:00:00``, is read as its day)."""

    # defer_build: a model's validator is built on its first validation, so the many records
    # a command never validates cost no start-up time
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _one_rule_per_field(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, kind in _field_kinds(cls).items():
                value = data.get(name)
                if value is not None:
                    if kind == "date" and isinstance(value, _dt.datetime):
                        # a date written with a time of day (2026-01-01T10:00:00): its day
                        data = {**data, name: (value := value.date())}
                    _check_value(name, kind, value)
        return data


class FieldValueError(ValueError):
    """A ValueError about one field, raised before pydantic sees the field: ``field`` and
    ``value`` let an error message name it as pydantic names its own field errors."""

    def __init__(self, field: str, message: str, value: Any):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.value = value


def field_error(err: dict[str, Any]) -> dict[str, Any]:
    """A pydantic error dict with the location, message and input of a
    :class:`FieldValueError` put where pydantic puts them for a field (others unchanged)."""
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, FieldValueError):
        return {
            **err,
            "loc": (*err["loc"], cause.field),
            "msg": cause.message,
            "input": cause.value,
        }
    return err


def _kind_of(annotation: Any) -> str | None:
    """'number', 'numbers' (a tuple of numbers) or 'date' for the field types the rule checks."""
    args = (
        set(get_args(annotation)) if get_origin(annotation) in (Union, UnionType) else {annotation}
    )
    args.discard(type(None))
    if args and args <= {int, float}:
        return "number"
    if args == {_dt.date}:
        return "date"
    if len(args) == 1:
        (a,) = args
        inner = set(get_args(a)) - {Ellipsis}
        if get_origin(a) is tuple and inner and inner <= {int, float}:
            return "numbers"
    return None


@cache
def _field_kinds(cls: type[BaseModel]) -> dict[str, str]:
    """Field name -> kind, for the fields the rule checks; a field with its own ``before``
    validator (e.g. ``percentile: p90``) parses its text itself and is left to it."""
    own = {
        f
        for d in cls.__pydantic_decorators__.field_validators.values()
        if d.info.mode in ("before", "plain", "wrap")
        for f in d.info.fields
    }
    kinds = {name: _kind_of(f.annotation) for name, f in cls.model_fields.items()}
    return {k: v for k, v in kinds.items() if v and k not in own}


def _check_value(name: str, kind: str, value: Any) -> None:
    """Raise a ValueError naming field ``name`` and what it expects, when ``value`` breaks the
    rule for its ``kind``."""
    if kind == "date":
        day = value
        if isinstance(value, str):
            try:
                day = _dt.date.fromisoformat(value.strip())
            except ValueError:
                return  # pydantic names the bad date
        if isinstance(day, _dt.datetime):
            day = day.date()
        if isinstance(day, _dt.date) and day > _dt.date.today():
            raise FieldValueError(
                name,
                f"{name} {day.isoformat()} is in the future (today is {_dt.date.today()})",
                value,
            )
        return
    items = value if kind == "numbers" and isinstance(value, (list, tuple)) else (value,)
    for v in items:
        if isinstance(v, (bool, str)):
            raise FieldValueError(name, f"must be a number, not a {type(v).__name__}", value)
    if kind == "numbers" and name.endswith("_range") and len(items) == 2:
        lo, hi = items
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
            raise FieldValueError(name, "must be [low, high] with low <= high", value)


class Sourced(Frozen):
    source: str = Field(min_length=3, description="where the numbers were read (URL or document)")
    as_of: _dt.date = Field(description="date of the source or of the reading")
    unverified: tuple[str, ...] = ()
    notes: str | None = None


def _fmt_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for p in loc:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out
