"""Commands, skills and agents written for Claude Code act here as their authors wrote them.

A real host on port 0, the scripted provider (it records every request the model was sent) and
plugins in the published shapes (``.claude-plugin/plugin.json``, ``commands/*.md`` with
``allowed-tools`` and ``!`` lines, ``skills/<name>/SKILL.md`` with files beside it,
``agents/*.md`` whose frontmatter is not strict YAML). What is asserted is what the user sees
(tool calls, confirmations, load states) and what the model is sent."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ahp.workspace_trust import DONT_TRUST, is_trust_request, trust_answers
from providers import ScriptedProvider, UserMessage
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, run_turn, serving
from tests.host.runtime.tools._support import calls, scripted, tool_results, wait_pending

COMMIT = """---
allowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)
description: Create a git commit
---

## Context

- Status: !`git status`
- Changes against HEAD: !`git diff HEAD --stat`
- Branch: !`git branch --show-current`
- Latest commits: !`git log --oneline -10`
- In short:

```!
git status --porcelain
git status --branch --short
```

Write the message as ${CLAUDE_PLUGIN_ROOT}/COMMIT_STYLE.md says.

## Your task

Stage what changed and create one commit, in one message of tool calls.
"""


def _plugin(root: Path, name: str, files: dict[str, str]) -> Path:
    plugin = root / name
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": name, "version": "1.0.0"}))
    for relative, text in files.items():
        (plugin / relative).parent.mkdir(parents=True, exist_ok=True)
        (plugin / relative).write_text(text)
    return plugin


def _user_text(provider: ScriptedProvider, index: int) -> str:
    return [m for m in provider.requests[index].messages if isinstance(m, UserMessage)][-1].text


def _tool(provider: ScriptedProvider, index: int, name: str):
    return next(t for t in provider.requests[index].tools if t.name == name)


def _git(work: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=work, capture_output=True, text=True, check=True).stdout


async def test_commit_asks_nothing_for_what_its_allowed_tools_list_and_the_grant_ends_with_the_turn(
    tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(variable, "Test")
    for variable in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(variable, "test@example.com")
    plugins = tmp_path / "plugins"
    plugin = _plugin(plugins, "commit-commands", {"commands/commit.md": COMMIT, "COMMIT_STYLE.md": "Imperative mood.\n"})
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    (work / "README.md").write_text("# app\n")
    _git(work, "add", "README.md")
    _git(work, "commit", "-q", "-m", "Start")
    (work / "README.md").write_text("# app\n\nIt ships.\n")
    (work / "notes.txt").write_text("ship it\n")
    provider = ScriptedProvider([
        call_tools(("shell", {"command": "git add README.md notes.txt && git commit -m 'Add notes'"})),
        reply("Committed."),
        call_tools(("shell", {"command": "git commit --amend -m 'Add the notes'"})),
        reply("Left it as it was."),
    ])
    config = config_for(tmp_path, tools={"enabled": True}, plugins={"directories": [str(plugins)]})
    async with serving(config, frame_checker, [scripted(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted", working_directory=work.as_uri())
        turn = await run_turn(client, session, "/commit")
        # The next turn is not the command's: the same kind of call asks again.
        client.send_message(session, "reword it")
        call = await wait_pending(client, session)
        client.dispatch(session, {"type": "session/toolCallConfirmed", "turnId": call["turnId"],
                                  "toolCallId": call["toolCallId"], "approved": False, "confirmed": "user-action",
                                  "selectedOptionId": "deny"})
        await idle(client, session)
    shell_calls = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    # The body's five shell commands (four lines and the ```! block), then the model's call: nobody
    # was asked. allowed-tools covers git status, add and commit; git diff, branch --show-current
    # and log are read-only commands of the command's own body, which Claude Code runs unasked too.
    assert [c["toolName"] for c in shell_calls] == ["shell"] * 6
    assert [(c["status"], c["confirmed"], c["success"]) for c in shell_calls] == [("completed", "setting", True)] * 6
    sent = _user_text(provider, 0)
    assert "- Status: On branch main" in sent
    assert "- Changes against HEAD:  README.md | 2 ++" in sent
    assert "- Branch: main\n" in sent
    assert "- Latest commits: " in sent and " Start" in sent
    assert " M README.md\n?? notes.txt\n## main" in sent  # the fenced block's two lines ran as one script
    assert "```!" not in sent and "!`" not in sent
    assert f"Write the message as {plugin.resolve()}/COMMIT_STYLE.md says." in sent
    assert _git(work, "log", "--format=%s") == "Add notes\nStart\n"
    assert call["toolInput"] and "--amend" in call["toolInput"]  # asked, and denied: nothing changed
    assert _git(work, "log", "--format=%s") == "Add notes\nStart\n"


async def test_in_a_folder_not_trusted_a_plugins_command_grants_nothing(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugins = tmp_path / "plugins"
    _plugin(plugins, "commit-commands", {"commands/commit.md": COMMIT})
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")  # its .git/config could name programs git runs (core.fsmonitor...)
    provider = ScriptedProvider([reply("Nothing to commit.")])
    config = config_for(tmp_path, tools={"enabled": True}, plugins={"directories": [str(plugins)]}, trust={"folders": []})
    async with serving(config, frame_checker, [scripted(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted", working_directory=work.as_uri())
        client.send_message(session, "/commit")
        # Asked first whether to trust the folder (what allowed-tools would pre-approve waits for it) ...
        await client.wait_for(lambda m, e: _trust_question(client, session) is not None)
        question = _trust_question(client, session)
        assert "commit: the commands it runs and the tools its allowed-tools list would run without asking" in question["message"]
        client.dispatch(session, {"type": "session/inputCompleted", "requestId": question["id"], "response": "accept",
                                  "answers": trust_answers(DONT_TRUST)})
        # ... and not trusted, nothing is pre-approved.
        call = await wait_pending(client, session)
        assert json.loads(call["toolInput"]) == {"command": "git status"}  # asked, though allowed-tools lists it
        for _ in range(6):  # deny each of the body's commands in turn
            client.dispatch(session, {"type": "session/toolCallConfirmed", "turnId": call["turnId"],
                                      "toolCallId": call["toolCallId"], "approved": False, "confirmed": "user-action",
                                      "selectedOptionId": "deny"})
            await client.wait_for(lambda m, e: pending_call(client, session, call["toolCallId"]) is not None  # noqa: B023  (awaited in this iteration)
                                  or (client.state(session) or {}).get("activeTurn") is None)
            nxt = pending_call(client, session, call["toolCallId"])
            if nxt is None:
                break
            call = nxt
        await idle(client, session)
    assert "denied" in _user_text(provider, 0)


def _trust_question(client, session: str):
    return next((r for r in (client.state(session) or {}).get("inputRequests") or () if is_trust_request(r)), None)


def pending_call(client, session: str, after: str):
    """A call waiting for confirmation other than ``after``, if any."""
    active = (client.state(session) or {}).get("activeTurn")
    for call in calls(client, session) if active else ():
        if call.get("status") == "pending-confirmation" and call["toolCallId"] != after:
            return {**call, "turnId": active["id"]}
    return None


SKILL = """---
name: pdf
description: Fill in and read PDF forms. Use when the user mentions a PDF form.
---

