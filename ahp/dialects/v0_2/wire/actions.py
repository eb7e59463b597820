"""The AHP 0.2.0 action catalogue (PROTOCOL.md section 9, METHODS.md).

Contract:
- ``ACTIONS`` maps each of the 61 action ``type`` strings to a frozen ``ActionSpec``:
  root 4, session 40, terminal 11, changeset 5, resourceWatch 1.
- ``channel_kind`` comes from the type's prefix and names the reducer / channel scheme
  the action belongs to; an action is only valid on a channel of that kind.
- ``client_dispatchable`` is the "By: C" column: the 27 types a client may send with
  ``dispatchAction``. Every other type is host-only and must be rejected from clients.
  ``owner_only`` marks the two client-dispatchable types that only the owner of a
  client-provided tool may send (``toolCallComplete``, ``toolCallContentChanged``).
- ``model_def`` is the schema definition of the action payload. For
  ``session/toolCallConfirmed`` it is the union ``SessionToolCallConfirmedAction``
  (approved | denied); ``action_model`` resolves unions to a ``TypeAdapter``.
- ``introduced_in`` is the first protocol version with the type; a host must not send
  a type to a client that negotiated an older version.
- Importing this module does not import the generated models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import TypeAdapter

from ahp.dialects.v0_2.wire._models import adapter_for

ChannelKind = Literal["root", "session", "terminal", "changeset", "resourceWatch"]
CHANNEL_KINDS: tuple[ChannelKind, ...] = ("root", "session", "terminal", "changeset", "resourceWatch")


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """One action type of AHP 0.2.0."""

    type: str
    """The action's ``type`` string, e.g. ``"session/delta"``."""
    channel_kind: ChannelKind
    """The kind of channel (and reducer) the action applies to."""
    client_dispatchable: bool
    """Whether clients may dispatch it (the host may emit every type)."""
    model_def: str
    """Schema definition of the payload (may be a union definition)."""
    introduced_in: str
    """Protocol version that introduced the type."""
    owner_only: bool = False
    """Clients may dispatch it only for a tool call they own (client-provided tools)."""


# (type, client-dispatchable, introduced in 0.2.0) in PROTOCOL.md section 9 order.
# The model definition name is derived: "session/turnStarted" -> "SessionTurnStartedAction".
_CATALOGUE: tuple[tuple[str, bool, bool], ...] = (
    ("root/agentsChanged", False, False),
    ("root/activeSessionsChanged", False, False),
    ("root/terminalsChanged", False, False),
    ("root/configChanged", True, False),
    ("session/ready", False, False),
    ("session/creationFailed", False, False),
    ("session/turnStarted", True, False),
    ("session/delta", False, False),
    ("session/reasoning", False, False),
    ("session/responsePart", False, False),
    ("session/usage", False, False),
    ("session/turnComplete", False, False),
    ("session/turnCancelled", True, False),
    ("session/error", False, False),
    ("session/truncated", True, False),
    ("session/toolCallStart", False, False),
    ("session/toolCallDelta", False, False),
    ("session/toolCallReady", False, False),
    ("session/toolCallConfirmed", True, False),
    ("session/toolCallComplete", True, False),
    ("session/toolCallResultConfirmed", True, False),
    ("session/toolCallContentChanged", True, False),
    ("session/titleChanged", True, False),
    ("session/modelChanged", True, False),
    ("session/agentChanged", True, True),
    ("session/activityChanged", False, False),
    ("session/isReadChanged", True, False),
    ("session/isArchivedChanged", True, False),
    ("session/changesetsChanged", False, True),
    ("session/configChanged", True, False),
    ("session/metaChanged", False, False),
    ("session/serverToolsChanged", False, False),
    ("session/activeClientChanged", True, False),
    ("session/activeClientToolsChanged", True, False),
    ("session/pendingMessageSet", True, False),
    ("session/pendingMessageRemoved", True, False),
    ("session/queuedMessagesReordered", True, False),
    ("session/inputRequested", False, False),
    ("session/inputAnswerChanged", True, False),
    ("session/inputCompleted", True, False),
    ("session/customizationsChanged", False, False),
    ("session/customizationToggled", True, False),
    ("session/customizationUpdated", False, False),
    ("session/customizationRemoved", False, True),
    ("terminal/data", False, False),
    ("terminal/input", True, False),
    ("terminal/resized", True, False),
    ("terminal/claimed", True, False),
    ("terminal/titleChanged", True, False),
    ("terminal/cwdChanged", False, False),
    ("terminal/exited", False, False),
    ("terminal/cleared", True, False),
    ("terminal/commandDetectionAvailable", False, False),
    ("terminal/commandExecuted", False, False),
    ("terminal/commandFinished", False, False),
    ("changeset/statusChanged", False, True),
    ("changeset/fileSet", False, True),
    ("changeset/fileRemoved", False, True),
    ("changeset/operationsChanged", False, True),
    ("changeset/cleared", False, True),
    ("resourceWatch/changed", False, True),
)

_OWNER_ONLY = frozenset({"session/toolCallComplete", "session/toolCallContentChanged"})


def _model_def(action_type: str) -> str:
    prefix, name = action_type.split("/", 1)
    return f"{prefix[0].upper()}{prefix[1:]}{name[0].upper()}{name[1:]}Action"


def _spec(action_type: str, by_client: bool, new_in_0_2: bool) -> ActionSpec:
    kind = action_type.split("/", 1)[0]
    if kind not in CHANNEL_KINDS:
        raise ValueError(f"action {action_type!r} has no known channel kind")
    return ActionSpec(
        type=action_type,
        channel_kind=kind,
        client_dispatchable=by_client,
        model_def=_model_def(action_type),
        introduced_in="0.2.0" if new_in_0_2 else "0.1.0",
        owner_only=action_type in _OWNER_ONLY,
    )


ACTIONS: dict[str, ActionSpec] = {spec.type: spec for spec in (_spec(*row) for row in _CATALOGUE)}
CLIENT_DISPATCHABLE: frozenset[str] = frozenset(t for t, s in ACTIONS.items() if s.client_dispatchable)


def channel_kind_of(action_type: str) -> ChannelKind | None:
    """The channel kind named by an action type's prefix, known type or not."""
    prefix = action_type.split("/", 1)[0] if isinstance(action_type, str) else ""
    return prefix if prefix in CHANNEL_KINDS else None


def action_model(action_type: str) -> TypeAdapter[Any]:
    """A ``TypeAdapter`` validating the payload shape of ``action_type``.

    Raises ``KeyError`` for a type that is not in the 0.2.0 catalogue. Imports the
    generated models on first use.
    """
    return adapter_for(ACTIONS[action_type].model_def)


def state_action_model() -> TypeAdapter[Any]:
    """A ``TypeAdapter`` for any known action (the schema's ``StateAction`` union)."""
    return adapter_for("StateAction")
