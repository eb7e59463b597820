"""Loading plugins from disk: runtime model, broken and degraded plugins, diagnostics."""

from __future__ import annotations

import json
from pathlib import Path

from plugins import HookEvent, LifecyclePoint, Severity, discover_plugins, load_plugin, load_plugins

from .conftest import SAMPLES


def _problems(plugin) -> list[str]:
    return [str(d) for d in plugin.diagnostics if d.severity is Severity.PROBLEM]


def _warnings(plugin) -> list[str]:
    return [str(d) for d in plugin.diagnostics if d.severity is Severity.WARNING]


def test_toolkit_runtime_model_matches_the_expected_runtime_checks() -> None:
    runtime = json.loads((SAMPLES / "expected/sample-toolkit.json").read_text())["runtime"]
    plugin = load_plugin(SAMPLES / "sample-toolkit")
    invocable = [*plugin.skills, *plugin.commands]
    assert sorted(f"/{plugin.name}:{item.name}" for item in invocable) == sorted(runtime["slashCommands"])
    assert sorted(i.name for i in invocable if not i.disable_model_invocation) == sorted(runtime["modelInvocableSkills"])
    assert sorted(i.name for i in invocable if i.disable_model_invocation) == sorted(runtime["userOnlySkills"])
    assert [a.name for a in plugin.agents] == runtime["selectableAgents"]
    rules = {r.name: r for r in plugin.rules}
    assert [n for n, r in rules.items() if r.activation == "always"] == runtime["rules"]["alwaysInjected"]
    assert rules["python-style"].activation == "always_for_matching_files"
    assert list(rules["python-style"].globs) == runtime["rules"]["injectedWhenMatchingFilesInPlay"]["python-style"]
    assert rules["sql-migrations"].activation == "on_request_for_matching_files"
    assert rules["commit-messages"].activation == "on_request"


def test_toolkit_skill_agent_and_rule_bodies_are_the_text_after_the_frontmatter() -> None:
    plugin = load_plugin(SAMPLES / "sample-toolkit")
    skill = next(s for s in plugin.skills if s.name == "release-notes")
    assert skill.body.startswith("# Release notes")
    assert skill.allowed_tools == ("Bash(git log:*)", "Bash(git describe:*)", "Read")
    assert skill.folder == (SAMPLES / "sample-toolkit/skills/release-notes").resolve()
    agent = plugin.agents[0]
    assert agent.body.startswith("You review changes to a public HTTP API.")
    assert agent.tools is None and agent.model is None
    triage = next(c for c in plugin.commands if c.name == "triage")
    assert triage.argument_hint == "[path]"
    assert "---" not in triage.body.splitlines()[0]


def test_toolkit_mcp_server_is_expanded_with_plugin_root_env_and_cwd() -> None:
    root = (SAMPLES / "sample-toolkit").resolve()
    (server,) = load_plugin(SAMPLES / "sample-toolkit").mcp_servers
    assert (server.name, server.transport, server.command) == ("tiny", "stdio", "python3")
    assert server.args == (f"{root}/servers/tiny_mcp.py",)
    assert server.cwd == root
    assert server.env["PLUGIN_ROOT"] == str(root)
    assert server.env["SAMPLE_GREETING"] == "hello from sample-toolkit"
    assert server.env["SAMPLE_DATA_DIR"] == f"{root}/servers"


def test_toolkit_hooks_map_events_to_lifecycle_points_and_expand_commands() -> None:
    root = (SAMPLES / "sample-toolkit").resolve()
    plugin = load_plugin(SAMPLES / "sample-toolkit")
    events = [hook.event for hook in plugin.hooks]
    assert HookEvent.PRE_TOOL_USE in events and len(events) == 8  # SomeFutureEvent ignored
    guard = next(h for h in plugin.hooks if h.matcher)
    assert guard.point is LifecyclePoint.BEFORE_TOOL_CALL
    assert guard.command == f"{root}/scripts/guard-shell.sh"
    assert guard.timeout == 10
    assert guard.matches("bash") and guard.matches("run_in_terminal") and not guard.matches("read_file")
    post = next(h for h in plugin.hooks if h.event is HookEvent.POST_TOOL_USE)
    assert post.point is LifecyclePoint.AFTER_TOOL_CALL
    assert post.matches("write_file") and not post.matches("read_file")
    assert all(h.timeout == 60 for h in plugin.hooks if h is not guard)


