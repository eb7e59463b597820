"""Merge an older recording (one vcrpy cassette per turn) into one session cassette.

Usage (from the repository root)::

    python scripts/merge_turn_cassettes.py cassettes/recorded/<agent>/<session id>/ [--cwd DIR] [-o OUT.yaml]

Contract:
- Input: the folder an older ``serve --record`` wrote for one session, ``<turn id>.yaml`` per turn and
  ``<turn id>-title.yaml`` for the title request. Those files carry no turn number, so turns are
  taken in the order the files were last written (their modification times); check the result.
- Output: a session cassette (``providers.session_cassette``, ``version: 2``), by default
  ``<folder>.yaml`` beside the folder. Request bodies become structured data with the built-in
  redaction applied; ``--cwd`` (the session's working directory when it was recorded) and the
  user's home become ``${cwd}`` and ``${home}``. The result replays strictly: a request the host
  sends differently today fails with a diff, which is the point of converting.
- The vendored cassettes in ``cassettes/`` are not session recordings (one exchange each, recorded
  by other clients) and stay as they are: the demo agent reads them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from host.runtime.agents.replay import cassette_kind
from host.runtime.agents.session_source import portable_base_url
from providers.cassette import load_cassette
from providers.session_cassette import Call, Normaliser, SessionCassette, kept_headers, write_cassette


def _call(interaction: Any, normaliser: Normaliser) -> Call:
    request, response = interaction.request, interaction.response
    raw = response.get("body", {}).get("string") or b""
    text = normaliser.text(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw))
    headers = kept_headers((name, values[-1] if isinstance(values, list) else str(values))
                           for name, values in (response.get("headers") or {}).items())
    headers.pop("content-encoding", None)  # vcrpy kept the body decoded
    answer: Any = text
    if "json" in headers.get("content-type", ""):
        try:
            answer = json.loads(text)
        except ValueError:
            pass
    path = request.path if hasattr(request, "path") else "/"
    return Call(request.method.upper(), path, normaliser.body(request.body), int(response["status"]["code"]), headers, answer)


def merge(folder: Path, *, cwd: str | None = None, home: str | None = None) -> SessionCassette:
    """The session cassette for an older recording folder (see the module docstring)."""
    files = sorted(folder.glob("*.yaml"), key=lambda path: (path.stat().st_mtime, path.name))
    turns = [path for path in files if not path.stem.endswith("-title")]
    titles = [path for path in files if path.stem.endswith("-title")]
    if not turns:
        raise SystemExit(f"{folder}: no recorded turns (<turn id>.yaml) in it")
    kind, base_url = cassette_kind(turns[0])
    normaliser = Normaliser.for_folder(cwd, home if home is not None else str(Path.home()))
    cassette = SessionCassette(kind=kind, base_url=portable_base_url(base_url))
    for path in turns:
        cassette.turns.append([_call(interaction, normaliser) for interaction in load_cassette(path)])
    if titles:
        cassette.title = _call(load_cassette(titles[0])[0], normaliser)
    return cassette


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="<recordings>/<agent>/<session id>/ written by an older serve --record")
    parser.add_argument("--cwd", help="the session's working directory when it was recorded (becomes ${cwd})")
    parser.add_argument("-o", "--output", type=Path, help="where to write the session cassette (default: <folder>.yaml)")
    args = parser.parse_args(argv)
    folder = args.folder.resolve()
    if not folder.is_dir():
        print(f"{args.folder}: no such folder", file=sys.stderr)
        return 2
    cassette = merge(folder, cwd=args.cwd)
    output = args.output or folder.with_suffix(".yaml")
    write_cassette(output, cassette)
    print(f"{output}: {len(cassette.turns)} turns, {sum(map(len, cassette.turns))} model calls"
          + (", a title request" if cassette.title else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
