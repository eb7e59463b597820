"""Every frame a connection received, checked against the schema of the version it negotiated.

Contract: ``FrameSchema.for_version("0.7.0" | "0.9.0" | "1.0.0")``; ``errors(frame, answered, kind_of)``
returns one line per violation (empty when the frame is valid), naming the frame, the definition
and the JSON path. ``answered`` is the method a response answers (None for other frames);
``kind_of(uri)`` is the channel kind of a snapshot's resource.

Which schema:

* 0.7.0: the vendored merged 0.7.0 schema (``ahp/dialects/v0_7/spec-0.7.0/ahp-0.7.0.schema.json``,
  repaired as its SOURCE.txt says), for everything.
* 0.9.0: no 0.9.0 schema exists (upstream never published one). The closest is 1.0.0, which
  serves the 0.9.0 model unchanged: its vendored ``state``, ``actions`` and ``notifications``
  files check every state, action and notification (merged and repaired in memory as
  ``tests/ahp/state/_support.schema_1_0`` does: the malformed union branch dropped,
  ``SessionStatus`` a bitset). Its ``commands`` file was not obtainable, so command results are
  checked against the 0.7.0 ``<Method>Result`` definitions with every definition 1.0.0 also has
  taken from 1.0.0 (a listed session is a 1.0.0 ``SessionSummary``, a snapshot's state a 1.0.0
  state).
* 1.0.0: the same documents as 0.9.0: its own ``state``, ``actions`` and ``notifications`` files,
  and for command results the 0.7.0 definitions under the 1.0.0 ones (its ``commands`` file was not
  obtainable; ``ahp/protocol/spec-1.0.0/SOURCE.txt``).

Rules: an action envelope has a string ``channel``, an integer ``serverSeq``, an optional
``origin`` ``{clientId, clientSeq}``; its action fits the definition of its own type (a
rejection echoes the client's action, so there it only has to be an object). A notification fits
``<its params definition>``; a response's ``result`` fits ``<Method>Result`` (snapshots in it
checked one by one: ``resource``, ``fromSeq`` and the state against its kind's definition), or is
``null``/``{}`` for a method without a result definition; an error has an integer ``code`` and a
string ``message``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from tests.ahp.state._support import STATE_DEFINITIONS, schema_0_7, schema_1_0

__all__ = ["FrameSchema"]

_NOTIFICATIONS = {
    "root/sessionAdded": "SessionAddedParams",
    "root/sessionRemoved": "SessionRemovedParams",
    "root/sessionSummaryChanged": "SessionSummaryChangedParams",
    "auth/required": "AuthRequiredParams",
    "progress": "ProgressParams",
}
_HOST_REQUESTS = {"resourceList": "ResourceListParams", "resourceRead": "ResourceReadParams"}


@cache
def _schema_0_9() -> dict[str, Any]:
    """1.0.0's state, actions and notifications over 0.7.0's command definitions."""
    defs = copy.deepcopy(schema_0_7()["$defs"])
    defs.update(schema_1_0()["$defs"])
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": defs}


class FrameSchema:
    def __init__(self, version: str, schema: dict[str, Any]) -> None:
        self.version = version
        self.schema = schema
        self._validators: dict[str, Draft202012Validator] = {}
        union = schema["$defs"]["StateAction"]
        branches = union.get("oneOf") or union.get("anyOf") or []
        self.action_definitions: dict[str, str] = {}
        for branch in branches:
            name = branch["$ref"].rsplit("/", 1)[-1]
            definition = schema["$defs"][name]
            # (A type with variants, e.g. chat/toolCallConfirmed approved or denied, is a oneOf.)
            for variant in [definition, *[schema["$defs"][v["$ref"].rsplit("/", 1)[-1]] for v in definition.get("oneOf") or ()]]:
                const = ((variant.get("properties") or {}).get("type") or {}).get("const")
                if isinstance(const, str):
                    self.action_definitions[const] = name

    @classmethod
    @cache
    def for_version(cls, version: str) -> FrameSchema:
        if version == "0.7.0":
            return cls(version, schema_0_7())
        if version in ("0.9.0", "1.0.0"):
            return cls(version, _schema_0_9())
        raise ValueError(f"no schema for {version}")

    def _check(self, value: Any, definition: str, where: str) -> list[str]:
        checker = self._validators.get(definition)
        if checker is None:
            checker = self._validators[definition] = Draft202012Validator({**self.schema, "$ref": f"#/$defs/{definition}"})
        return [f"{where} [{definition}] at /{'/'.join(map(str, error.absolute_path))}: {error.message[:240]}"
                for error in checker.iter_errors(value)]

    def errors(self, frame: dict[str, Any], answered: str | None, kind_of: Callable[[str], str | None]) -> list[str]:
        method = frame.get("method")
        if method == "action":
            return self._envelope(frame.get("params"))
        if method in _NOTIFICATIONS:
            return self._check(frame.get("params"), _NOTIFICATIONS[method], method)
        if method in _HOST_REQUESTS:
            return self._check(frame.get("params"), _HOST_REQUESTS[method], method)
        if method is not None:
            return [f"{method}: not a message a {self.version} host sends"]
        if "error" in frame:
            error = frame["error"]
            ok = isinstance(error, dict) and isinstance(error.get("code"), int) and isinstance(error.get("message"), str)
            return [] if ok else [f"error reply to {answered}: {error!r}"]
        return self._result(answered, frame.get("result"), kind_of)

    def _envelope(self, envelope: Any) -> list[str]:
        if not isinstance(envelope, dict):
            return [f"action: envelope {envelope!r} is not an object"]
        problems = []
        if not isinstance(envelope.get("channel"), str) or not isinstance(envelope.get("serverSeq"), int):
            problems.append(f"action: envelope without a channel or an integer serverSeq: {sorted(envelope)}")
        origin = envelope.get("origin")
        if origin is not None and not (isinstance(origin, dict) and isinstance(origin.get("clientId"), str)
                                       and isinstance(origin.get("clientSeq"), int)):
            problems.append(f"action: malformed origin {origin!r}")
        action = envelope.get("action")
        if not isinstance(action, dict):
            return [*problems, "action: the action is not an object"]
        if "rejectionReason" in envelope:
            if not isinstance(envelope["rejectionReason"], str) or not envelope["rejectionReason"]:
                problems.append("action: a rejection without a reason")
            return problems
        definition = self.action_definitions.get(action.get("type"))
        if definition is None:
            return [*problems, f"action: {action.get('type')!r} is not an action type of {self.version}"]
        return [*problems, *self._check(action, definition, f"action {action.get('type')}")]

    def _snapshot(self, snapshot: Any, where: str, kind_of: Callable[[str], str | None]) -> list[str]:
        if not isinstance(snapshot, dict) or not isinstance(snapshot.get("resource"), str) \
                or not isinstance(snapshot.get("fromSeq"), int):
            return [f"{where}: malformed snapshot {str(snapshot)[:200]}"]
        kind = kind_of(snapshot["resource"])
        definition = STATE_DEFINITIONS.get(kind or "")
        if definition is None:
            return [f"{where}: snapshot of {snapshot['resource']} of unknown kind {kind!r}"]
        return self._check(snapshot["state"], definition, f"{where} {snapshot['resource']}")

    def _result(self, method: str | None, result: Any, kind_of: Callable[[str], str | None]) -> list[str]:
        where = f"result of {method}"
        if method == "subscribe":
            return self._snapshot((result or {}).get("snapshot"), where, kind_of)
        if method in ("initialize", "reconnect") and isinstance(result, dict) and "snapshots" in result:
            problems = [problem for snapshot in result["snapshots"] for problem in self._snapshot(snapshot, where, kind_of)]
            definition = "InitializeResult" if method == "initialize" else "ReconnectSnapshotResult"
            return [*problems, *self._check({**result, "snapshots": []}, definition, where)]
        if method == "reconnect" and isinstance(result, dict) and result.get("type") == "replay":
            problems = [problem for envelope in result.get("actions") or [] for problem in self._envelope(envelope)]
            return [*problems, *self._check({**result, "actions": []}, "ReconnectReplayResult", where)]
        definition = f"{method[:1].upper()}{method[1:]}Result" if method else ""
        if definition in self.schema["$defs"]:
            return self._check(result, definition, where)
        return [] if result in (None, {}) else [f"{where}: {str(result)[:200]} where {self.version} defines no result"]