# PDF forms

- Plugin check: !`echo "root=$CLAUDE_PLUGIN_ROOT"`
- The field reference is ${CLAUDE_SKILL_DIR}/reference.md; read it before filling a form.
- Fill the form named $1 (all arguments: $ARGUMENTS).
"""


async def test_a_skill_sees_its_plugin_root_and_its_files_are_readable_but_not_writable(
    tmp_path: Path, frame_checker: FrameChecker
) -> None:
    plugins = tmp_path / "plugins"
    plugin = _plugin(plugins, "doc-kit", {"skills/pdf/SKILL.md": SKILL, "skills/pdf/reference.md": "Field 7 is the date.\n"})
    root = plugin.resolve()
    reference = root / "skills" / "pdf" / "reference.md"
    work = tmp_path / "work"
    work.mkdir()
    provider = ScriptedProvider([
        call_tools(("read_file", {"path": str(reference)}), ("grep", {"pattern": "Field", "path": str(reference.parent)})),
        call_tools(("write_file", {"path": str(reference), "content": "changed\n"}),
                   ("shell", {"command": 'echo "model-sees=$CLAUDE_PLUGIN_ROOT"'})),
        reply("Filled."),
        call_tools(("shell", {"command": 'echo "later=$CLAUDE_PLUGIN_ROOT"'})),
        reply("Done."),
    ])
    config = config_for(tmp_path, tools={"enabled": True, "allow": ["shell", "write_file"]},
                        plugins={"directories": [str(plugins)]})
    async with serving(config, frame_checker, [scripted(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted", working_directory=work.as_uri())
        turn = await run_turn(client, session, '/doc-kit:pdf "tax form" quickly')
        await run_turn(client, session, "anything else?")
    sent = _user_text(provider, 0)
    assert sent.startswith(f"Base directory for this skill: {reference.parent}\n\n# PDF forms")
    assert f"- Plugin check: root={root}" in sent
    assert f"- The field reference is {reference}; read it" in sent
    assert "- Fill the form named tax form (all arguments: \"tax form\" quickly)." in sent
    read, grep = tool_results(provider, 1)
    assert "Field 7 is the date." in read.text and not read.is_error
    assert "reference.md" in grep.text and not grep.is_error
    written, echoed = tool_results(provider, 2)
    assert written.is_error and "outside the allowed directories" in written.text
    assert reference.read_text() == "Field 7 is the date.\n"
    assert f"model-sees={root}" in echoed.text
    [later] = tool_results(provider, 4)
    assert later.text.startswith("later=\n")  # the plugin's variables belonged to the skill's turn
    write_call = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"][3]
    assert (write_call["toolName"], write_call["success"]) == ("write_file", False)


LENIENT_AGENT = """---
name: reviewer
description: Use this agent when code needs review. Examples: <example>Context: the user says "check it": review</example>
tools: ["Read", "Grep"]
model: sonnet
---
You review code in the {plugin} style.
"""

CHECK_COMMAND = """---
description: Check a file
argument-hint: [file]
---
Check $1.
"""


async def test_two_plugins_agents_of_one_name_are_both_reachable_and_lenient_frontmatter_is_a_note(
    tmp_path: Path, frame_checker: FrameChecker
) -> None:
    plugins = tmp_path / "plugins"
    _plugin(plugins, "alpha", {"agents/reviewer.md": LENIENT_AGENT.format(plugin="alpha"), "commands/check.md": CHECK_COMMAND})
    _plugin(plugins, "beta", {"agents/reviewer.md": LENIENT_AGENT.format(plugin="beta")})
    task = {"description": "Review", "prompt": "Review main.py", "subagent_type": "beta:reviewer"}
    provider = ScriptedProvider([call_tools(("task", task)), reply("Looks fine."), reply("The beta reviewer says it looks fine.")])
    config = config_for(tmp_path, tools={"enabled": True}, plugins={"directories": [str(plugins)]})
    async with serving(config, frame_checker, [scripted(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted")
        state = client.state(session)
        turn = await run_turn(client, session, "review main.py")
    containers = {c["name"]: c for c in state["customizations"]}
    for name in ("alpha", "beta"):
        assert containers[name]["load"] == {"kind": "loaded"}  # lenient readings are notes, not problems
        notes = containers[name]["_meta"]["notes"]
        assert any("agents/reviewer.md ==> frontmatter: frontmatter is not valid YAML" in n for n in notes)
        assert any("frontmatter ==> tools: read the text '[\"Read\", \"Grep\"]' as the list ['Read', 'Grep']" in n
                   for n in notes)
    assert any("commands/check.md ==> frontmatter ==> argument-hint: YAML read this as a list; kept as the text '[file]'" in n
               for n in containers["alpha"]["_meta"]["notes"])
    listing = _tool(provider, 0, "task").description
    assert "- alpha:reviewer: Use this agent when code needs review." in listing
    assert "- beta:reviewer: Use this agent when code needs review." in listing
    [call] = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    assert call["success"] is True
    block = next(b for b in call["content"] if b.get("type") == "subagent")
    assert block["agentName"] == "beta:reviewer"
    sub_request = provider.requests[1]
    assert "You review code in the beta style." in (sub_request.system or "")
    # tools: ["Read", "Grep"] means exactly those two, and the skill loader (alpha has a command).
    assert sorted(t.name for t in sub_request.tools) == ["grep", "load_skill", "read_file"]


def _many_plugins(root: Path, count: int) -> None:
    """``count`` plugins shaped like the published marketplaces': long skill and agent
    descriptions (with examples, as Claude Code agents write them) and a command each."""
    example = (" Examples: <example>Context: the user is working on the {area} code and asks for help. user: 'Please "
               "look at the {area} module' assistant: 'I will use the {name} agent to look at it.' <commentary>The "
               "user asked about {area}, so this agent applies.</commentary></example>")
    for i in range(count):
        area = f"area{i:02d}"
        files = {
            f"skills/{area}-guide/SKILL.md": f"---\nname: {area}-guide\ndescription: Guidance for working in {area}: "
                                             f"conventions, pitfalls and checklists. Use when editing {area} files or "
                                             f"reviewing changes that touch them.{' More detail.' * 50}\n---\nThe {area} guide.\n",
            f"skills/{area}-audit/SKILL.md": f"---\nname: {area}-audit\ndescription: Audits {area} for common mistakes "
                                             f"and reports them with file and line.{' Thorough.' * 40}\n---\nAudit {area}.\n",
            f"agents/{area}-expert.md": f"---\nname: {area}-expert\ndescription: Use this agent for deep questions about "
                                        f"{area}.{example.format(area=area, name=area + '-expert')}\n---\nYou know {area}.\n",
            f"commands/{area}-status.md": f"---\ndescription: Show the status of {area}\n---\nReport on {area}.\n",
        }
        if i == count - 2:
            files["skills/kube-deploy/SKILL.md"] = ("---\nname: kube-deploy\ndescription: Deploy services to Kubernetes "
                                                    "clusters with rolling updates.\n---\nUse kubectl rollout. Context: "
                                                    "!`kubectl config current-context`\n")
        _plugin(root, f"kit-{i:02d}", files)


async def test_the_catalogue_of_93_plugins_costs_a_few_kilobytes_ranked_by_the_sessions_first_message(
    tmp_path: Path, frame_checker: FrameChecker
) -> None:
    plugins = tmp_path / "plugins"
    _many_plugins(plugins, 93)
    provider = ScriptedProvider([
        call_tools(("load_skill", {"name": "kubernetes"})),
        call_tools(("load_skill", {"name": "kit-91:kube-deploy"})),
        reply("Deployed."),
        reply("Hello."),
    ])
    config = config_for(tmp_path, tools={"enabled": True}, plugins={"directories": [str(plugins)]})
    async with serving(config, frame_checker, [scripted(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted")
        await run_turn(client, session, "deploy the api to our kubernetes cluster")
        await run_turn(client, session, "hello")
    skills = _tool(provider, 0, "load_skill")
    agents = _tool(provider, 0, "task")
    every = 93 * 3 + 1  # two skills and a command per plugin, and the Kubernetes skill
    full_size = sum(len(p.read_text()) for p in plugins.rglob("*.md"))
    assert full_size > 160_000  # about what listing every description would cost
    catalogue = len(skills.description) + len(json.dumps(skills.input_schema)) + len(agents.description) + len(
        json.dumps(agents.input_schema))
    assert catalogue < 7_000  # 6.4 KB when written
    # Ranked: the one skill the message is about comes first, though its plugin is near the end.
    lines = skills.description.splitlines()
    assert lines[1] == "- kit-91:kube-deploy: Deploy services to Kubernetes clusters with rolling updates."
    listed = [line for line in lines if line.startswith("- kit-")]
    assert lines[-1] == (f"- ... and {every - len(listed)} more skills not listed here: call load_skill with a name the "
                         "user gives, or with a word of what you need, and it answers with the skills that match.")
    assert agents.description.splitlines()[-1].startswith("- ... and ")
    # A word finds what the listing left out; the full text comes on demand.
    found, = tool_results(provider, 1)
    assert found.is_error and "- kit-91:kube-deploy: Deploy services to Kubernetes" in found.text
    loaded, = tool_results(provider, 2)
    assert loaded.text.startswith("Use kubectl rollout. Context: !`kubectl config current-context`")
    assert "are shell commands whose output belongs in their place: run the ones you need" in loaded.text
    # Used once, it stays at the top of the listing in the session's later requests.
    assert _tool(provider, 3, "load_skill").description.splitlines()[1].startswith("- kit-91:kube-deploy:")
    # The ranking is the session's, not each message's: a later turn about something else gets the
    # same listings, so a provider's prompt cache of the tools keeps holding.
    assert _tool(provider, 3, "task").description == agents.description
    assert _tool(provider, 1, "load_skill").description == skills.description


async def test_a_plugins_agent_runs_its_commands_with_the_plugin_root_set(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugins = tmp_path / "plugins"
    plugin = _plugin(plugins, "ops", {"agents/runner.md": "---\nname: runner\ndescription: Runs the plugin's scripts\n"
                                                           "tools: Bash\n---\nRun scripts from ${CLAUDE_PLUGIN_ROOT}/bin.\n"})
    task = {"description": "Run it", "prompt": "Run the check", "subagent_type": "runner"}
    provider = ScriptedProvider([
        call_tools(("task", task)),
        call_tools(("shell", {"command": 'echo "agent-sees=$CLAUDE_PLUGIN_ROOT"'})),
        reply("Ran it."),
        reply("The runner ran it."),
    ])
    config = config_for(tmp_path, tools={"enabled": True, "allow": ["shell"]}, plugins={"directories": [str(plugins)]})
    async with serving(config, frame_checker, [scripted(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted")
        await run_turn(client, session, "run the check")
    assert f"Run scripts from {plugin.resolve()}/bin." in (provider.requests[1].system or "")
    [echoed] = tool_results(provider, 2)
    assert echoed.text.startswith(f"agent-sees={plugin.resolve()}\n")


async def test_a_command_file_added_during_the_session_is_known_at_the_next_turn(tmp_path: Path, frame_checker: FrameChecker) -> None:
    work = tmp_path / "work"
    work.mkdir()
    provider = ScriptedProvider([reply("hi"), reply("hello, world")])
    async with serving(config_for(tmp_path, tools={"enabled": True}), frame_checker, [scripted(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted", working_directory=work.as_uri())
        await run_turn(client, session, "hi")
        (work / ".claude" / "commands").mkdir(parents=True)
        (work / ".claude" / "commands" / "greet.md").write_text("---\ndescription: Greet\n---\nSay hello to $ARGUMENTS.\n")
        await run_turn(client, session, "/greet world")  # no new session needed
        await idle(client, session)
    assert _user_text(provider, 1).strip() == "Say hello to world."
