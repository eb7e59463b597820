"""What the sandbox refused, in words: each error a sandboxed command meets names the path and the rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.os_sandbox import OsSandbox
from tools.sandbox_notes import denials

SANDBOX = OsSandbox((Path("/w"),), home=Path("/h"), hidden=(Path("/d"),))


@pytest.mark.parametrize(("line", "said"), [
    ("/bin/bash: line 1: .git/hooks/pre-commit: Read-only file system",
     "/w/.git/hooks/pre-commit is read-only in the sandbox: .git/hooks inside the session's folders stays read-only"),
    ("error: could not lock config file .git/config: Read-only file system", "/w/.git/config is read-only in the sandbox"),
    ("mkdir: cannot create directory ‘.claude/x’: Read-only file system", "/w/.claude/x is read-only in the sandbox: .claude"),
    ("sh: 1: cannot create /etc/x: Read-only file system", "/etc/x is outside the folders sandboxed commands may write (/w and a private /tmp)"),
    ("touch: cannot touch '/srv/y': Read-only file system", "/srv/y is outside the folders"),
    ("cat: /h/.ssh/id_rsa: Permission denied", "/h/.ssh/id_rsa is hidden from sandboxed commands (credentials and keys"),
    ("PermissionError: [Errno 13] Permission denied: '/h/.netrc'", "/h/.netrc is hidden from sandboxed commands"),
    ("ls: cannot open directory '/d': Permission denied", "/d is hidden from sandboxed commands (hidden by the host"),
    ("sh: 1: cannot create .mcp.json: Permission denied", "/w/.mcp.json is not available in the sandbox: .mcp.json"),
    ("refused /h/agent.sock Connection refused", "/h/agent.sock: Unix sockets outside the session's folders are unreachable"),
    ("sh: 1: kill: No such process", "Processes outside the sandbox are not visible"),
])
def test_a_denial_is_named_with_its_path_and_rule(line: str, said: str) -> None:
    [note] = denials(line, SANDBOX, Path("/w"))
    assert note.startswith("[sandbox] ") and said in note


def test_ordinary_errors_get_no_note_and_a_repeated_one_a_single_note() -> None:
    assert denials("cat: /w/secret.txt: Permission denied\nls: x: No such file or directory", SANDBOX, Path("/w")) == []
    assert denials("refused /w/app.sock Connection refused", SANDBOX, Path("/w")) == []  # a socket in the folder: not the sandbox
    twice = "cat: /h/.ssh/a: Permission denied\ncat: /h/.ssh/a: Permission denied\ntouch: cannot touch '/x': Read-only file system"
    assert len(denials(twice, SANDBOX, Path("/w"))) == 2