def test_broken_manifest_is_an_error_that_exposes_nothing_runnable() -> None:
    plugin = load_plugin(SAMPLES / "sample-broken")
    assert plugin.state.kind == "error"
    assert ".plugin/plugin.json" in plugin.state.message and "line 5, column 3" in plugin.state.message
    assert plugin.name == "sample-broken"
    assert plugin.hooks == () and plugin.mcp_servers == () and plugin.skills == ()
    assert plugin.commands == () and plugin.agents == () and plugin.rules == ()


def test_degraded_plugin_keeps_what_loaded_and_reports_what_was_skipped() -> None:
    plugin = load_plugin(SAMPLES / "sample-degraded")
    assert plugin.state.kind == "degraded"
    assert [s.name for s in plugin.skills] == ["healthy-skill"]
    assert _problems(plugin) == [
        "plugin sample-degraded ==> skills/bare-notes/SKILL.md ==> frontmatter: "
        "no YAML frontmatter, so the skill has no description; skipped"
    ]
    assert "scratch" not in plugin.state.message  # a folder without SKILL.md is silently not a skill
    (ghost,) = plugin.mcp_servers
    assert ghost.path.name == "plugin.json" and ghost.env["GHOST_HOME"] == str(plugin.root)
    assert ghost.range is not None and ghost.range.start.line == 8


def test_unknown_keys_warn_with_their_path_and_do_not_degrade(make_plugin) -> None:
    root = make_plugin({
        ".plugin/plugin.json": json.dumps({"name": "demo", "colour": "red"}),
        "skills/alpha/SKILL.md": "---\ndescription: Alpha.\nflavour: x\n---\nBody\n",
        ".mcp.json": json.dumps({"mcpServers": {"s": {"command": "x", "restart": True}}}),
    })
    plugin = load_plugin(root)
    assert plugin.state.kind == "loaded"
    assert _warnings(plugin) == [
        "plugin demo ==> .plugin/plugin.json ==> colour: unknown manifest key (ignored)",
        "plugin demo ==> skills/alpha/SKILL.md ==> frontmatter ==> flavour: unknown skill frontmatter key (ignored)",
        "plugin demo ==> .mcp.json ==> mcpServers ==> s ==> restart: unknown MCP server key (ignored)",
    ]


def test_bad_values_and_bad_files_degrade_with_file_and_key_paths(make_plugin) -> None:
    root = make_plugin({
        ".plugin/plugin.json": json.dumps({"name": "demo"}),
        "skills/alpha/SKILL.md": "---\ndescription: Alpha.\ndisable-model-invocation: maybe\n---\nBody\n",
        "agents/helper.md": "---\nname: helper\n---\nNo description.\n",
        "hooks/hooks.json": "{ not json",
        "rules/bad.mdc": "---\ndescription: [unclosed\n---\nx\n",
    })
    plugin = load_plugin(root)
    assert plugin.state.kind == "degraded"
    problems = _problems(plugin)
    assert ("plugin demo ==> skills/alpha/SKILL.md ==> frontmatter ==> disable-model-invocation: "
            "expected true or false, got 'maybe' (ignored)") in problems
    assert "plugin demo ==> agents/helper.md ==> frontmatter ==> description: an agent needs a description; skipped" in problems
    assert any(p.startswith("plugin demo ==> hooks/hooks.json: not valid JSON:") and "line 1" in p for p in problems)
    # Frontmatter that is not YAML is read leniently (as Claude Code does), with a warning.
    assert any(w.startswith("plugin demo ==> rules/bad.mdc ==> frontmatter: frontmatter is not valid YAML")
               and w.endswith("read as plain 'key: value' lines instead") for w in _warnings(plugin))
    assert [r.description for r in plugin.rules] == ["[unclosed"]
    assert [s.name for s in plugin.skills] == ["alpha"] and plugin.agents == () and plugin.hooks == ()
    for problem in problems:
        assert "Traceback" not in problem and plugin.state.message.count(problem) == 1


def test_plugin_without_manifest_is_named_after_its_folder(make_plugin) -> None:
    root = make_plugin({"commands/hello.md": "Say hello to $ARGUMENTS.\n"}, name="bare-plugin")
    plugin = load_plugin(root)
    assert (plugin.name, plugin.state.kind, plugin.manifest_path) == ("bare-plugin", "loaded", None)
    assert plugin.commands[0].render("Ada") == "Say hello to Ada.\n"


