"""AHP 0.2.0 as the store holds it: the identity dialect, until the store moves to the 0.9.0 model.

Its subscribers take the store's own frames (``translator`` is None), so a 0.2.0 connection
costs exactly what it cost before there were dialects. Params are checked against the generated
0.2.0 wire types (pydantic, -32602 naming the field, never pydantic's text). When the store holds
the 0.9.0 model, this class becomes the projection through ``ahp/dialects/v0_2`` and gets a
translator; the connection does not change.
"""

from __future__ import annotations

from typing import Any

from ahp.dialects.registry import ACTION_INTRODUCED_IN
from ahp.protocol import ACTIONS, METHODS
from host.dialects.base import Dialect
from host.errors import ProtocolViolation

__all__ = ["Ahp02Dialect", "describe_params_error"]


class Ahp02Dialect(Dialect):
    translator = None

    def params(self, method: str, params: Any) -> dict[str, Any]:
        params = super().params(method, params)
        spec = METHODS.get(method)
        if spec is not None and spec.params_model is not None:
            from pydantic import ValidationError  # with the wire models, on first use

            try:
                spec.params_model.model_validate(params)
            except ValidationError as error:
                raise ProtocolViolation.invalid_params(describe_params_error(method, error)) from None
        return params

    def lift(self, kind: str, action: Any) -> tuple[Any, str | None]:
        action_type = action.get("type") if isinstance(action, dict) else None
        if isinstance(action_type, str) and action_type not in ACTIONS and action_type in ACTION_INTRODUCED_IN:
            return None, (f"{action_type} came with AHP {ACTION_INTRODUCED_IN[action_type]}; this connection "
                          f"negotiated AHP {self.version}, which does not have it.")
        return action, None

    def replayed(self, envelopes: Any, kind_of: Any) -> list[dict[str, Any]]:
        return list(envelopes)


def describe_params_error(method: str, error: Any) -> str:
    problems = []
    for item in error.errors()[:3]:
        where = ".".join(str(part) for part in item.get("loc", ()) if not (isinstance(part, str) and part[:1].isupper()))
        where = where or "params"
        if item.get("type") == "missing":
            problems.append(f"{where} is required")
        else:
            problems.append(f"{where} has the wrong type or value")
    return f"Invalid {method} params: " + "; ".join(problems) + "."
