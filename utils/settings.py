"""Settings that only some choices read, so that one given with another choice is refused instead of
silently doing nothing.

A config dataclass marks such a field with `read_when(test, says)` in its metadata: `test` takes
the config holding the field and tells whether the field is read, `says` tells the user which
choice reads it. `unread_settings` walks a config (nested dataclasses too) and names every marked
field that the user gave (on the command line; or else, every one that differs from its default)
while its config's choices do not read it. A setting an experiment file set is not the user's: an
experiment that turns head importance on and sets its sentences may be run with it turned off.
"""

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

READ_WHEN = "read_when"


@dataclasses.dataclass(frozen=True)
class ReadWhen:
    test: Callable[[Any], bool]  # the config holding the field -> whether the field is read
    says: str  # completes "<group>.<field> is ...": which choice reads it, and what to do


def read_when(test: Callable[[Any], bool], says: str) -> dict:
    """Metadata for `dataclasses.field(metadata=...)`."""
    return {READ_WHEN: ReadWhen(test, says)}


def refuse_unless(*rules: tuple[bool, str]) -> None:
    """A config's `__post_init__` checks of values that types cannot express: (holds, message)
    pairs, the first that does not hold raised as a ValueError (train.py says it in one line)."""
    for holds, message in rules:
        if not holds:
            raise ValueError(message)


def default_of(field: dataclasses.Field) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def unread_settings(config: Any, prefix: str, given: set[str] | None = None) -> list[str]:
    """'<prefix>.<field> is <says>' for every marked field of `config` (and of the dataclasses it
    holds) that is not read with the choices `config` makes, and that is given: named in `given`
    (dotted paths, e.g. "data.train"), or, with `given` None, differing from its default."""
    found = []
    for field in dataclasses.fields(config):
        value, name = getattr(config, field.name), f"{prefix}.{field.name}"
        if dataclasses.is_dataclass(value):
            found += unread_settings(value, name, given)
        rule = field.metadata.get(READ_WHEN)
        if rule is None or rule.test(config):
            continue
        if name in given if given is not None else _plain(value) != _plain(default_of(field)):
            found.append(f"{name} is {rule.says}")
    return found


def override_keys(overrides: Iterable[str]) -> set[str]:
    """The settings Hydra command-line overrides name: "data.train=/x" -> "data.train" (a group's
    option, "data=files", names "data"; "+key=v", "++key=v" and "~key" name "key")."""
    return {override.split("=", 1)[0].lstrip("+~") for override in overrides}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value  # YAML gives lists for tuples