def test_vendor_manifest_is_found_and_invalid_name_falls_back(make_plugin) -> None:
    root = make_plugin({".claude-plugin/plugin.json": json.dumps({"name": "Not Valid"})}, name="vendor")
    plugin = load_plugin(root)
    assert plugin.manifest_path == root.resolve() / ".claude-plugin/plugin.json"
    assert plugin.name == "vendor" and plugin.state.kind == "degraded"
    assert "==> name: 'Not Valid' is not a valid plugin name" in plugin.state.message


def test_declared_paths_supplement_or_replace_defaults_and_may_not_escape(make_plugin) -> None:
    root = make_plugin({
        ".plugin/plugin.json": json.dumps({
            "name": "demo",
            "commands": ["../outside/", "./more/", "./absent/"],
            "agents": {"paths": ["./team-agents"], "exclusive": True},
        }),
        "commands/a.md": "A", "more/b.md": "B",
        "agents/ignored.md": "---\ndescription: default folder, replaced\n---\n",
        "team-agents/kept.md": "---\ndescription: declared folder\n---\n",
    })
    plugin = load_plugin(root)
    assert [c.name for c in plugin.commands] == ["a", "b"]
    assert [a.name for a in plugin.agents] == ["kept"]
    assert plugin.state.kind == "degraded"
    assert "plugin demo ==> .plugin/plugin.json ==> commands: path '../outside/' escapes the plugin root" in plugin.state.message
    assert "plugin demo ==> .plugin/plugin.json ==> commands: declared path './absent/' does not exist" in plugin.state.message


def test_inline_hooks_and_flat_inline_mcp_servers_in_the_manifest(make_plugin) -> None:
    manifest = {
        "name": "demo",
        "hooks": {"preToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "${PLUGIN_ROOT}/g.sh"}]}],
                  "sessionStart": [{"hooks": [{"type": "prompt", "prompt": "ignored"}]}]},
        "mcpServers": {"web": {"type": "http", "url": "https://example.invalid/mcp",
                               "headers": {"X-Root": "${PLUGIN_ROOT}", "X-Token": "${DEMO_TOKEN:-none}"}}},
    }
    root = make_plugin({".plugin/plugin.json": json.dumps(manifest, indent=2)})
    plugin = load_plugin(root, environ={})
    (hook_file,) = plugin.hook_files
    assert hook_file.name == ".plugin/plugin.json#hooks" and hook_file.range is not None
    (hook,) = plugin.hooks
    assert hook.event is HookEvent.PRE_TOOL_USE and hook.command == f"{root.resolve()}/g.sh"
    (server,) = plugin.mcp_servers
    assert (server.transport, server.url) == ("http", "https://example.invalid/mcp")
    assert server.headers == {"X-Root": str(root.resolve()), "X-Token": "none"}
    assert plugin.state.kind == "loaded"


def test_relative_working_directories_of_hooks_and_servers_resolve_in_the_plugin(make_plugin) -> None:
    manifest = {
        "name": "demo",
        "hooks": {"sessionStart": [{"hooks": [{"type": "command", "command": "./start.sh", "cwd": "scripts"}]}]},
        "mcpServers": {"local": {"type": "local", "command": "node", "args": ["srv.js"], "cwd": "server"},
                       "plain": {"command": "node"}},
    }
    root = make_plugin({".plugin/plugin.json": json.dumps(manifest)})
    plugin = load_plugin(root, environ={})
    (hook,) = plugin.hooks
    assert hook.cwd == root.resolve() / "scripts"
    local, plain = plugin.mcp_servers
    assert (local.transport, local.cwd, plain.cwd) == ("stdio", root.resolve() / "server", root.resolve())
    assert local.env["PLUGIN_ROOT"] == str(root.resolve())


def test_duplicate_mcp_server_names_keep_the_first_and_degrade(make_plugin) -> None:
    root = make_plugin({
        ".plugin/plugin.json": json.dumps({"name": "demo", "mcpServers": {"mcpServers": {"s": {"command": "first"}}}}),
        ".mcp.json": json.dumps({"mcpServers": {"s": {"command": "second"}, "t": {"transport": "ws", "url": "ws://x"}}}),
    })
    plugin = load_plugin(root)
    assert [(s.name, s.command) for s in plugin.mcp_servers] == [("s", "first")]
    assert "duplicate MCP server name 's'" in plugin.state.message
    assert "unsupported MCP transport 'ws'" in plugin.state.message


