"""ahp.jsonrpc.action_frame: an action frame carries exactly the envelope text the journal keeps."""

from __future__ import annotations

import json

from ahp.jsonrpc import action_frame, encode, stamped_action_frame


def test_an_action_frame_carries_the_journaled_envelope_text() -> None:
    envelope = {"channel": "ahp-session:/s", "action": {"type": "session/delta", "content": "hé"}, "serverSeq": 3}
    text, frame = action_frame(envelope)
    assert json.loads(text) == envelope
    assert json.loads(frame) == {"jsonrpc": "2.0", "method": "action", "params": envelope}


def test_a_frame_stamped_on_the_unnumbered_text_is_the_frame_of_the_numbered_envelope() -> None:
    # A networked log sends the envelope without its number and learns the number from the answer.
    unnumbered = {"channel": "ahp-chat://default/cw", "action": {"type": "chat/delta", "content": "hé \"x\"}"},
                  "origin": {"clientId": "c", "clientSeq": 2}}
    text, frame = stamped_action_frame(encode(unnumbered), 12345)
    assert (text, frame) == action_frame({**unnumbered, "serverSeq": 12345})
    assert json.loads(frame)["params"]["serverSeq"] == 12345
