"""Session and chat URIs between 0.2.0 (``ahp-session:/<id>``) and the internal model
(``<provider>:/<id>``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ahp.dialects.v0_2.uris import (
    default_chat_uri,
    internal_session_uri,
    session_id,
    session_of_default_chat,
    v02_session_uri,
)

SESSIONS = {"6f1c": "copilot", "abc": "p"}


def provider_of(ident: str) -> str | None:
    return SESSIONS.get(ident)


def test_a_session_made_by_a_0_9_0_client_has_a_0_2_0_name_and_back():
    assert v02_session_uri("copilot:/6f1c") == "ahp-session:/6f1c"
    assert internal_session_uri("ahp-session:/6f1c", provider_of) == "copilot:/6f1c"


def test_a_session_made_by_a_0_2_0_client_is_named_by_its_provider_internally():
    assert internal_session_uri("ahp-session:/abc", "p") == "p:/abc"
    assert v02_session_uri("p:/abc") == "ahp-session:/abc"


def test_a_session_the_host_does_not_know_has_no_internal_name():
    assert internal_session_uri("ahp-session:/nope", provider_of) is None
    assert internal_session_uri("copilot:/6f1c", provider_of) is None  # not a 0.2.0 session name
    assert internal_session_uri("ahp-session:/", provider_of) is None


def test_an_internal_uri_without_a_path_is_invisible_to_0_2_0():
    for uri in ("urn:x", "copilot:", "copilot:/", ":/x", 42, None):
        assert v02_session_uri(uri) is None


def test_session_id_reads_only_0_2_0_session_uris():
    assert session_id("ahp-session:/s") == "s"
    assert session_id("ahp-session://host/x") == "/host/x"
    assert session_id("ahp-terminal:/t") is None


ids = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)
providers = st.from_regex(r"[a-z][a-z0-9+.-]{0,15}", fullmatch=True)


@given(providers, ids)
def test_down_then_up_is_the_identity_for_every_provider_and_id(provider, ident):
    internal = f"{provider}:/{ident}"
    name = v02_session_uri(internal)
    assert name == "ahp-session:/" + ident
    assert internal_session_uri(name, lambda seen: provider if seen == ident else None) == internal


@given(providers, ids)
def test_the_default_chat_names_its_session(provider, ident):
    internal = f"{provider}:/{ident}"
    chat = default_chat_uri(internal)
    assert chat.startswith("ahp-chat://default/") and "=" not in chat
    assert session_of_default_chat(chat) == internal


def test_the_default_chat_uri_is_the_one_vs_code_uses():
    # base64url("copilot:/abc") without padding
    assert default_chat_uri("copilot:/abc") == "ahp-chat://default/Y29waWxvdDovYWJj"
