"""Where the chat client finds the host URL and token."""

from __future__ import annotations

from pathlib import Path

import pytest

from chat._settings import ChatSettingsError, display_url, resolve_settings


def test_the_printed_url_carries_its_token_and_flags_win(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path), "AGENT_HOST_TOKEN": "from-env"}
    settings = resolve_settings("ws://127.0.0.1:5/?token=abc", None, environ=env)
    assert (settings.url, settings.token) == ("ws://127.0.0.1:5/", "abc")
    assert resolve_settings("ws://127.0.0.1:5/?token=abc", "flag", environ=env).token == "flag"
    assert resolve_settings("ws://h:1/", None, environ=env).token == "from-env"


def test_environment_then_config_file_then_default(tmp_path: Path) -> None:
    (tmp_path / "agent-host").mkdir()
    (tmp_path / "agent-host" / "client.toml").write_text('url = "ws://file:1/?token=t1"\nagent = "offline"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    settings = resolve_settings(None, None, environ=env)
    assert (settings.url, settings.token, settings.agent) == ("ws://file:1/", "t1", "offline")
    settings = resolve_settings(None, None, environ={**env, "AGENT_HOST_URL": "ws://env:2/", "AGENT_HOST_TOKEN": "t2"})
    assert (settings.url, settings.token) == ("ws://env:2/", "t2")
    assert resolve_settings(None, None, environ={"XDG_CONFIG_HOME": str(tmp_path / "none")}).url == "ws://127.0.0.1:8765/"


def test_config_file_errors_name_the_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "client.toml"
    config.write_text('url = "ws://h:1/"\ntokn = "x"\n')
    with pytest.raises(ChatSettingsError, match="unknown key 'tokn'"):
        resolve_settings(None, None, environ={"AGENT_HOST_CLIENT_CONFIG": str(config)})
    config.write_text("url = 5\n")
    with pytest.raises(ChatSettingsError, match="url must be a string"):
        resolve_settings(None, None, environ={"AGENT_HOST_CLIENT_CONFIG": str(config)})
    with pytest.raises(ChatSettingsError, match="does not exist"):
        resolve_settings(None, None, environ={"AGENT_HOST_CLIENT_CONFIG": str(tmp_path / "missing.toml")})
    with pytest.raises(ChatSettingsError, match="ws://"):
        resolve_settings("http://h/", None, environ={"XDG_CONFIG_HOME": str(tmp_path)})


def test_display_url_drops_the_token() -> None:
    assert display_url("ws://h:1/ahp?token=secret&x=1") == "ws://h:1/ahp?x=1"


def test_the_terminals_look_and_keys_come_from_the_file_and_flags_win(tmp_path: Path) -> None:
    config = tmp_path / "client.toml"
    config.write_text('theme = "light"\nediting_mode = "vi"\nnotify = "osc777"\nnotify_after = 5\n')
    env = {"AGENT_HOST_CLIENT_CONFIG": str(config)}
    settings = resolve_settings(None, None, environ=env)
    assert (settings.theme, settings.editing_mode, settings.notify, settings.notify_after) == ("light", "vi", "osc777", 5.0)
    settings = resolve_settings(None, None, theme="dark", editing_mode="emacs", environ=env)
    assert (settings.theme, settings.editing_mode) == ("dark", "emacs")
    defaults = resolve_settings(None, None, environ={"XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert (defaults.theme, defaults.editing_mode, defaults.notify, defaults.notify_after) == ("auto", "emacs", "auto", 30.0)


def test_a_setting_outside_its_choices_names_the_choices(tmp_path: Path) -> None:
    config = tmp_path / "client.toml"
    env = {"AGENT_HOST_CLIENT_CONFIG": str(config)}
    config.write_text('theme = "solarized"\n')
    with pytest.raises(ChatSettingsError, match="theme must be one of auto, dark, light, not 'solarized'"):
        resolve_settings(None, None, environ=env)
    config.write_text('editing_mode = "vim"\n')
    with pytest.raises(ChatSettingsError, match="editing_mode must be one of emacs, vi, not 'vim'"):
        resolve_settings(None, None, environ=env)
    config.write_text('notify_after = "soon"\n')
    with pytest.raises(ChatSettingsError, match="notify_after must be a number of seconds"):
        resolve_settings(None, None, environ=env)
