"""The ``agent-host`` command (``cli.main``): it composes the server (``host``) and the terminal
client (``chat``), so that neither imports the other. Nothing imports this package."""
