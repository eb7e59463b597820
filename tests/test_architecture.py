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
ROOMS = {"ahp", "client", "chat", *SERVER_SIDE}


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
                 if _matches(module, IO_MODULES | SERVER_SIDE | {"client", "chat", "regular_files"})]
    assert offending == []


@pytest.mark.parametrize("package", ["client", "chat"])
def test_clients_never_import_the_server(package: str) -> None:
    offending = [f"{where}: {module}" for module, where in _imports(package) if _matches(module, SERVER_SIDE)]
    assert offending == []


def test_the_client_library_does_not_import_the_terminal_client() -> None:
    assert [m for m, _ in _imports("client") if _matches(m, {"chat"})] == []


@pytest.mark.parametrize("package", ["tools", "providers", "plugins"])
def test_the_servers_parts_do_not_import_each_other_or_the_host(package: str) -> None:
    others = ({"host", "tools", "providers", "plugins", "client", "chat"} - {package})
    offending = [f"{where}: {module}" for module, where in _imports(package) if _matches(module, others)]
    assert offending == []


def test_the_shared_file_reader_imports_nothing_from_the_rooms() -> None:
    assert [f"{where}: {module}" for module, where in _imports("regular_files") if _matches(module, ROOMS)] == []
