"""Command and skill bodies: shell commands in both of Claude Code's forms, plugin variables."""

from __future__ import annotations

from plugins.bodies import BANG_COMMAND, bang_command, expand_plugin_variables, replace_bang_commands

BODY = """## Context

- Status: !`git status --short`
- Versions:

```!
echo "node: $(node --version)"
echo "inline !`not separate`"
```

```bash
!`echo inside-a-plain-fence`
```

Done.
"""


def test_inline_commands_and_fenced_bang_blocks_are_found_in_order() -> None:
    found = [bang_command(m) for m in BANG_COMMAND.finditer(BODY)]
    assert found == [
        "git status --short",
        'echo "node: $(node --version)"\necho "inline !`not separate`"',
        "echo inside-a-plain-fence",  # Claude Code reads the body as text, not as Markdown
    ]


def test_each_command_is_replaced_by_what_it_printed() -> None:
    outputs = iter(["M a.py", "node: v22", "x"])
    text = replace_bang_commands(BODY, lambda _command: next(outputs))
    assert "- Status: M a.py" in text
    assert "- Versions:\n\nnode: v22\n\n```bash" in text
    assert "```!" not in text and "!`" not in text


def test_a_fence_that_is_not_closed_is_no_command() -> None:
    assert [bang_command(m) for m in BANG_COMMAND.finditer("```!\necho never closed\n")] == []


def test_plugin_variables_are_plain_in_prose_and_quoted_in_commands() -> None:
    variables = {"CLAUDE_PLUGIN_ROOT": "/opt/my plugins/tool", "PLUGIN_ROOT": "/opt/my plugins/tool"}
    body = ("Read ${CLAUDE_PLUGIN_ROOT}/docs/guide.md.\n!`${CLAUDE_PLUGIN_ROOT}/bin/check --home ${HOME}`\n"
            "```!\npython3 ${PLUGIN_ROOT}/x.py\n```\n")
    assert expand_plugin_variables(body, variables) == (
        "Read /opt/my plugins/tool/docs/guide.md.\n!`'/opt/my plugins/tool'/bin/check --home ${HOME}`\n"
        "```!\npython3 '/opt/my plugins/tool'/x.py\n```\n"
    )
