"""Owner groups and subjects: a session's channels share a group, everything else the host's."""

from __future__ import annotations

from ahp.state.channels import ROOT_CHANNEL, annotations_uri, chat_uri, default_chat_uri, subagent_chat_uri
from host.cluster.subjects import HOST_GROUP, Subjects, group_of, token, untoken

SESSION = "copilot:/0b6f-41"


def test_a_sessions_chats_and_annotations_belong_to_the_session() -> None:
    for channel in (SESSION, default_chat_uri(SESSION), chat_uri(SESSION, "side"),
                    subagent_chat_uri(SESSION, "call 1/x"), annotations_uri(SESSION)):
        assert group_of(channel) == SESSION


def test_channels_of_no_session_belong_to_the_host() -> None:
    for channel in (ROOT_CHANNEL, "ahp-terminal:/t1", "ahp-changeset:/c", "ahp-chat://default/not-base64!", "", "x-y:z"):
        assert group_of(channel) == HOST_GROUP


def test_every_uri_is_one_subject_token_and_comes_back() -> None:
    for uri in (SESSION, "ahp-chat://subagent/abc/call%201", "file:///a b/ü.py", "a.b*c>d"):
        encoded = token(uri)
        assert not set(encoded) & {".", "*", ">", " "}
        assert untoken(encoded) == uri
    assert untoken("~") is None


def test_a_channel_s_subject_falls_under_its_group_s_filter_and_marker() -> None:
    subjects = Subjects("ahp.log")
    subject, group = subjects.of(default_chat_uri(SESSION))
    assert group == SESSION
    assert subject.startswith(subjects.group_filter(SESSION)[:-1])
    assert subjects.marker(SESSION).startswith(subjects.group_filter(SESSION)[:-1])
    assert subjects.marker(SESSION) != subjects.of(SESSION)[0]
