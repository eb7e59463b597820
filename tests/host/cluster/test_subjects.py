"""Owner groups and subjects: a session's channels share a group; a terminal, changeset or watch is a group of its own; the root is the host's, shared."""

from __future__ import annotations

from ahp.state.channels import ROOT_CHANNEL, annotations_uri, chat_uri, default_chat_uri, subagent_chat_uri
from host.cluster.subjects import HOST_GROUP, Subjects, channel_of, group_of, is_shared, token, untoken

SESSION = "copilot:/0b6f-41"


def test_a_sessions_chats_and_annotations_belong_to_the_session() -> None:
    for channel in (SESSION, default_chat_uri(SESSION), chat_uri(SESSION, "side"),
                    subagent_chat_uri(SESSION, "call 1/x"), annotations_uri(SESSION)):
        assert group_of(channel) == SESSION


def test_the_root_and_channels_of_no_known_kind_belong_to_the_host_and_are_shared() -> None:
    for channel in (ROOT_CHANNEL, "ahp-chat://default/not-base64!", "", "x-y:z"):
        assert group_of(channel) == HOST_GROUP
        assert is_shared(channel)


def test_a_terminal_a_changeset_and_a_watch_are_each_a_group_of_their_own() -> None:
    for channel in ("ahp-terminal:/t1", "ahp-changeset:/c", "ahp-resource-watch:/w"):
        assert group_of(channel) == channel
        assert not is_shared(channel)
    assert not is_shared(SESSION) and not is_shared(default_chat_uri(SESSION))


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


def _matches(pattern: str, subject: str) -> bool:
    """NATS subject matching (``*`` one token, ``>`` the rest)."""
    wanted, tokens = pattern.split("."), subject.split(".")
    for index, part in enumerate(wanted):
        if part == ">":
            return len(tokens) > index
        if index >= len(tokens) or (part != "*" and part != tokens[index]):
            return False
    return len(tokens) == len(wanted)


def test_a_chats_streamed_text_is_on_a_subject_of_its_own_under_its_group_and_outside_the_coarse_filter() -> None:
    subjects = Subjects("ahp.log")
    chat = default_chat_uri(SESSION)
    text, group = subjects.of(chat, streamed=True)
    other, _ = subjects.of(chat)
    assert group == SESSION and text != other
    assert _matches(subjects.group_filter(SESSION), text)  # fenced with the rest of its group
    assert _matches(subjects.streamed_filter(SESSION), text) and not _matches(subjects.streamed_filter("copilot:/other"), text)
    assert not _matches(subjects.coarse, text)
    for channel in (SESSION, chat, annotations_uri(SESSION), ROOT_CHANNEL, "ahp-terminal:/t1"):
        assert _matches(subjects.coarse, subjects.of(channel)[0]) and not _matches(subjects.streamed_filter(SESSION), subjects.of(channel)[0])
    assert _matches(subjects.coarse, subjects.marker(SESSION))


def test_a_sessions_own_channels_are_named_relative_to_it_and_read_back_as_they_were() -> None:
    subjects = Subjects("ahp.log")
    session = "openai-chat:/0b6f41d2-8c1e-4c3b-9a57-3f1e2d4c5b6a"
    for channel in (session, default_chat_uri(session), chat_uri(session, "side"), "ahp-terminal:/t1"):
        subject, group = subjects.of(channel)
        group_token, channel_token = subject.split(".")[2:4]
        assert channel_token.startswith("=") and len(channel_token) < 12  # not the URI's base64 (over 100 characters)
        assert channel_of(group_token, channel_token) == channel
        streamed, _ = subjects.of(channel, streamed=True)
        assert channel_of(*streamed.split(".")[2:4]) == channel
    # Channels the group's URI does not rebuild keep their URI's token; streams written before read the same.
    for channel in (annotations_uri(session), subagent_chat_uri(session, "call 1/x"), ROOT_CHANNEL):
        subject, group = subjects.of(channel)
        assert subject == f"ahp.log.{token(group)}.{token(channel)}"
        assert channel_of(*subject.split(".")[2:4]) == channel
    assert channel_of(token(session), token(default_chat_uri(session))) == default_chat_uri(session)
    assert channel_of("not base64!", "=") is None
