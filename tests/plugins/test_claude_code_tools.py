"""The one table between this host's tool vocabulary and Claude Code's, tested both ways."""

from __future__ import annotations

import pytest

from plugins.claude_code_tools import (
    TABLE,
    claude_name,
    claude_permission_mode,
    host_name,
    host_rules,
    matcher_names,
    to_claude_input,
    to_claude_response,
    to_host_input,
)
from tools.policy import PolicyState, decide, parse_rule


@pytest.mark.parametrize(("host", "claude"), [
    ("shell", "Bash"), ("read_file", "Read"), ("write_file", "Write"), ("edit_file", "Edit"),
    ("glob", "Glob"), ("grep", "Grep"), ("list_dir", "LS"), ("task", "Task"),
    ("ask_user", "AskUserQuestion"), ("propose_plan", "ExitPlanMode"),
])
def test_names_go_both_ways(host: str, claude: str) -> None:
    assert claude_name(host) == claude
    assert host_name(claude) == host


def test_mcp_and_unknown_tools_keep_their_names() -> None:
    assert claude_name("mcp__github__create_issue") == "mcp__github__create_issue"
    assert host_name("mcp__github__create_issue") == "mcp__github__create_issue"
    assert host_name("WebFetch") == "WebFetch"


def test_older_claude_names_still_reach_the_host_tool() -> None:
    assert host_name("Agent") == "task"
    assert "Agent" in matcher_names("task")
    assert matcher_names("shell")[0] == "Bash"
    assert matcher_names("no_such_tool") == ()


def test_every_table_argument_round_trips() -> None:
    for tool in TABLE:
        host_args = {argument.host: 7 for argument in tool.arguments} | {"untouched": "x"}
        claude_args = to_claude_input(tool.host, host_args)
        assert to_host_input(tool.host, claude_args) == host_args, tool.host


def test_file_tools_speak_file_path_and_bash_milliseconds() -> None:
    assert to_claude_input("write_file", {"path": "a.txt", "content": "hi"}) == {"file_path": "a.txt", "content": "hi"}
    assert to_claude_input("edit_file", {"path": "a", "old_string": "x", "new_string": "y"}) == {
        "file_path": "a", "old_string": "x", "new_string": "y"}
    assert to_claude_input("shell", {"command": "ls", "timeout_seconds": 30}) == {"command": "ls", "timeout": 30000}
    assert to_host_input("shell", {"command": "ls", "timeout": 1500}) == {"command": "ls", "timeout_seconds": 1.5}
    assert to_host_input("grep", {"pattern": "x", "-i": True, "head_limit": 5}) == {
        "pattern": "x", "case_insensitive": True, "max_results": 5}


def test_bash_rules_keep_their_command_pattern() -> None:
    assert host_rules("Bash") == ["shell"]
    assert host_rules("Bash(npm run test:*)") == ["shell(npm run test:*)"]
    assert host_rules("Bash(git diff *)") == ["shell(git diff:*)"]  # the newer spelling of a prefix
    assert host_rules("Bash(git * main)") == ["shell(git * main)"]  # a wildcard inside is no prefix


def test_read_and_edit_rules_cover_every_tool_that_reads_or_changes_files() -> None:
    assert sorted(host_rules("Read(./.env)")) == ["glob(.env)", "grep(.env)", "list_dir(.env)", "read_file(.env)"]
    assert sorted(host_rules("Edit(docs/**)")) == ["edit_file(docs/**)", "write_file(docs/**)"]
    assert sorted(host_rules("Edit")) == ["edit_file", "write_file"]


def test_path_specifiers_are_placed_as_claude_code_places_them() -> None:
    assert "read_file(/etc/passwd)" in host_rules("Read(//etc/passwd)")
    assert "read_file(/home/me/.ssh/**)" in host_rules("Read(~/.ssh/**)", home="/home/me")
    assert "edit_file(/repo/src/**)" in host_rules("Edit(/src/**)", settings_root="/repo")
    with pytest.raises(ValueError, match="settings file"):
        host_rules("Edit(/src/**)")


def test_mcp_rules_name_a_server_or_one_tool() -> None:
    assert host_rules("mcp__github") == ["mcp__github__*"]
    assert host_rules("mcp__github__create_issue") == ["mcp__github__create_issue"]
    assert host_rules("WebFetch(domain:example.com)") == []


