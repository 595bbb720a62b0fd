"""Protocols from other installed packages, found through the ``tui_rater.protocols`` entry-point group.

A fourth paper's protocol can live in the user's own package (CONTRIBUTING.md): its ``pyproject.toml`` names
the class under the protocol's name,

    [project.entry-points."tui_rater.protocols"]
    bracket-rating = "mt_bench_protocol:BracketRating"

and every ``tui-rater`` process finds it when a task asks for ``protocol = "bracket-rating"``, with no change
to this package. The installed packages' metadata is read once, and only when a name is not a built-in one: a
command whose tasks ask only the papers' protocols never pays for the scan, nor imports anyone's module.

A package that cannot be used is one sentence naming it (a ``UserError``), never a traceback: its module
fails to import (or calls ``sys.exit``, which must not end the command with its status), its object is not a
protocol, the protocol calls itself by another name or declares a level of measurement that is not one, its
name is a built-in one or another package's, or an installed package's entry-point metadata cannot be read.
Only Ctrl-C stays Ctrl-C. What a package's module prints while it is imported goes to stderr: stdout is a
report's JSON or CSV.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Collection
from typing import TYPE_CHECKING

from tui_rater.domain.errors import UserError
from tui_rater.domain.protocols.base import EvaluationProtocol, Level

if TYPE_CHECKING:  # importlib.metadata costs a command ~20 ms: imported when a package is looked for
    from importlib import metadata

GROUP = "tui_rater.protocols"

_lock = threading.Lock()  # judge workers resolve protocols from several threads
_loading = threading.RLock()  # one package's import at a time while stdout points at stderr (it may ask for another)
_found: dict[str, metadata.EntryPoint] | None = None


def _package(entry: metadata.EntryPoint) -> str:
    """The installed package that declares ``entry`` (its module when the metadata does not say)."""
    dist = getattr(entry, "dist", None)
    name = getattr(dist, "name", None) if dist is not None else None
    return str(name) if name else entry.value.split(":")[0]


def _unreadable(exc: Exception) -> str:
    """The sentence for entry-point metadata that cannot be parsed: which installed package's it is."""
    from importlib import metadata

    for dist in metadata.distributions():
        try:
            dist.entry_points  # noqa: B018 -- parsing it is the test
        except Exception:
            try:
                package = repr(dist.metadata["Name"] or "?")
            except Exception:
                package = "(name unreadable)"
            return (
                f"the installed package {package} has an entry_points.txt that cannot be read "
                f"({type(exc).__name__}: {exc}); reinstall or uninstall it"
            )
    return f"the installed packages' entry points cannot be read ({type(exc).__name__}: {exc})"


def entry_points(builtin: Collection[str]) -> dict[str, metadata.EntryPoint]:
    """The group's entry points by protocol name, read once per process (not loaded)."""
    global _found
    with _lock:
        if _found is None:
            from importlib import metadata

            found: dict[str, metadata.EntryPoint] = {}
            try:
                group = metadata.entry_points(group=GROUP)
            except Exception as exc:  # every package's entry_points.txt is parsed, whichever group it declares
                raise UserError(_unreadable(exc)) from None
            for entry in group:
                if entry.name in found and found[entry.name].value != entry.value:
                    raise UserError(
                        f"the packages {_package(found[entry.name])!r} and {_package(entry)!r} both register a "
                        f"protocol named {entry.name!r} (entry points {GROUP!r}); uninstall one of them"
                    )
                found[entry.name] = entry
            _found = found
        found = _found
    for name, entry in found.items():
        if name in builtin:  # the built-in one would win silently; the package's author wants theirs
            raise UserError(
                f"the package {_package(entry)!r} registers a protocol named {name!r} (entry points {GROUP!r}), "
                "which is a built-in protocol's name; rename its entry point and its protocol"
            )
    return found


def load(name: str, builtin: Collection[str]) -> EvaluationProtocol | None:
    """The installed package's protocol called ``name``, or None if no package registers one."""
    entry = entry_points(builtin).get(name)
    if entry is None:
        return None
    said = f"the package {_package(entry)!r} registers the protocol {name!r} as {entry.value!r}"
    if entry.pattern.match(entry.value) is None:
        raise UserError(f"{said}, which is not of the form 'module:object'")
    # the package's own code runs from here: its prints go to stderr, its exits and exceptions become a sentence
    with _loading, contextlib.redirect_stdout(sys.stderr):
        try:
            found = entry.load()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit too: sys.exit(0) at import ended `import` with status 0
            raise UserError(f"{said}, which cannot be loaded ({_raised(exc)})") from None
        try:
            protocol = found() if isinstance(found, type) and issubclass(found, EvaluationProtocol) else found
            if not isinstance(protocol, EvaluationProtocol):
                raise UserError(
                    f"the package {_package(entry)!r} registers {entry.value!r} as the protocol {name!r}, but it is "
                    "not an EvaluationProtocol (subclass tui_rater.domain.protocols.EvaluationProtocol)"
                )
            own, level, kinds = protocol.name, protocol.level, protocol.scale_kinds
        except (KeyboardInterrupt, UserError):
            raise
        except BaseException as exc:
            raise UserError(f"{said}, which fails when made ({_raised(exc)})") from None
    if own != name:
        raise UserError(
            f"the package {_package(entry)!r} registers the protocol {name!r}, but its class calls itself {own!r}; "
            "give the entry point and the class's `name` the same name"
        )
    # the report picks its statistics by these; a wrong one was "a bug in tui-rater" at the first report
    if not isinstance(level, Level):
        raise UserError(f"{said}, but its level {level!r} is not one of {', '.join(repr(v.value) for v in Level)}")
    if not isinstance(kinds, tuple) or not all(isinstance(kind, str) for kind in kinds):
        raise UserError(f"{said}, but its scale_kinds {kinds!r} is not a tuple of scale kinds")
    return protocol


def _raised(exc: BaseException) -> str:
    """What the package's code raised, for the sentence (``SystemExit: 0`` says it called ``sys.exit``)."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
