"""The ``autoApprove`` session config property: declared boolean, and validation holds clients to it."""

from __future__ import annotations

import pytest

from host.runtime.tools import AUTO_APPROVE, with_auto_approve
from host.transport.validation import check_client_action


def _state() -> dict:
    return {"config": with_auto_approve(None, None, False)}


def _change(value) -> dict:
    return {"type": "session/configChanged", "config": {AUTO_APPROVE: value}}


@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_auto_approve_change_is_accepted(value: bool) -> None:
    assert check_client_action("session", _state(), _change(value), "c1") is None


@pytest.mark.parametrize("value", ["yes", "true", 1, 0, None, [True], {"on": True}])
def test_a_non_boolean_auto_approve_change_is_refused_naming_the_key_and_value(value) -> None:
    reason = check_client_action("session", _state(), _change(value), "c1")
    assert reason is not None
    assert "'autoApprove'" in reason and "true or false" in reason
    assert "Traceback" not in reason and "validation error" not in reason
