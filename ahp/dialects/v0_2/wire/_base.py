"""The base class of every generated wire model.

Contract:
- Unknown fields are accepted and kept (AHP: receivers ignore unknown fields, and a
  relaying host must not drop them).
- Attributes are snake_case; the schema's camelCase names are the aliases. Both are
  accepted on input; ``model_dump()`` writes the wire (camelCase) names by default.
- ``to_wire()`` gives the JSON-ready dict to send: camelCase keys, optional fields that
  are unset or ``None`` omitted (TS ``undefined`` never appears as ``null``), while a
  required key holding ``None`` is kept (``activeClient: null`` releases the role).
- Validation is strict, with JSON's rules: no coercion of ``"yes"`` to ``True`` or
  ``"5"`` to 5 (a client sending the wrong type gets an error, not a guess). Nested
  objects may be given as dicts; enumerations are ``Literal`` strings, not Enum classes.
- Schema building is deferred to first use: the generated module defines ~300
  classes, and building them all eagerly would make ``import ahp.dialects.v0_2.wire`` slow.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class WireModel(BaseModel):
    """A message or state shape of AHP 0.2.0 as it appears on the wire."""

    model_config = ConfigDict(
        extra="allow",
        strict=True,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """This model as a JSON-ready dict in wire form (see module docstring)."""
        # Every optional field defaults to None in the generated models, so dropping
        # defaults drops exactly the absent optional keys and keeps required nulls.
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=True)
