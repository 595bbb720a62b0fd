"""A judge backend's options: what each backend declares it takes (``JudgeBackend.options``), and the values one judge
gets from the command line (``--backend-option NAME=VALUE``) and the config file (``[judge.options.NAME]``).

An option is a name, a type, a default, a help line and whether another value makes another judge (``identity``).
Two kinds are held in two places:

- settings with a flag of their own (``--n-ctx``, ``--base-url``: the built-ins', and the HTTP ones a third party
  may take, ``BASE_URL`` and ``TIMEOUT``) are ``JudgeSpec`` fields of the same name, as they were before backends
  were objects: the judges made with them keep their identities (tests/judge/test_identity_pins.py);
- every other option (a third party's own) is held, parsed, in the one value ``JudgeSpec.extra``, by name: a
  backend reads its own options from there without a field of its own, and its identity keeps the ``identity`` ones.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tui_rater.domain.errors import UserError

OptionValue = str | int | float | bool
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
_KIND: dict[type, str] = {bool: "true or false", int: "a whole number", float: "a finite number", str: "text"}
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")  # a TOML key written without quotes


@dataclass(frozen=True)
class BackendOption:
    """One setting a backend takes. Without ``flag`` (a third party's own), the user gives it as ``--backend-option
    NAME=VALUE`` or in the config file's ``[judge.options.BACKEND]`` table, and the judge holds it, parsed, in
    ``JudgeSpec.extra[NAME]``; with ``flag``, it is that flag (and the ``[judge]`` key ``NAME``) and the
    ``JudgeSpec`` field ``NAME``."""

    name: str
    type: type[str] | type[int] | type[float] | type[bool] = str
    default: OptionValue | None = None  # None: given or absent (``spec.extra`` lacks it)
    help: str = ""
    # part of the judge's identity: another value is another judge (e.g. a sampling setting); False for settings
    # that change where or how replies travel, not what they are (a log level, a connection pool's size)
    identity: bool = True
    flag: str | None = None  # a flag of its own ("--n-ctx"), held in the JudgeSpec field ``name``

    def parse(self, backend: str, text: str) -> OptionValue:
        """The value of ``--backend-option NAME=text``, or one sentence saying what it takes."""
        said = f"--backend-option {self.name}={text}: the {backend} backend's option {self.name!r} is"
        if self.type is bool:
            if text.strip().lower() in _TRUE + _FALSE:
                return text.strip().lower() in _TRUE
            raise UserError(f"{said} true or false")
        if self.type is int:
            try:
                return int(text)
            except ValueError:
                raise UserError(f"{said} a whole number") from None
        if self.type is float:
            try:
                number = float(text)
            except ValueError:
                number = math.nan
            if not math.isfinite(number):
                raise UserError(f"{said} a finite number")
            return number
        return text

    def take(self, backend: str, value: object, said: str) -> OptionValue:
        """A config file's value (TOML's own types: ``pitch = 3``, ``loud = true``), or one sentence."""
        wanted = self.type
        if wanted is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        fits = isinstance(value, wanted) and (wanted is bool or not isinstance(value, bool))
        if not fits or (isinstance(value, float) and not math.isfinite(value)):
            written = f'"{value}"' if isinstance(value, str) else str(value).lower()
            raise UserError(
                f"{said} = {written}: the {backend} backend's option {self.name!r} is {_KIND[wanted]}"
                + (' (write text in quotes: "…")' if wanted is str else "")
            )
        assert isinstance(value, str | int | float | bool)
        return value


def table(backend: str) -> str:
    """The config file's table of a backend's options, as the user writes it."""
    key = backend if _BARE_KEY.fullmatch(backend) else '"' + backend.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"[judge.options.{key}]"


def described(options: tuple[BackendOption, ...]) -> str:
    """The options a sentence names: ``pitch, tag``; the flags for a backend whose settings are all flags."""
    own = [option.name for option in options if option.flag is None]
    if own:
        return "its options: " + ", ".join(own)
    flags = [option.flag for option in options if option.flag]
    return "its settings are flags of their own" + (": " + ", ".join(flags) if flags else "")


def option_values(
    backend: str,
    declared: tuple[BackendOption, ...],
    given: tuple[str, ...],
    configured: Mapping[str, object] | None = None,
    source: str = "the config file",
) -> dict[str, object]:
    """A judge's own options (``JudgeSpec.extra``): the config file's table (``configured``, from ``source``) under
    the ``--backend-option NAME=VALUE`` flags, parsed, with the declared defaults filled in (declaration order); one
    sentence for a name the backend does not declare or a value it cannot take."""
    own = {option.name: option for option in declared if option.flag is None}
    values: dict[str, OptionValue] = {}
    if configured:
        where = f"{source}: {table(backend)}"
        if not own:
            raise UserError(f"{where}: the {backend} backend takes no options there ({described(declared)})")
        for name, value in configured.items():
            if name not in own:
                raise UserError(f"{where}: the {backend} backend has no option {name!r} ({described(declared)})")
            values[name] = own[name].take(backend, value, f"{where} {name}")
    if given and not own:
        raise UserError(f"the {backend} backend takes no --backend-option ({described(declared)})")
    flagged: set[str] = set()
    for flag in given:
        name, equals, text = flag.partition("=")
        name = name.strip()
        if not equals or not name:
            raise UserError(f"--backend-option takes NAME=VALUE, not {flag!r}")
        if name not in own:
            raise UserError(f"the {backend} backend has no option {name!r} ({described(declared)})")
        if name in flagged:
            raise UserError(f"--backend-option {name} is given twice")
        flagged.add(name)
        values[name] = own[name].parse(backend, text)  # the flag over the config file
    return {
        option.name: values.get(option.name, option.default)
        for option in own.values()
        if option.name in values or option.default is not None
    }


# --- the settings with flags of their own: the built-ins', and those a third party's server backend may take -----

BASE_URL = BackendOption(
    "base_url",
    str,
    None,
    "the server's URL (given again: replicas serving the same model, not part of the identity)",
    flag="--base-url",
)
API_KEY_ENV = BackendOption(
    "api_key_env", str, None, "the environment variable holding the server's key", identity=False, flag="--api-key-env"
)
TIMEOUT = BackendOption("timeout_s", float, 120.0, "seconds to wait for one reply", identity=False, flag="--timeout")
