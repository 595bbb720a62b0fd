"""Judge backends by name: the built-ins and those of other installed packages (the ``tui_rater.backends``
entry-point group), registered the same way.

A backend in the user's own package (CONTRIBUTING.md, "Add a backend") names its class in its ``pyproject.toml``,

    [project.entry-points."tui_rater.backends"]
    echo = "echo_backend:Echo"

and every ``tui-rater`` process asks it for a model spec ``echo:<model>``. The built-ins are declared in
tui-rater's own ``pyproject.toml`` the same way, and also named here, so that they are found without the
installed package's metadata (a source checkout on ``PYTHONPATH``) and without reading anyone's metadata: the
installed packages' entry points are read once, and only for a model spec whose prefix is not a built-in one.
A package that cannot be used is one sentence naming it, as for protocols (``domain/protocols/discovery.py``).
"""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
import threading
from typing import TYPE_CHECKING

from tui_rater.domain.errors import UserError
from tui_rater.domain.protocols.discovery import _package, _raised, _unreadable
from tui_rater.judge.backends.kind import JudgeBackend

if TYPE_CHECKING:
    from importlib import metadata

GROUP = "tui_rater.backends"
# the built-ins, as pyproject.toml declares them; imported when first asked for (their modules import no client)
BUILTIN = {
    "llama.cpp": "tui_rater.judge.backends.llamacpp:LlamaCpp",
    "openai-compatible": "tui_rater.judge.backends.openai_compatible:OpenAICompatible",
}
LOCAL = "llama.cpp"  # a model spec with no backend's prefix is a path to a model file
_PREFIX = re.compile(r"([a-z][a-z0-9_.-]*):")

_lock = threading.RLock()  # judge workers ask for their backend from several threads
_made: dict[str, JudgeBackend] = {}
_found: dict[str, metadata.EntryPoint] | None = None


def _builtin(name: str) -> JudgeBackend:
    module, _, attribute = BUILTIN[name].partition(":")
    kind: type[JudgeBackend] = getattr(importlib.import_module(module), attribute)
    return kind()


def _prefixes() -> dict[str, str]:
    """The built-ins' model-spec prefixes (``api``), by prefix."""
    return {"api": "openai-compatible"}


def entry_points() -> dict[str, metadata.EntryPoint]:
    """The group's entry points by backend name, read once per process (not loaded). A package registering a
    built-in's name with another object is refused; tui-rater's own declarations of its built-ins are not."""
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
                if BUILTIN.get(entry.name) == entry.value:
                    continue  # tui-rater's own declaration of a built-in
                if entry.name in BUILTIN or entry.name in _prefixes():
                    raise UserError(
                        f"the package {_package(entry)!r} registers a backend named {entry.name!r} (entry points "
                        f"{GROUP!r}), which is a built-in backend's name; rename its entry point and its backend"
                    )
                if entry.name in found and found[entry.name].value != entry.value:
                    raise UserError(
                        f"the packages {_package(found[entry.name])!r} and {_package(entry)!r} both register a "
                        f"backend named {entry.name!r} (entry points {GROUP!r}); uninstall one of them"
                    )
                found[entry.name] = entry
            _found = found
        return _found


def _load(entry: metadata.EntryPoint) -> JudgeBackend:
    said = f"the package {_package(entry)!r} registers the backend {entry.name!r} as {entry.value!r}"
    # the package's own code runs from here: its prints go to stderr, its exits and exceptions become a sentence
    with contextlib.redirect_stdout(sys.stderr):
        try:
            found = entry.load()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit too
            raise UserError(f"{said}, which cannot be loaded ({_raised(exc)})") from None
        if not (isinstance(found, type) and issubclass(found, JudgeBackend)):
            raise UserError(f"{said}, but it is not a backend (subclass tui_rater.judge.backends.kind.JudgeBackend)")
        try:
            kind = found()
            own, prefix = kind.name, kind.prefix
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            raise UserError(f"{said}, which fails when made ({_raised(exc)})") from None
    if own != entry.name or prefix != entry.name:
        raise UserError(
            f"{said}, but its class calls itself {own!r} with the prefix {prefix!r}; give the entry point, the "
            "class's `name` and its `prefix` the same name"
        )
    return kind


def backend(name: str) -> JudgeBackend:
    """The backend registered as ``name`` (one sentence naming the known ones when there is none)."""
    with _lock:
        if name not in _made:
            if name in BUILTIN:
                _made[name] = _builtin(name)
            else:
                entry = entry_points().get(name)
                if entry is None:
                    known = ", ".join(names())
                    raise UserError(f"there is no judge backend {name!r}; the installed ones are {known}")
                _made[name] = _load(entry)
        return _made[name]


def names() -> list[str]:
    """Every installed backend's name (the entry points are read, none loaded)."""
    return sorted({*BUILTIN, *entry_points()})


def backend_name(model: str) -> str:
    """The name of the backend a model spec asks for: ``api:<model>`` the OpenAI-compatible one, ``<name>:<model>``
    an installed package's backend ``<name>``, anything else a model file (llama.cpp)."""
    match = _PREFIX.match(model)
    if match is None:
        return LOCAL
    prefix = match.group(1)
    builtin = _prefixes().get(prefix)
    if builtin is not None:
        return builtin
    # a path such as "models:v2/x.gguf" stays a path unless a package registers its first word as a backend
    return prefix if prefix in entry_points() else LOCAL


def for_model(model: str) -> JudgeBackend:
    return backend(backend_name(model))
