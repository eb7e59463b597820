"""ahp.jsonrpc.action_frame: an action frame carries exactly the envelope text the journal keeps."""

from __future__ import annotations

import json

from ahp.jsonrpc import action_frame


def test_an_action_frame_carries_the_journaled_envelope_text() -> None:
    envelope = {"channel": "ahp-session:/s", "action": {"type": "session/delta", "content": "hé"}, "serverSeq": 3}
    text, frame = action_frame(envelope)
    assert json.loads(text) == envelope
    assert json.loads(frame) == {"jsonrpc": "2.0", "method": "action", "params": envelope}
