"""What a channel URI proves about its channel, and the chat URIs a session owns."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ahp.state import CHANNEL_KINDS, REDUCERS, channel_kind, default_chat_uri, session_of_default_chat
from ahp.state.channels import (
    annotations_uri,
    chat_uri,
    parse_chat_uri,
    parse_subagent_chat_uri,
    session_of_annotations,
    subagent_chat_uri,
)


@pytest.mark.parametrize(
    ("uri", "kind"),
    [
        ("ahp-root://", "root"),
        ("ahp-root:///", None),
        ("ahp-chat://default/Y29waWxvdDovYWJj", "chat"),
        ("ahp-chat:/c1", "chat"),
        ("ahp-terminal:/t1", "terminal"),
        ("ahp-changeset:/s1/uncommitted", "changeset"),
        ("ahp-resource-watch:/w1", "resourceWatch"),
        ("ahp-automations://", "automation"),
        ("ahp-automation-run:/r1", "automationRun"),
        ("copilot:/6f1c2f0e-1b1a-4c36-9d8e-3f0d1e7b8a90", "session"),
        ("ahp-session:/s1", "session"),
        ("copilot:/s1/annotations", "annotations"),
        ("ahp-session:/s1/annotations", "annotations"),
        ("ahp-automation:/a1", None),
        ("ahp-otlp://logs/info", None),
        ("ahp-canvas:/c", None),
        ("x-vendor:/thing", None),
        ("x-vendor:/thing/annotations", None),
        ("copilot:", None),
        ("no scheme", None),
        ("/annotations", None),
        ("", None),
        (None, None),
        (42, None),
    ],
)
def test_channel_kind(uri, kind):
    assert channel_kind(uri) == kind


def test_every_kind_has_a_reducer():
    assert set(REDUCERS) == set(CHANNEL_KINDS)


def test_the_default_chat_uri_is_vs_code_s():
    session = "copilot:/6f1c2f0e-1b1a-4c36-9d8e-3f0d1e7b8a90"
    encoded = base64.urlsafe_b64encode(session.encode()).decode().rstrip("=")
    assert default_chat_uri(session) == f"ahp-chat://default/{encoded}"
    assert "=" not in default_chat_uri("a:/b") and "+" not in default_chat_uri("a:/>>>?") and "/" not in encoded
    assert channel_kind(default_chat_uri(session)) == "chat"


@given(st.text(min_size=1).map(lambda rest: "provider:/" + rest), st.sampled_from(["default", "subagent", "side-1"]))
def test_chat_uris_parse_back_to_their_session(session, name):
    assert parse_chat_uri(chat_uri(session, name)) == (name, session)
    if name == "default":
        assert session_of_default_chat(default_chat_uri(session)) == session
    else:
        assert session_of_default_chat(chat_uri(session, name)) is None


@pytest.mark.parametrize(
    "uri",
    [
        "ahp-chat://default/",  # no id
        "ahp-chat://default/%%%",  # not base64url
        "ahp-chat://default/Y29waWxvdDovYWJj=",  # padded
        "ahp-chat://default/YTovYh",  # decodes to "a:/b", but only "YTovYg" encodes it
        "ahp-chat://default/bm9zY2hlbWU",  # "noscheme": not a URI
        "ahp-chat:/c1",
        "copilot:/s1",
        None,
    ],
)
def test_only_chat_uris_of_that_shape_name_a_session(uri):
    assert parse_chat_uri(uri) is None
    assert session_of_default_chat(uri) is None


def test_a_sub_agent_chat_uri_is_the_one_vs_code_parses():
    # VS Code 1.139.1: `ahp-chat://subagent/<base64-session>/<toolCallId>` (chatIdFromResource).
    session = "copilotcli:/session"
    assert subagent_chat_uri(session, "toolu_01") == "ahp-chat://subagent/Y29waWxvdGNsaTovc2Vzc2lvbg/toolu_01"
    assert channel_kind(subagent_chat_uri(session, "toolu_01")) == "chat"


@given(st.text(min_size=1).map(lambda rest: "provider:/" + rest), st.text(min_size=1))
def test_sub_agent_chat_uris_parse_back_to_their_session_and_tool_call(session, tool_call_id):
    uri = subagent_chat_uri(session, tool_call_id)
    assert parse_subagent_chat_uri(uri) == (session, tool_call_id)
    assert parse_chat_uri(uri) == ("subagent", session)
    assert session_of_default_chat(uri) is None
    assert parse_subagent_chat_uri(chat_uri(session, "subagent")) is None


@pytest.mark.parametrize(
    "uri",
    [
        "ahp-chat://subagent/YTovYg",  # no tool call
        "ahp-chat://subagent/YTovYg/",  # empty tool call
        "ahp-chat://subagent/YTovYh/call-1",  # not the canonical encoding of its session
        "ahp-chat://subagent/YTovYg/a%2fb",  # lower-case escape: not what the host builds
        "ahp-chat://subagent/YTovYg/a/b",  # a slash left unescaped
        "ahp-chat://subagent/bm9zY2hlbWU/call-1",  # "noscheme": not a URI
        None,
    ],
)
def test_only_canonical_sub_agent_chat_uris_parse(uri):
    assert parse_subagent_chat_uri(uri) is None


def test_annotations_channels_belong_to_their_session():
    assert annotations_uri("copilot:/s1") == "copilot:/s1/annotations"
    assert session_of_annotations("copilot:/s1/annotations") == "copilot:/s1"
    assert session_of_annotations("ahp-chat:/c1/annotations") is None
    assert session_of_annotations("copilot:/s1") is None
