"""Confining user- and tool-supplied paths to the session's allowed roots.

Contract: `resolve_path(path, working_directory, extra_roots=())` returns the absolute,
symlink-free path a file operation may use, or raises `SandboxError` whose message says
why and names the allowed roots. The allowed roots are the working directory and the
extra roots, each itself resolved with realpath.

Invariants:
* Relative paths are taken relative to the working directory; absolute paths and
  `file://` URIs (percent-decoded, local host only) are accepted when they land inside
  a root. Other URI schemes are refused.
* The check happens after symlinks are resolved (realpath), so a link inside the root
  that points outside is refused, for files and directories alike, and for targets that
  do not exist yet (a dangling link, or `newdir/../..`): realpath resolves the nearest
  existing ancestor and applies the rest lexically.
* Refused before resolution, because they are either ambiguous or a sign of an attack
  rather than a real file name: empty paths, NUL and other control or invisible
  formatting characters, a leading `~` (never expanded), backslashes (this is a POSIX
  host; `..\\` would otherwise be a file literally named so), percent-encoded dots,
  slashes or NULs in a plain path, characters whose compatibility form is a dot or a
  slash (fullwidth `．．／`), over-long paths or components, and symlink loops.
* Pure with respect to state: it reads the file system (lstat/readlink) but never
  creates, modifies or follows anything into being.
"""

from __future__ import annotations

import errno
import os
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .errors import SandboxError

__all__ = ["resolve_path", "allowed_roots", "MAX_PATH_LENGTH", "MAX_COMPONENT_LENGTH"]

MAX_PATH_LENGTH = 4096
"""Longest path accepted, in UTF-8 bytes (Linux PATH_MAX)."""

MAX_COMPONENT_LENGTH = 255
"""Longest single path component accepted, in UTF-8 bytes (Linux NAME_MAX)."""

_URI_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# Encodings of '.', '/', '\\' and NUL: a plain path containing them was meant to be decoded
# by someone, and we refuse to guess whether that someone is us.
_ENCODED_SEPARATOR = re.compile(r"%(2e|2f|5c|00)", re.IGNORECASE)
_LOOKALIKE_TARGETS = {".", "/", "\\"}
# Look-alikes that NFKC does not fold: division/fraction slashes, set minus, ideographic stops.
_CONFUSABLES = {
    "\u2215": "/", "\u2044": "/", "\u29f8": "/", "\u2216": "\\", "\u29f9": "\\",
    "\u3002": ".", "\uff61": ".",
}


def _looks_like(char: str) -> str | None:
    if char in _LOOKALIKE_TARGETS:
        return None
    if char in _CONFUSABLES:
        return _CONFUSABLES[char]
    folded = unicodedata.normalize("NFKC", char)
    return folded if folded in _LOOKALIKE_TARGETS else None


