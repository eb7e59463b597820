"""The tool interface: definitions, argument validation, failures as results, prepare."""

from __future__ import annotations

import asyncio

import jsonschema
import pytest

from tests.tools.wire import assert_wire, validate_wire
from tools.base import Tool, ToolContext, failure_result, success_result
from tools.builtin import builtin_tools
from tools.errors import ToolFailure


class Echo(Tool):
    name = "echo"
    title = "Echo"
    description = "Echo the text back."
    input_schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "times": {"type": "integer", "minimum": 1}},
        "required": ["text"],
        "additionalProperties": False,
    }
    annotations = {"readOnlyHint": True}

    async def run(self, args, ctx):
        if args["text"] == "fail":
            raise ToolFailure("asked to fail", code="asked")
        if args["text"] == "bug":
            raise KeyError("secret internal detail")
        return success_result("Echoed", [{"type": "text", "text": args["text"] * args.get("times", 1)}])


def test_definition_is_an_ahp_tool_definition():
    definition = Echo().definition()
    validate_wire("ToolDefinition", definition)
    assert definition["name"] == "echo" and definition["inputSchema"]["required"] == ["text"]
    assert definition["annotations"]["readOnlyHint"] is True


def test_every_builtin_definition_is_valid_and_names_are_unique():
    names = []
    for tool in builtin_tools():
        validate_wire("ToolDefinition", tool.definition())
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        names.append(tool.name)
    assert len(names) == len(set(names))
    assert set(names) == {"shell", "read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "ask_user"}


async def test_missing_extra_and_wrong_typed_arguments_are_named(ctx):
    result = await Echo().call({"times": "3", "loud": True}, ctx)
    assert result["success"] is False
    message = result["error"]["message"]
    assert "missing required argument 'text'" in message
    assert "unexpected argument 'loud' (accepted: text, times)" in message
    assert "argument 'times' must be an integer, got a string" in message
    assert result["error"]["code"] == "invalid_arguments"
    assert_wire("ToolCallResult", result)


async def test_boolean_is_not_accepted_as_integer(ctx):
    result = await Echo().call({"text": "a", "times": True}, ctx)
    assert "must be an integer, got a boolean" in result["error"]["message"]


async def test_non_object_arguments_fail_cleanly(ctx):
    result = await Echo().call(["text"], ctx)
    assert result["success"] is False and "must be a JSON object" in result["error"]["message"]


async def test_tool_failure_becomes_a_result(ctx):
    result = await Echo().call({"text": "fail"}, ctx)
    assert result == {
        "success": False,
        "pastTenseMessage": "Tried to run Echo",
        "error": {"message": "asked to fail", "code": "asked"},
        "content": [{"type": "text", "text": "asked to fail"}],
    }


async def test_unexpected_exception_becomes_a_result_without_internals(ctx):
    result = await Echo().call({"text": "bug"}, ctx)
    assert result["success"] is False
    assert result["error"] == {"message": "Echo failed unexpectedly (KeyError).", "code": "internal_error"}
    assert "secret internal detail" not in str(result)


async def test_host_cancellation_propagates(ctx):
    class Slow(Echo):
        async def run(self, args, ctx):
            await asyncio.Event().wait()

    task = asyncio.create_task(Slow().call({"text": "x"}, ctx))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_prepare_reports_failure_instead_of_asking(ctx):
    prep = await Echo().prepare({"nope": 1}, ctx)
    assert prep.failure is not None and prep.failure["success"] is False
    assert prep.ready_fields() == {"invocationMessage": "Run Echo"}


async def test_prepare_ready_fields_for_a_valid_call(ctx):
    prep = await Echo().prepare({"text": "hi"}, ctx)
    assert prep.failure is None
    assert prep.ready_fields() == {"invocationMessage": "Run Echo", "confirmationTitle": "Allow Echo?"}


def test_result_helpers_omit_absent_keys():
    assert success_result("Did it") == {"success": True, "pastTenseMessage": "Did it"}
    assert failure_result("Tried", "no") == {
        "success": False,
        "pastTenseMessage": "Tried",
        "error": {"message": "no"},
        "content": [{"type": "text", "text": "no"}],
    }


async def test_context_emit_accepts_sync_and_async_callbacks(workspace):
    seen = []

    async def async_report(content):
        seen.append(("async", content))

    await ToolContext(workspace, report_content=seen.append).emit([{"type": "text", "text": "a"}])
    await ToolContext(workspace, report_content=async_report).emit([{"type": "text", "text": "b"}])
    await ToolContext(workspace).emit([{"type": "text", "text": "ignored"}])
    assert seen == [[{"type": "text", "text": "a"}], ("async", [{"type": "text", "text": "b"}])]


async def test_default_reconfirm_refuses(workspace):
    assert await ToolContext(workspace).reconfirm("the file changed") is False


# Property: no argument value makes a (non-shell) built-in raise instead of returning a result.
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_KEYS = st.sampled_from(["path", "content", "old_string", "new_string", "replace_all", "offset", "limit",
                         "pattern", "glob", "questions", "message", "extra"])
_SAFE_TOOLS = [tool for tool in builtin_tools() if tool.name != "shell"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(_SAFE_TOOLS), st.dictionaries(_KEYS, _JSON, max_size=4))
async def test_builtin_tools_always_return_a_result(ctx, tool, args):
    result = await tool.call(args, ctx)
    assert_wire("ToolCallResult", result)
    prep = await tool.prepare(args, ctx)
    assert isinstance(prep.invocation_message, str)
