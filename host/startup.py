"""The start-up plan: which modules the host does not import while it starts, and when it does.

``agent-host serve`` imports what it needs to listen and to list its agents, then answers; the
modules below would cost start-up time (figures in ``benchmarks/README.md``, "Start-up") and are
loaded later, at the moment each entry names. This table is the one place that says so: a module
imports its dependencies at its head unless it is listed here, and ``tests/test_architecture.py``
checks ``host``, ``tools``, ``plugins``, ``providers``, ``ahp``, ``client``, ``chat`` and ``cli``: every
import they make inside a function names a module listed here (and none of them has an import
cycle).

The host loads what it defers through :func:`load` (its own modules, the plugin loader, the MCP
client), and so does the ``agent-host`` command (``cli``: the module of the command it runs).
``providers``, ``tools`` and ``plugins`` may not import the host; they defer their SDKs themselves
(an import inside the function that first needs the SDK) and export their own names lazily (PEP
562: ``providers``', ``plugins``', ``tools``' and ``tools.mcp``'s ``__init__``, ``ahp.lazy``), and
the entries below say when those run. A host module that needs a lazily exported name imports the
package at its head (``import plugins``) and reads the name where it uses it
(``plugins.LoadedPlugin``): the module behind the name loads then, at the moment its entry here
says.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["DEFERRED", "load"]

DEFERRED: dict[str, str] = {
    # -- the host's own ----------------------------------------------------------------------------
    "host.runtime.agents.turn":
        "the turn loop, and with it the providers' message and event models, the stream mapping, "
        "compaction and tool runs: in a worker thread when a session is made on a provider agent "
        "(ProviderAgent.prepare_session); a turn sent before that import ends waits for it off the loop",
    "host.transport.agui": "AG-UI: on the first request to its endpoint (host.transport.server)",
    "host.session_services":
        "the session services (customizations, tools and the built-in tools, terminals, changesets, resource "
        "watches, sub-agents) and the rest of the start that needs them: in a worker thread once the host "
        "listens, then built on the event loop (host.transport.server); any request but the handshake waits "
        "for them (host.transport.connection), and whatever needs one sooner builds them at once (AgentHost.services)",
    "host.transport.dialects.newer": "the 0.7.0, 0.9.0 and 1.0.0 dialects: on the first initialize or reconnect in one "
                                     "of those versions, else in a worker thread once the host listens "
                                     "(host.transport.dialects, host.transport.server)",
    "ahp.dialects.v0_2.wire._generated": "the generated wire models: in a worker thread once the host listens (ahp.dialects.v0_2.wire._models)",
    "ahp.dialects.v0_2.wire._handshake": "the wire model of the first request, InitializeParams, alone: on the first initialize "
                                         "(ahp.dialects.v0_2.wire._models), which so waits for none of the others",
    "host.cluster.process": "the cluster's log and with it the NATS client (the cluster extra): as the host is made, "
                            "only when [cluster] url or --cluster is set (host.service)",
    # The plugin loader (discovery, parsing, the customization tree, hooks): when a session first
    # needs its plugins, and in a worker thread once the host listens (host.transport.server). The
    # small modules of ``plugins`` (the Claude Code tool table, settings files, marketplaces,
    # command bodies, diagnostics, variable expansion) load with the host; the package's own names
    # are lazy (PEP 562, plugins/__init__.py).
    "plugins.loader": "the plugin loader: when a session first needs its plugins, or at start for [plugins] directories",
    "plugins.directories": "with the plugin loader, or at start when the user has Claude Code settings (ClaudeCode.load)",
    "plugins.customizations": "with the plugin loader",
    "plugins.model": "with the plugin loader, or at start for [mcp] servers or the user's Claude Code settings",
    "plugins.mcp_servers": "with the plugin loader, or at start for [mcp] servers",
    "plugins.hooks": "with the plugin loader",
    "plugins.slash": "with the plugin loader",
    # -- providers: the modules that import an SDK or the message models ----------------------------
    "providers": "every name on first use (PEP 562, providers/__init__.py)",
    "providers.openai": "with the openai SDK, in a worker thread when a session is made (SdkSource.warm)",
    "providers.anthropic": "with the anthropic SDK, in a worker thread when a session is made (SdkSource.warm)",
    "providers.litellm": "with LiteLLM, in a worker thread when a session is made (SdkSource.warm)",
    "providers.cassette": "when a replay or recording agent makes its first provider",
    "providers._tls": "the process's TLS context, with the first SDK",
    # -- the SDKs and HTTP stacks ------------------------------------------------------------------
    "openai": "in a worker thread when a session is made on an OpenAI agent, else at its first model call",
    "anthropic": "in a worker thread when a session is made on an Anthropic agent, else at its first model call",
    "litellm": "in a worker thread when a session is made on a LiteLLM agent, else at its first model call",
    "httpx": "with an SDK (its HTTP stack), or to map a transport error of one",
    "httpx2": "with cassette replay or recording, or to map a transport error of an SDK",
    "vcr": "when a cassette is read or written",
    "aiohttp": "with the SDKs' aiohttp-backed HTTP client (openai[aiohttp]), at a model call's first read of a "
               "streamed body (providers._body_bytes)",
    # -- the command (cli) ---------------------------------------------------------------------------
    # ``agent-host`` parses its command line (cli.main) and loads only the module of the command it
    # runs: '--help' loads neither the host nor the terminal client, 'agent-host chat URL' no host,
    # 'serve' no terminal client.
    "cli.serve": "'agent-host serve': the host, its listener and the data directory's lock, when that command runs",
    "cli.code": "'agent-host' and '-p': the chat on the data directory's shared host, when that command runs",
    "cli.plugin_commands": "'agent-host plugin ...': the Claude Code record, when that command runs",
    "cli.token_commands": "'agent-host token ...': the data directory's named tokens, when that command runs",
    "cli.shared_host": "'agent-host chat' with no URL: the address the data directory's shared host published",
    "chat": "the terminal client: its options when 'agent-host', '-p' or 'agent-host chat' parses them, then the chat",
    # Inside the terminal client (chat/__init__.py), what only the interactive chat needs: rich and
    # prompt_toolkit, about 180 and 160 ms of CPU that '-p' and '--help' do not pay.
    "chat.app": "the interactive chat and, with it, rich: when 'agent-host' or 'agent-host chat' opens it",
    "chat._core": "with the interactive chat",
    "chat._prompt": "prompt_toolkit's input line: when the interactive chat runs on a terminal that can draw it",
    # -- tools, and the libraries of the host's other parts ----------------------------------------
    "tools.mcp.manager": "the MCP client and with it the mcp SDK: in a worker thread when a session first starts an "
                         "MCP server (host.runtime.customizations.mcp.SessionMcp.apply)",
    "tools.mcp.connection": "with the MCP client",
    "tools.mcp.tool": "with the MCP client",
    "mcp": "with the MCP client",
    "pathspec": "on the first resource watch with include or exclude patterns (host.resources.watches), or the "
                "first file walk under an ignore file (tools._walk)",
    "yaml": "on the first Markdown front matter parsed (plugins._frontmatter): skills, commands, agents, rules",
}
"""Module → when it is loaded. A submodule of a listed module counts as listed."""


def load(module: str) -> ModuleType:
    """Import a module the plan defers (at the moment its entry names); ``KeyError`` for any other,
    which belongs at the head of the module that needs it."""
    if not planned(module):
        raise KeyError(f"{module} is not deferred by the start-up plan (host/startup.py): import it at the module head")
    return importlib.import_module(module)


def planned(module: str) -> bool:
    """Whether the plan defers ``module`` (itself, or a package it belongs to)."""
    return any(module == name or module.startswith(name + ".") for name in DEFERRED)