def test_plugin_data_is_exported_when_the_host_gives_a_data_root(make_plugin, tmp_path: Path) -> None:
    root = make_plugin({".mcp.json": json.dumps({"mcpServers": {"s": {"command": "x", "args": ["${PLUGIN_DATA}/db"]}}})})
    plugin = load_plugin(root, data_root=tmp_path / "data")
    assert plugin.data_dir == tmp_path / "data" / "demo"
    assert plugin.mcp_servers[0].args == (f"{tmp_path}/data/demo/db",)
    assert plugin.mcp_servers[0].env["PLUGIN_DATA"] == str(tmp_path / "data" / "demo")


def test_discovery_accepts_a_plugin_dir_or_a_dir_of_plugins(tmp_path: Path) -> None:
    found = discover_plugins([SAMPLES, SAMPLES / "sample-toolkit", tmp_path / "missing"])
    names = [root.name for root in found.roots]
    assert names == ["sample-broken", "sample-degraded", "sample-toolkit"]  # no repeats, workspace-dirs is not a plugin
    (missing,) = found.diagnostics
    assert "does not exist" in str(missing)
    states = {p.name: p.state.kind for p in load_plugins([SAMPLES])}
    assert states == {"sample-broken": "error", "sample-degraded": "degraded", "sample-toolkit": "loaded"}


def test_missing_plugin_root_is_an_error_not_an_exception(tmp_path: Path) -> None:
    plugin = load_plugin(tmp_path / "nowhere")
    assert plugin.state.kind == "error" and "does not exist" in plugin.state.message


async def test_toolkit_mcp_server_starts_from_the_loaded_parameters(toolkit_copy: Path) -> None:
    """End to end with the official MCP client: ${PLUGIN_ROOT}, env and cwd reach the server."""
    import asyncio
    import os

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    (server,) = load_plugin(toolkit_copy).mcp_servers
    params = StdioServerParameters(command=server.command, args=list(server.args),
                                   env={**os.environ, **server.env}, cwd=server.cwd)

    async def exercise() -> tuple[str, dict]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            assert sorted(t.name for t in tools.tools) == ["echo", "plugin_info"]
            echo = await session.call_tool("echo", {"text": "x"})
            info = await session.call_tool("plugin_info", {})
            return echo.content[0].text, json.loads(info.content[0].text)

    echoed, info = await asyncio.wait_for(exercise(), timeout=30)
    assert echoed == "hello from sample-toolkit: x"
    assert info["PLUGIN_ROOT"] == str(toolkit_copy.resolve())
    assert info["cwd"] == str(toolkit_copy.resolve())


def test_claude_code_agents_whose_frontmatter_is_not_yaml_still_load(make_plugin) -> None:
    # The shape of published Claude Code agents: an unquoted description full of colons and
    # example markup, tools as a comma list, a model alias and a colour.
    root = make_plugin({
        ".claude-plugin/plugin.json": json.dumps({"name": "reviewers"}),
        "agents/code-reviewer.md": (
            "---\n"
            "name: code-reviewer\n"
            "description: Use this agent when the user has finished a change. Examples: <example>Context: The user "
            "wrote a parser. user: \"review it\" assistant: \"I'll use the code-reviewer agent\"</example>\n"
            "tools: Glob, Grep, Read\n"
            "model: sonnet\n"
            "color: red\n"
            "---\n"
            "You are an expert reviewer. Report only problems you are sure of.\n"
        ),
        "commands/ship.md": "---\ndescription: Ship it: build, test, tag\nallowed-tools: Bash(git tag:*), Bash(make:*)\n---\nShip $ARGUMENTS\n",
    })
    plugin = load_plugin(root)
    assert plugin.state.kind != "error"
    agent, = plugin.agents
    assert agent.name == "code-reviewer"
    assert agent.description.startswith("Use this agent when the user has finished a change. Examples: <example>Context:")
    assert agent.body.startswith("You are an expert reviewer.")
    command, = plugin.commands
    assert command.description == "Ship it: build, test, tag"
    assert any("agents/code-reviewer.md ==> frontmatter: frontmatter is not valid YAML" in w for w in _warnings(plugin))


