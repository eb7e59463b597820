"""What a channel URI proves about its channel, and the chat URIs a session owns."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ahp.state import CHANNEL_KINDS, REDUCERS, channel_kind, default_chat_uri, session_of_default_chat
from ahp.state.channels import annotations_uri, chat_uri, parse_chat_uri, session_of_annotations


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


def test_annotations_channels_belong_to_their_session():
    assert annotations_uri("copilot:/s1") == "copilot:/s1/annotations"
    assert session_of_annotations("copilot:/s1/annotations") == "copilot:/s1"
    assert session_of_annotations("ahp-chat:/c1/annotations") is None
    assert session_of_annotations("copilot:/s1") is None