class _Tool:
    def __init__(self, name: str, kind: str | None, key: str | None) -> None:
        self.name, self.subject_kind, self._key = name, kind, key
        self.annotations = None

    def policy_subject(self, args: dict) -> str | None:
        return args.get(self._key) if self._key else None


def test_translated_rules_decide_as_claude_code_would() -> None:
    deny = [r for text in ("Read(./.env)", "Bash(curl:*)") for r in host_rules(text)]
    allow = host_rules("Bash(npm run test:*)") + host_rules("Edit(src/**)")
    state = PolicyState.from_settings(allow=allow, deny=deny, working_directory="/repo")
    shell, read, write = _Tool("shell", "command", "command"), _Tool("read_file", "path", "path"), _Tool("write_file", "path", "path")
    assert decide(shell, {"command": "npm run test -- -k x"}, state).outcome == "allow"
    assert decide(shell, {"command": "npm run test && curl evil.example"}, state).outcome == "deny"
    assert decide(read, {"path": ".env"}, state).outcome == "deny"
    assert decide(write, {"path": "src/app.py"}, state).outcome == "allow"
    assert decide(write, {"path": "setup.py"}, state).outcome == "ask"
    assert all(parse_rule(rule) for rule in allow + deny)


def test_hook_input_has_absolute_file_paths_and_the_inverse_keeps_them() -> None:
    given = to_claude_input("edit_file", {"path": "src/a.py", "old_string": "x", "new_string": "y"}, cwd="/work")
    assert given == {"file_path": "/work/src/a.py", "old_string": "x", "new_string": "y"}
    assert to_host_input("edit_file", given) == {"path": "/work/src/a.py", "old_string": "x", "new_string": "y"}
    assert to_claude_input("write_file", {"path": "/etc/x"}, cwd="/work") == {"file_path": "/etc/x"}
    assert to_claude_input("shell", {"command": "ls"}, cwd="/work") == {"command": "ls"}


def test_tool_responses_take_claude_codes_shapes() -> None:
    shell = {"success": True, "content": [{"type": "text", "text": "hi\n[exit code 0]"}], "structuredContent": {"exitCode": 0}}
    assert to_claude_response("shell", {"command": "echo hi"}, shell) == {
        "stdout": "hi\n", "stderr": "", "interrupted": False, "isImage": False, "exitCode": 0}
    wrote = {"success": True, "structuredContent": {"path": "/w/a", "created": True}}
    assert to_claude_response("write_file", {"path": "a", "content": "c"}, wrote, cwd="/w") == {
        "type": "create", "filePath": "/w/a", "content": "c"}
    edited = to_claude_response("edit_file", {"path": "a", "old_string": "x", "new_string": "y"}, {"success": True}, cwd="/w")
    assert (edited["filePath"], edited["oldString"], edited["newString"]) == ("/w/a", "x", "y")
    read = to_claude_response("read_file", {"path": "a"}, {"success": True, "content": [{"type": "text", "text": "1\n2"}],
                                                           "structuredContent": {"totalLines": 2}}, cwd="/w")
    assert read == {"type": "text", "file": {"filePath": "/w/a", "content": "1\n2", "numLines": 2, "startLine": 1, "totalLines": 2}}
    assert to_claude_response("mcp__s__t", {}, {"success": True, "content": [{"type": "text", "text": "ok"}]}) == [
        {"type": "text", "text": "ok"}]


def test_path_rules_without_a_slash_match_in_every_folder_and_bash_star_is_a_prefix() -> None:
    assert host_rules("Edit(*.ts)") == ["write_file(**/*.ts)", "edit_file(**/*.ts)"]
    assert host_rules("Bash(git *)") == ["shell(git:*)"]
    assert host_rules("Bash(git push)") == ["shell(git push)"]


@pytest.mark.parametrize(("host", "claude"), [
    ("default", "default"), ("accept-edits", "acceptEdits"), ("plan", "plan"), ("full-auto", "bypassPermissions"), (None, "default"),
])
def test_permission_modes_in_claude_codes_words(host: str | None, claude: str) -> None:
    assert claude_permission_mode(host) == claude
