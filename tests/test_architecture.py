"""The layout's rules, checked on the imports of the source (``ast``, nothing is executed).

* ``ahp/`` is the I/O-free core shared by the host and its clients: it imports no module that does
  network, process, thread, database or event-loop work, and nothing from the other rooms.
* ``client/`` and ``chat/`` are clients: they may import ``ahp`` and each other (``chat`` on top of
  ``client``), never the server (``host``) or what only the server runs (``tools``, ``providers``,
  ``plugins``).
* The server's parts sit side by side under ``host``, which composes them: ``tools``,
  ``providers`` and ``plugins`` never import ``host`` or each other (``tools`` may use ``ahp``).
* ``regular_files`` (reading files that cannot block) is shared by the server's parts and imports
  nothing from any room.
* ``cli`` (the ``agent-host`` command) composes the server and the terminal client; the server
  never imports a client, and nothing imports ``cli``.
* Inside ``host``, four rooms, top down: ``transport`` (how clients reach the host) sits on the
  composition (``host.service``, ``AgentHost``), which sits on ``runtime`` (what runs in sessions),
  ``resources`` (files served and guarded) and ``state`` (the store and the journal). ``state``
  imports none of the others; ``resources`` never imports ``runtime``; nothing below imports
  ``transport`` or the composition.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

IO_MODULES = {
    "asyncio", "socket", "ssl", "select", "selectors", "sqlite3", "subprocess", "threading",
    "multiprocessing", "concurrent", "logging", "http", "urllib.request", "websockets", "httpx",
    "httpx2", "uvicorn", "starlette", "anyio", "aiofiles", "shutil", "tempfile", "signal", "time",
    "random", "uuid",
}
SERVER_SIDE = {"host", "tools", "providers", "plugins"}
ROOMS = {"ahp", "client", "chat", "cli", *SERVER_SIDE}


def _imports(package: str) -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [(alias.name, str(path.relative_to(ROOT))) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append((node.module, str(path.relative_to(ROOT))))
    return found


def _matches(module: str, names: set[str]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in names)


def test_the_ahp_core_imports_nothing_that_does_io_and_nothing_from_the_other_rooms() -> None:
    offending = [f"{where}: {module}" for module, where in _imports("ahp")
                 if _matches(module, IO_MODULES | SERVER_SIDE | {"client", "chat", "cli", "regular_files"})]
    assert offending == []


@pytest.mark.parametrize("package", ["client", "chat"])
def test_clients_never_import_the_server(package: str) -> None:
    offending = [f"{where}: {module}" for module, where in _imports(package) if _matches(module, SERVER_SIDE | {"cli"})]
    assert offending == []


def test_the_client_library_does_not_import_the_terminal_client() -> None:
    assert [m for m, _ in _imports("client") if _matches(m, {"chat"})] == []


@pytest.mark.parametrize("package", ["tools", "providers", "plugins"])
def test_the_servers_parts_do_not_import_each_other_or_the_host(package: str) -> None:
    others = ({"host", "tools", "providers", "plugins", "client", "chat", "cli"} - {package})
    offending = [f"{where}: {module}" for module, where in _imports(package) if _matches(module, others)]
    assert offending == []


def test_the_shared_file_reader_imports_nothing_from_the_rooms() -> None:
    assert [f"{where}: {module}" for module, where in _imports("regular_files") if _matches(module, ROOMS)] == []


def test_the_server_imports_no_client_and_nothing_imports_the_command() -> None:
    offending = [f"{where}: {module}" for module, where in _imports("host") if _matches(module, {"client", "chat", "cli"})]
    assert offending == []


def _host_imports_by_room() -> list[tuple[str, str, str]]:
    found = []
    for module, where in _imports("host"):
        parts = where.split("/")
        source = parts[1] if len(parts) > 2 else parts[1].removesuffix(".py")
        if module.startswith("host."):
            found.append((source, module.split(".")[1], f"{where}: {module}"))
    return found


@pytest.mark.parametrize("room, forbidden", [
    ("state", {"transport", "runtime", "resources", "service"}),
    ("runtime", {"transport", "service"}),
    ("resources", {"transport", "runtime", "service"}),
    ("service", {"transport"}),
])
def test_the_host_rooms_import_only_downwards(room: str, forbidden: set[str]) -> None:
    offending = [line for source, target, line in _host_imports_by_room() if source == room and target in forbidden]
    assert offending == []
