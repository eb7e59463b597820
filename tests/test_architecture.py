"""The layout's rules, checked on the imports of the source (``ast``, nothing is executed).

* ``ahp/`` is the I/O-free core shared by the host and its clients: it imports no module that does
  network, process, thread, database or event-loop work, and nothing from the other rooms.
* ``client/`` and ``chat/`` are clients: they may import ``ahp`` and each other (``chat`` on top of
  ``client``), never the server (``host``) or what only the server runs (``tools``, ``providers``,
  ``plugins``).
* The server's parts sit side by side under ``host``, which composes them: ``tools``,
  ``providers`` and ``plugins`` never import ``host`` or each other (``tools`` may use ``ahp``).
* ``regular_files`` (reading files that cannot block) is shared by the server's parts and imports
  nothing from any room; so is ``child_processes`` (starting a child that dies with the server's
  process), and the server's parts start a process through it alone.
* ``cli`` (the ``agent-host`` command) composes the server and the terminal client; the server
  never imports a client, and nothing imports ``cli``. ``pytest_agent_host`` (the pytest plugin)
  composes the server and the client library for tests; nothing imports it.
* Inside ``host``, four rooms, top down: ``transport`` (how clients reach the host) sits on the
  composition (``host.service``, ``AgentHost``), which sits on ``runtime`` (what runs in sessions),
  ``resources`` (files served and guarded) and ``state`` (the store and the journal). ``state``
  imports none of the others; ``resources`` never imports ``runtime``; nothing below imports
  ``transport`` or the composition.
* The server's modules (``host``, ``tools``, ``plugins``, ``providers``), the core and the
  clients (``ahp``, ``client``, ``chat``, ``cli``) import one another without a cycle, and import what they need at their head: an import inside a function names a
  module the start-up plan (``host/startup.py``) defers.
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
                 if _matches(module, IO_MODULES | SERVER_SIDE | {"client", "chat", "cli", "regular_files", "child_processes"})]
    assert offending == []


@pytest.mark.parametrize("package", ["client", "chat"])
def test_clients_never_import_the_server(package: str) -> None:
    offending = [f"{where}: {module}" for module, where in _imports(package) if _matches(module, SERVER_SIDE | {"cli"})]
    assert offending == []


def test_the_client_library_does_not_import_the_terminal_client() -> None:
    assert [m for m, _ in _imports("client") if _matches(m, {"chat"})] == []


def test_the_terminal_client_reads_the_model_not_an_older_dialect() -> None:
    """The terminal client mirrors with the model's own reducers and builds the model's actions
    (``ahp.state``, ``ahp.protocol``): nothing of a projected dialect (``ahp.dialects``)."""
    assert [f"{where}: {module}" for module, where in _imports("chat") if _matches(module, {"ahp.dialects"})] == []


@pytest.mark.parametrize("package", ["tools", "providers", "plugins"])
def test_the_servers_parts_do_not_import_each_other_or_the_host(package: str) -> None:
    others = ({"host", "tools", "providers", "plugins", "client", "chat", "cli"} - {package})
    offending = [f"{where}: {module}" for module, where in _imports(package) if _matches(module, others)]
    assert offending == []


@pytest.mark.parametrize("package", ["regular_files", "child_processes"])
def test_the_shared_helpers_import_nothing_from_the_rooms(package: str) -> None:
    assert [f"{where}: {module}" for module, where in _imports(package) if _matches(module, ROOMS)] == []


_STARTS = {
    "subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "anyio": {"open_process", "run_process"},
    "os": {"fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "popen", "execv", "execve", "execvp", "execvpe",
           "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnle"},
    "pty": {"fork", "spawn"},
}
"""The standard ways to start a process, by module: each is ``child_processes``'s alone."""


def _process_starts(package: str) -> list[str]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    and node.module in _STARTS for alias in node.names if alias.name in _STARTS[node.module]}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            function = node.func
            if (isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name)
                    and function.attr in _STARTS.get(function.value.id, ())) or (
                    isinstance(function, ast.Name) and (function.id in imported or function.id == "stdio_client")):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(function)}")
    return found


@pytest.mark.parametrize("package", sorted(SERVER_SIDE))
def test_the_server_starts_processes_only_through_child_processes(package: str) -> None:
    """Every child of the server dies with its process, SIGKILL included, only if it is started
    through ``child_processes`` (the MCP SDK's ``stdio_client`` spawns on its own: not used)."""
    assert _process_starts(package) == []


def test_the_server_imports_no_client_and_nothing_imports_the_command() -> None:
    offending = [f"{where}: {module}" for module, where in _imports("host") if _matches(module, {"client", "chat", "cli"})]
    assert offending == []


def test_nothing_imports_the_pytest_plugin() -> None:
    """``pytest_agent_host`` composes the host and the client for tests, as ``cli`` does for people."""
    offending = [f"{where}: {module}" for package in sorted(ROOMS | {"regular_files", "child_processes"})
                 for module, where in _imports(package) if _matches(module, {"pytest_agent_host"})]
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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _cycles(package: str) -> list[list[str]]:
    """Import cycles among the modules of ``package`` (every import counts: at the head, in a
    function or under ``TYPE_CHECKING``), each as the modules around it."""
    paths = sorted((ROOT / package).rglob("*.py"))
    modules = {_module_name(path): path for path in paths}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                if node.level:
                    base = name.split(".")[: -node.level + (1 if path.name == "__init__.py" else 0) or None]
                    module = ".".join([*base, node.module])
                else:
                    module = node.module
                targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            edges[name] |= {target for target in targets if target in modules and target != name}
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for target in sorted(edges[name]):
            if state.get(target) == 1:
                found.append(trail[trail.index(target):] + [target])
            elif target not in state:
                visit(target, [*trail, target])
        state[name] = 2

    for name in sorted(modules):
        if name not in state:
            visit(name, [name])
    return found


CHECKED = sorted(SERVER_SIDE | {"ahp", "client", "cli", "chat"})
"""The packages whose imports follow the start-up plan (``host/startup.py``) and have no cycle."""


@pytest.mark.parametrize("package", CHECKED)
def test_the_modules_of_a_package_import_one_another_without_a_cycle(package: str) -> None:
    """What two modules share lives below both: the turn loop is handed what it needs
    (``TurnNeeds``) instead of importing its agent back, and a reducer module imports its siblings
    by their own names (``import ahp.state._turns as _turns``), never through the package that
    imports it; the chat's parts are handed its shared state (``chat._core.ChatCore``) instead of
    importing the package back."""
    assert _cycles(package) == []


def _imports_in_functions(package: str) -> list[tuple[str, str]]:
    """``(module, where)`` for every import made inside a function of ``package`` (relative ones resolved)."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        name = _module_name(path)
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.Import):
                    found += [(alias.name, where) for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = name.split(".")
                    if node.level:
                        base = base[: len(base) - node.level + (1 if path.name == "__init__.py" else 0)]
                        found.append((".".join([*base, *([node.module] if node.module else [])]), where))
                    else:
                        found.append((node.module or "", where))
    return found


@pytest.mark.parametrize("package", CHECKED)
def test_imports_inside_functions_name_only_modules_the_start_up_plan_defers(package: str) -> None:
    """Elsewhere a module's head says what it depends on."""
    from host.startup import planned

    assert [f"{where}: {module}" for module, where in _imports_in_functions(package) if not planned(module)] == []
