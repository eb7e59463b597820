"""What runs inside sessions: turns, agents, tools, terminals and the processes they start.

``turns`` starts, cancels and ends turns from accepted actions; ``agents`` runs them
(provider-backed, replay, offline); ``tools`` is the confirmation flow and the tools of a session;
``subagents``, ``inputs`` (questions to the user), ``terminals``, ``customizations`` (plugins and
MCP servers in sessions), ``conversation`` (turns as the neutral conversation a model is sent),
``processes`` (process families, the host as their reaper) and ``memory`` (the garbage-collector
policy). It changes state only by dispatching actions to ``host.state.store``.
"""
