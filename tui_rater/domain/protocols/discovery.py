"""Protocols from other installed packages, found through the ``tui_rater.protocols`` entry-point group.

A fourth paper's protocol can live in the user's own package (CONTRIBUTING.md): its ``pyproject.toml`` names
the class under the protocol's name,

    [project.entry-points."tui_rater.protocols"]
    bracket-rating = "mt_bench_protocol:BracketRating"

and every ``tui-rater`` process finds it when a task asks for ``protocol = "bracket-rating"``, with no change
to this package. The installed packages' metadata is read once, and only when a name is not a built-in one: a
command whose tasks ask only the papers' protocols never pays for the scan, nor imports anyone's module.

A package that cannot be used is one sentence naming it (a ``UserError``), never a traceback: its module
fails to import, its object is not a protocol, the protocol calls itself by another name, or its name is
a built-in one or another package's.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import TYPE_CHECKING

from tui_rater.domain.errors import UserError
from tui_rater.domain.protocols.base import EvaluationProtocol

if TYPE_CHECKING:  # importlib.metadata costs a command ~20 ms: imported when a package is looked for
    from importlib import metadata

GROUP = "tui_rater.protocols"

_lock = threading.Lock()  # judge workers resolve protocols from several threads
_found: dict[str, metadata.EntryPoint] | None = None


def _package(entry: metadata.EntryPoint) -> str:
    """The installed package that declares ``entry`` (its module when the metadata does not say)."""
    dist = getattr(entry, "dist", None)
    name = getattr(dist, "name", None) if dist is not None else None
    return str(name) if name else entry.value.split(":")[0]


def entry_points(builtin: Collection[str]) -> dict[str, metadata.EntryPoint]:
    """The group's entry points by protocol name, read once per process (not loaded)."""
    global _found
    with _lock:
        if _found is None:
            from importlib import metadata

            found: dict[str, metadata.EntryPoint] = {}
            for entry in metadata.entry_points(group=GROUP):
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
    package = _package(entry)
    try:
        found = entry.load()
    except Exception as exc:  # anything its module raises on import is the package's, not ours
        raise UserError(
            f"the package {package!r} registers the protocol {name!r} as {entry.value!r}, which cannot be "
            f"loaded ({type(exc).__name__}: {exc})"
        ) from None
    try:
        protocol = found() if isinstance(found, type) and issubclass(found, EvaluationProtocol) else found
    except Exception as exc:
        raise UserError(
            f"the package {package!r} registers the protocol {name!r} as {entry.value!r}, which fails when "
            f"made ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(protocol, EvaluationProtocol):
        raise UserError(
            f"the package {package!r} registers {entry.value!r} as the protocol {name!r}, but it is not an "
            "EvaluationProtocol (subclass tui_rater.domain.protocols.EvaluationProtocol)"
        )
    if protocol.name != name:
        raise UserError(
            f"the package {package!r} registers the protocol {name!r}, but its class calls itself "
            f"{protocol.name!r}; give the entry point and the class's `name` the same name"
        )
    return protocol
