"""Schema check for every frame the host sends, for end-to-end tests.

Usage::

    from tests.wire import FrameValidator

    validator = FrameValidator()
    validator.check_server_frame(frame)                        # notifications, host requests
    validator.check_server_frame(frame, answered_method="initialize")  # a response
    validator.check_server_text(raw_text, answered_method=None)        # raw WebSocket text

Contract:
- Validation uses the vendored ``ahp-0.2.0.schema.json`` (JSON Schema Draft 2020-12)
  through ``ahp.dialects.v0_2.wire.wire_schema()``, which only adds the ``null`` the repaired
  schema lost for ``session/activeClientChanged``'s ``activeClient``.
- Every failure raises ``AssertionError`` whose message names the method and the
  schema definition, the JSON path inside the frame, and jsonschema's reason.
- Rules: the JSON-RPC envelope must be well formed (``jsonrpc: "2.0"``; a response has
  an ``id`` and exactly one of ``result``/``error``; a request/notification has a string
  ``method`` and object ``params``; no unknown top-level keys). A result is checked
  against the result definition of ``answered_method`` (``null`` results must be
  ``null``). An error has an integer ``code``, a non-empty string ``message`` and no
  traceback-like text anywhere. The ``action`` notification is checked against
  ``ActionEnvelope`` (and its action against that type's own definition, for a precise
  message; a rejection envelope's action is the client's own payload echoed back, so it
  only has to be an object)
  message), except that a rejection (``rejectionReason`` present) echoes the client's
  action verbatim, so there only ``origin``, a non-empty reason and an action object
  are required; other notifications and host requests against their params definition;
  methods the host may not send are rejected.
- Validators are compiled once per definition and shared by every ``FrameValidator``
  (module-level cache), so checking thousands of frames stays cheap.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from ahp.dialects.v0_2.wire import ACTIONS, METHODS, wire_schema

_RESPONSE_KEYS = frozenset({"jsonrpc", "id", "result", "error"})
_MESSAGE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_TRACEBACK_PATTERNS = (
    re.compile(r"Traceback \(most recent call last\)"),
    re.compile(r'File "[^"]+", line \d+'),
    re.compile(r"\bline \d+, in \w+"),
)


@cache
def _validator(definition: str) -> Draft202012Validator:
    """A compiled validator for one ``$defs`` entry (cached for the whole test run)."""
    schema = wire_schema()
    if definition not in schema["$defs"]:
        raise KeyError(f"no definition {definition!r} in ahp-0.2.0.schema.json")
    # The wrapper shares the (read-only) $defs dict, so every validator resolves
    # references inside the one vendored document without copying it.
    wrapper = {
        "$schema": schema["$schema"],
        "$defs": schema["$defs"],
        "$ref": f"#/$defs/{definition}",
    }
    return Draft202012Validator(wrapper)


@cache
def _envelope_validator() -> Draft202012Validator:
    """``ActionEnvelope`` with ``action`` only required to be an object.

    The action itself is checked against its own type's definition first, so running
    the envelope's 61-branch ``anyOf`` again would only cost time (it dominated the
    validator's run time) without adding a check.
    """
    schema = wire_schema()
    envelope = dict(schema["$defs"]["ActionEnvelope"])
    envelope["properties"] = {**envelope["properties"], "action": {"type": "object"}}
    return Draft202012Validator({"$schema": schema["$schema"], "$defs": schema["$defs"], **envelope})


def _path(prefix: str, error: ValidationError) -> str:
    return prefix + "".join(f"[{part!r}]" for part in error.absolute_path)


def _describe(error: ValidationError) -> str:
    return error.message if len(error.message) <= 400 else error.message[:400] + "..."


class FrameValidator:
    """Asserts that frames sent by the host conform to AHP 0.2.0."""

    def check_server_text(self, text: str, answered_method: str | None = None) -> dict[str, Any]:
        """Parse one WebSocket text frame, check it, and return the parsed frame.

        One frame must carry exactly one JSON object (no batches, no NaN/Infinity).
        """

        def reject_constant(name: str) -> Any:
            raise AssertionError(f"frame contains non-JSON number {name}: {text[:200]!r}")

        try:
            frame = json.loads(text, parse_constant=reject_constant)
        except json.JSONDecodeError as error:
            raise AssertionError(f"frame is not valid JSON ({error}): {text[:200]!r}") from None
        self.check_server_frame(frame, answered_method)
        return frame

    def check_server_frame(self, frame: dict[str, Any], answered_method: str | None = None) -> None:
        """Raise ``AssertionError`` unless ``frame`` is a valid host->client message.

        ``answered_method`` is the method of the client request this frame answers; it
        is required to check a result's shape (without it only the envelope is checked).
        """
        if not isinstance(frame, dict):
            raise AssertionError(f"frame must be a JSON object, got {type(frame).__name__}")
        if frame.get("jsonrpc") != "2.0":
            raise AssertionError(f"frame must have jsonrpc '2.0', got {frame.get('jsonrpc')!r}")
        if "method" in frame:
            self._check_message(frame)
        elif "result" in frame or "error" in frame:
            self._check_response(frame, answered_method)
        else:
            raise AssertionError(
                f"frame is neither a request/notification (method) nor a response "
                f"(result/error): keys {sorted(frame)}"
            )

    # Responses -------------------------------------------------------------------

    def _check_response(self, frame: dict[str, Any], answered_method: str | None) -> None:
        unknown = set(frame) - _RESPONSE_KEYS
        if unknown:
            raise AssertionError(f"response has unknown top-level keys {sorted(unknown)}")
        if "result" in frame and "error" in frame:
            raise AssertionError("response must have exactly one of 'result' and 'error', not both")
        if "id" not in frame:
            raise AssertionError("response must carry the 'id' of the request it answers")
        response_id = frame["id"]
        if "error" in frame:
            # JSON-RPC allows a null id only when the request id could not be read.
            if response_id is not None and not _is_id(response_id):
                raise AssertionError(f"response id must be a number or string, got {response_id!r}")
            self._check_error(frame["error"], answered_method)
            return
        if not _is_id(response_id):
            raise AssertionError(f"result response id must be a number or string, got {response_id!r}")
        if answered_method is None:
            return
        spec = METHODS.get(answered_method)
        if spec is None or spec.kind != "request":
            raise AssertionError(f"{answered_method!r} is not an AHP request; nothing should answer it")
        result = frame["result"]
        if spec.result_def is None:
            if result is not None:
                raise AssertionError(
                    f"{answered_method} result must be null, got {json.dumps(result)[:200]}"
                )
            return
        self._check_union(result, spec.result_defs, f"{answered_method} result", "result")

    def _check_error(self, error: Any, answered_method: str | None) -> None:
        label = f"{answered_method} error" if answered_method else "error"
        if not isinstance(error, dict):
            raise AssertionError(f"{label} must be an object, got {type(error).__name__}")
        unknown = set(error) - {"code", "message", "data"}
        if unknown:
            raise AssertionError(f"{label} has unknown keys {sorted(unknown)}")
        code = error.get("code")
        if isinstance(code, bool) or not isinstance(code, int):
            raise AssertionError(f"{label} code must be an integer, got {code!r}")
        message = error.get("message")
        if not isinstance(message, str) or not message.strip():
            raise AssertionError(f"{label} message must be a non-empty string, got {message!r}")
        text = json.dumps(error)
        for pattern in _TRACEBACK_PATTERNS:
            if pattern.search(text):
                raise AssertionError(f"{label} leaks traceback text to the client: {text[:300]}")

    # Requests and notifications ------------------------------------------------

    def _check_message(self, frame: dict[str, Any]) -> None:
        unknown = set(frame) - _MESSAGE_KEYS
        if unknown:
            raise AssertionError(f"message has unknown top-level keys {sorted(unknown)}")
        method = frame["method"]
        if not isinstance(method, str):
            raise AssertionError(f"method must be a string, got {method!r}")
        spec = METHODS.get(method)
        if spec is None:
            raise AssertionError(f"host sent unknown method {method!r}")
        if not spec.sent_by_host():
            raise AssertionError(f"{method} is client->host only; the host must not send it")
        is_request = "id" in frame
        if spec.kind == "notification" and is_request:
            raise AssertionError(f"{method} is a notification and must not carry an id")
        if spec.kind == "request" and not is_request:
            raise AssertionError(f"host request {method} must carry an id")
        if is_request and not _is_id(frame["id"]):
            raise AssertionError(f"{method} request id must be a number or string, got {frame['id']!r}")
        if "params" not in frame:
            raise AssertionError(f"{method} must carry params (every AHP params has a channel)")
        params = frame["params"]
        if method == "action":
            if isinstance(params, dict) and "rejectionReason" in params:
                self._check_rejection(params)
            else:
                # The action against its own definition: the envelope's 61-way anyOf
                # would only say "matches none of the branches", and slowly.
                self._check_action(params)
            self._report(_envelope_validator(), params, "action params", "ActionEnvelope", "params")
            return
        self._check_definition(params, spec.params_def, f"{method} params", "params")

    def _check_action(self, envelope: Any) -> None:
        action = envelope.get("action") if isinstance(envelope, dict) else None
        if not isinstance(action, dict):
            raise AssertionError(f"action params must carry an 'action' object, got {action!r}")
        if envelope.get("rejectionReason") is not None:
            # A rejection returns the client's own action verbatim so it can drop it from its
            # pending queue; that payload may be malformed, which is often why it was refused.
            return
        action_type = action.get("type")
        spec = ACTIONS.get(action_type) if isinstance(action_type, str) else None
        if spec is None:
            raise AssertionError(f"action envelope carries unknown action type {action_type!r}")
        self._check_definition(action, spec.model_def, f"action {action_type}", "params['action']")

    def _check_rejection(self, envelope: dict[str, Any]) -> None:
        # A rejection echoes the client's own action back so the client can drop it
        # from its pending queue; that payload may be exactly what was wrong (unknown
        # type, missing field), so only its identity is checked, not its shape.
        if not isinstance(envelope.get("origin"), dict):
            raise AssertionError("a rejected action's envelope must carry the dispatcher's origin")
        reason = envelope["rejectionReason"]
        if not isinstance(reason, str) or not reason.strip():
            raise AssertionError(f"rejectionReason must be a non-empty string, got {reason!r}")
        for pattern in _TRACEBACK_PATTERNS:
            if pattern.search(reason):
                raise AssertionError(f"rejectionReason leaks traceback text: {reason[:300]}")
        action = envelope.get("action")
        if not isinstance(action, dict):
            raise AssertionError(f"a rejected action's envelope must echo the action object, got {action!r}")

    # Schema plumbing -----------------------------------------------------------

    def _check_definition(self, value: Any, definition: str, label: str, prefix: str) -> None:
        self._report(_validator(definition), value, label, definition, prefix)

    @staticmethod
    def _report(
        validator: Draft202012Validator, value: Any, label: str, definition: str, prefix: str
    ) -> None:
        error = best_match(validator.iter_errors(value))
        if error is not None:
            raise AssertionError(
                f"{label} does not match {definition} at {_path(prefix, error)}: {_describe(error)}"
            )

    def _check_union(self, value: Any, definitions: tuple[str, ...], label: str, prefix: str) -> None:
        failures = []
        for definition in definitions:
            error = best_match(_validator(definition).iter_errors(value))
            if error is None:
                return
            failures.append(f"{definition} at {_path(prefix, error)}: {_describe(error)}")
        raise AssertionError(f"{label} matches none of {' | '.join(definitions)}: " + "; ".join(failures))


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
