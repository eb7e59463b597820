"""JavaScript value semantics the reference reducers rely on, for JSON-shaped Python values.

Shared by the internal model (:mod:`ahp.state`) and every dialect's reducers.

The AHP reducers are specified by TypeScript code, so a faithful port has to reproduce a few JS
rules that differ from Python's:

* truthiness: ``[]`` and ``{}`` are truthy, ``0``, ``""``, ``False`` and absent values are not;
* ``a + b`` on strings concatenates the *text* of an absent value (``"undefined"``);
* assigning ``undefined`` to a key makes the key vanish on the wire.

Invariants: every helper here is pure, never mutates its arguments, and never raises on any
JSON-shaped input. ``None`` always means "absent" (the wire's ``null`` and TS ``undefined``).
"""

from __future__ import annotations

from typing import Any

import orjson


def truthy(value: Any) -> bool:
    """JS truthiness: empty containers count as true, absent/0/""/false do not."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)):
        # NaN cannot arrive over JSON, so zero is the only falsy number.
        return value != 0
    if isinstance(value, str):
        return value != ""
    return True


def js_text(value: Any) -> str:
    """The text JS produces when ``value`` takes part in string concatenation."""
    if isinstance(value, str):
        return value
    if value is None:
        return "undefined"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return ",".join("" if item is None else js_text(item) for item in value)
    return "[object Object]"


def concat(left: Any, right: Any) -> str:
    """``left + right`` where the reference code expects strings on both sides."""
    return js_text(left) + js_text(right)


def as_list(value: Any) -> list[Any]:
    """A list value, or an empty list when the field is absent or malformed."""
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    """A dict value, or an empty dict when the field is absent or malformed."""
    return value if isinstance(value, dict) else {}


def without_none(mapping: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``mapping`` minus keys whose value is ``None`` (TS ``undefined`` vanishes)."""
    return {key: value for key, value in mapping.items() if value is not None}


def clean(value: Any) -> Any:
    """``value`` with ``None``-valued keys dropped at every depth, so state never holds ``None``.

    Returns the very same object when there is nothing to drop, so large payloads that are
    already clean are shared rather than copied.
    """
    if isinstance(value, dict):
        cleaned = {key: clean(item) for key, item in value.items() if item is not None}
        if len(cleaned) == len(value) and all(cleaned[key] is value[key] for key in cleaned):
            return value
        return cleaned
    if isinstance(value, list):
        items = [clean(item) for item in value]
        if all(new is old for new, old in zip(items, value)):
            return value
        return items
    return value


def clean_large(value: Any) -> Any:
    """``clean(value)`` for a large value that seldom holds a ``None`` (a session's tool
    definitions, each with its input schema: a walk of every schema's every node per session):
    its JSON, written in C, is looked at first, and a value whose JSON has no ``:null`` is
    returned as it is, since a ``None`` under a key anywhere in dicts and lists is written
    ``"key":null`` (one inside a string only sends it the plain way). Anything orjson does not
    write (a key that is not a string, an integer past 64 bits) goes the plain way too."""
    if isinstance(value, (dict, list)):
        try:
            text = orjson.dumps(value)
        except TypeError:  # (orjson.JSONEncodeError is one)
            return clean(value)
        if b":null" not in text:
            return value
    return clean(value)


def payload(action: dict[str, Any], key: str) -> Any:
    """An action field ready to be stored in state: ``None``-valued keys dropped at every depth."""
    return clean(action.get(key))


def assign(mapping: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``{...mapping, ...changes}`` where a ``None`` change deletes the key instead of storing it.

    Values are stored as given: callers pass values taken from state (already shared) or from
    :func:`payload` (already cleaned).
    """
    result = dict(mapping)
    for key, value in changes.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result
