"""``host.reload``: which keys of an edited config a running host takes on, and which wait."""

from __future__ import annotations

from host.config import load_config
from host.reload import config_changes, merged


def _config(text: str, tmp_path, environ=None):
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, environ=environ or {})


AGENT = '[agents.a]\nkind = "openai-chat"\nbase_url = "http://127.0.0.1:9/v1"\nmodels = [{id = "m"}]\n'


def test_agents_permission_rules_and_the_default_agent_are_taken_on_the_rest_waits(tmp_path) -> None:
    running = _config(AGENT, tmp_path)
    edited = _config(AGENT.replace('id = "m"', 'id = "n"') + '[tools]\nallow = ["read_file"]\nsandbox = "off"\n'
                     '[sessions]\ndefault_agent = "a"\n[mcp]\nidle_stop = 5\n', tmp_path)
    changes = config_changes(running, edited)
    assert changes.applied == ("agents", "sessions.default_agent", "tools.allow")
    assert changes.pending == ("mcp.idle_stop", "tools.sandbox")
    after = merged(running, edited)
    assert [m.id for m in after.agents["a"].models] == ["n"] and after.tools.allow == ["read_file"]
    assert after.tools.sandbox == running.tools.sandbox and after.mcp.idle_stop == running.mcp.idle_stop


def test_an_unchanged_file_changes_nothing_and_a_new_key_in_the_environment_is_an_agents_change(tmp_path) -> None:
    running = _config(AGENT, tmp_path)
    assert config_changes(running, _config(AGENT, tmp_path)) == config_changes(running, running)
    assert config_changes(running, running).applied == () and config_changes(running, running).pending == ()
    keyed = _config(AGENT, tmp_path, environ={"OPENAI_API_KEY": "sk-x"})
    assert config_changes(running, keyed).applied == ("agents",)