def test_agent_tool_lists_are_read_in_every_shape_authors_write_them(make_plugin) -> None:
    lenient = ('---\nname: strict-yaml-fails\ndescription: Use this agent when: the user says "go": it goes\n'
               'tools: ["Read", "Grep"]\n---\nBody.\n')
    root = make_plugin({
        "agents/flow.md": '---\nname: flow\ndescription: A YAML flow list\ntools: ["Read", "Grep"]\n---\nBody.\n',
        "agents/comma.md": "---\nname: comma\ndescription: A comma string\ntools: Read, Grep, Bash(git log:*)\n---\nBody.\n",
        "agents/block.md": "---\nname: block\ndescription: A YAML block list\ntools:\n  - Read\n  - Grep\n---\nBody.\n",
        "agents/lenient.md": lenient,
    })
    plugin = load_plugin(root)
    tools = {a.name: a.tools for a in plugin.agents}
    assert tools == {"block": ("Read", "Grep"), "comma": ("Read", "Grep", "Bash(git log:*)"), "flow": ("Read", "Grep"),
                     "strict-yaml-fails": ("Read", "Grep")}
    assert plugin.state.kind == "loaded"
    notes = _warnings(plugin)
    assert [n for n in notes if "tools" in n] == [
        "plugin demo ==> agents/lenient.md ==> frontmatter ==> tools: read the text '[\"Read\", \"Grep\"]' as the list "
        "['Read', 'Grep']"]


def test_an_argument_hint_yaml_reads_as_a_list_is_kept_as_its_text_with_a_note(make_plugin) -> None:
    plugin = load_plugin(make_plugin({"commands/review.md": "---\ndescription: Review\nargument-hint: [pr-number]\n---\nReview $1.\n"}))
    assert plugin.state.kind == "loaded"
    assert plugin.commands[0].argument_hint == "[pr-number]"
    assert _warnings(plugin) == ["plugin demo ==> commands/review.md ==> frontmatter ==> argument-hint: YAML read this as a "
                                 "list; kept as the text '[pr-number]'"]


def test_plugin_variables_are_filled_in_in_command_skill_and_agent_bodies(make_plugin, tmp_path: Path) -> None:
    root = make_plugin({
        "commands/go.md": "Run !`${CLAUDE_PLUGIN_ROOT}/bin/go.sh` and read ${CLAUDE_PLUGIN_ROOT}/GUIDE.md; $HOME stays.\n",
        "skills/pdf/SKILL.md": "---\ndescription: PDFs\n---\nSee ${CLAUDE_SKILL_DIR}/forms.md and ${PLUGIN_DATA}/cache.\n",
        "agents/helper.md": "---\ndescription: Helps\n---\nTemplates are in ${CLAUDE_PLUGIN_ROOT}/templates; ${UNKNOWN} stays.\n",
    }, name="my kit")
    plugin = load_plugin(root, data_root=tmp_path / "data")
    real = root.resolve()
    assert plugin.commands[0].body == f"Run !`'{real}'/bin/go.sh` and read {real}/GUIDE.md; $HOME stays.\n"
    assert plugin.skills[0].body == f"See {real}/skills/pdf/forms.md and {tmp_path / 'data' / plugin.name}/cache.\n"
    assert plugin.agents[0].body == f"Templates are in {real}/templates; ${{UNKNOWN}} stays.\n"


def test_example_lines_in_a_lenient_description_stay_in_it_and_known_keys_after_them_still_count(make_plugin) -> None:
    agent = ('---\nname: simplifier\ndescription: Use this agent after code changes. Examples: <example>\n'
             'Context: the user added a feature.\nuser: "Please add auth"\nassistant: "I will use the agent."\n'
             '</example>\nmodel: opus\n---\nSimplify.\n')
    plugin = load_plugin(make_plugin({"agents/simplifier.md": agent}))
    [loaded] = plugin.agents
    assert loaded.description.endswith('Context: the user added a feature.\nuser: "Please add auth"\n'
                                       'assistant: "I will use the agent."\n</example>')
    assert loaded.model == "opus"
    assert not [n for n in _warnings(plugin) if "unknown" in n]