def allowed_roots(working_directory: str | os.PathLike[str], extra_roots: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """The working directory and extra roots, realpath-resolved, duplicates removed."""
    roots: list[Path] = []
    for root in (working_directory, *extra_roots):
        real = Path(os.path.realpath(os.fspath(root)))
        if real not in roots:
            roots.append(real)
    return roots


def _roots_text(roots: list[Path]) -> str:
    return ", ".join(str(r) for r in roots)


def _shown(path: str) -> str:
    """The path as quoted in error messages: control characters escaped, long ones shortened."""
    text = path.encode("unicode_escape").decode("ascii") if not path.isprintable() else path
    return text if len(text) <= 120 else text[:60] + "…" + text[-40:]


def _from_uri(path: str, roots: list[Path]) -> str:
    try:
        parts = urlsplit(path)
    except ValueError:  # e.g. "file://[" (an unclosed IPv6 host)
        raise SandboxError(f"'{_shown(path)}' is not a valid URI. Allowed roots: {_roots_text(roots)}.") from None
    if parts.scheme.lower() != "file":
        raise SandboxError(
            f"Only local file paths are allowed, not {parts.scheme}: URIs ('{_shown(path)}'). "
            f"Allowed roots: {_roots_text(roots)}."
        )
    if parts.netloc not in ("", "localhost"):
        raise SandboxError(f"File URIs must refer to this machine, not host '{parts.netloc}'. Allowed roots: {_roots_text(roots)}.")
    decoded = unquote(parts.path)
    if not decoded.startswith("/"):
        raise SandboxError(f"File URI '{_shown(path)}' has no absolute path. Allowed roots: {_roots_text(roots)}.")
    return decoded


def _refuse_malformed(path: str, original: str, roots: list[Path]) -> None:
    where = f"Allowed roots: {_roots_text(roots)}."
    if path == "":
        raise SandboxError(f"The path is empty. {where}")
    if "\x00" in path:
        raise SandboxError(f"Path '{_shown(original)}' contains a NUL byte. {where}")
    for char in path:
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Cs"):
            raise SandboxError(
                f"Path '{_shown(original)}' contains the control or invisible character U+{ord(char):04X}. {where}"
            )
    if path.startswith("~"):
        raise SandboxError(
            f"Path '{_shown(original)}' starts with '~', which is not expanded; use a path relative to the "
            f"working directory or an absolute path. {where}"
        )
    if "\\" in path:
        raise SandboxError(f"Path '{_shown(original)}' contains a backslash; use '/' as the separator. {where}")
    for char in path:
        lookalike = _looks_like(char)
        if lookalike is not None:
            raise SandboxError(
                f"Path '{_shown(original)}' contains U+{ord(char):04X}, which looks like "
                f"'{lookalike}'; use plain ASCII separators. {where}"
            )
    encoded = path.encode("utf-8", "surrogateescape")
    if len(encoded) > MAX_PATH_LENGTH:
        raise SandboxError(f"Path is too long ({len(encoded)} bytes, at most {MAX_PATH_LENGTH}). {where}")
    for component in path.split("/"):
        if len(component.encode("utf-8", "surrogateescape")) > MAX_COMPONENT_LENGTH:
            raise SandboxError(
                f"Path '{_shown(original)}' has a component longer than {MAX_COMPONENT_LENGTH} bytes. {where}"
            )


def resolve_path(
    path: str,
    working_directory: str | os.PathLike[str],
    extra_roots: Iterable[str | os.PathLike[str]] = (),
) -> Path:
    """Resolve `path` for a file operation, or raise `SandboxError` naming the allowed roots."""
    roots = allowed_roots(working_directory, extra_roots)
    if not isinstance(path, str):
        raise SandboxError(f"A path must be a string. Allowed roots: {_roots_text(roots)}.")
    original = path
    scheme = _URI_SCHEME.match(path)
    if scheme and (path[scheme.end():].startswith("//") or scheme.group(1).lower() == "file"):
        path = _from_uri(path, roots)
    elif encoded := _ENCODED_SEPARATOR.search(path):
        raise SandboxError(
            f"Path '{_shown(original)}' contains percent-encoded characters "
            f"('{encoded.group(0)}'); pass the plain path. "
            f"Allowed roots: {_roots_text(roots)}."
        )
    _refuse_malformed(path, original, roots)

    candidate = os.path.join(roots[0], path)
    try:
        real = Path(os.path.realpath(candidate, strict=True))
    except FileNotFoundError:
        # Not there yet (a file about to be written): resolve what exists, the rest lexically.
        real = Path(os.path.realpath(candidate))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SandboxError(f"Path '{_shown(original)}' runs into a symlink loop. Allowed roots: {_roots_text(roots)}.") from None
        if exc.errno == errno.ENAMETOOLONG:
            raise SandboxError(f"Path '{_shown(original)}' is too long. Allowed roots: {_roots_text(roots)}.") from None
        # Permission problems and the like: the lexical-after-existing resolution is still sound.
        real = Path(os.path.realpath(candidate))

    for root in roots:
        if real == root or real.is_relative_to(root):
            return real
    resolved_note = "" if str(real) == os.path.normpath(candidate) else f" (it resolves to {real})"
    raise SandboxError(
        f"Access denied: '{_shown(original)}' is outside the allowed directories{resolved_note}. "
        f"Allowed roots: {_roots_text(roots)}."
    )
