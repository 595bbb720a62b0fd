"""Settings: defaults < config file (TOML) < environment < command-line flags.

The config file lives at ``$TUI_RATER_CONFIG`` or, by default, ``config.toml`` in the
platform's config folder (``~/.config/tui-rater/`` on Linux). Example::

    db = "~/studies/stories.db"
    annotator = "teacher-1"
    task_files = ["~/studies/my_tasks.toml"]

    [judge]
    samples = 3
    temperature = 1.0
    top_p = 0.9
    base_url = "http://127.0.0.1:8080/v1"   # or a list: replicas of one model
    api_key_env = "OPENAI_API_KEY"

    [judge.options.echo]   # an installed backend's own options (--backend-option NAME=VALUE), by backend
    pitch = 3

    [keys]            # the app's key bindings, by action id (tui_rater/keys.py)
    undo = "u,ctrl+z"

A misspelt setting is an error that names the closest valid one (a judge must not run on a default
the user meant to change); a misspelt action or key in ``[keys]`` is a warning, and the rest applies.
"""

from __future__ import annotations

import os
import stat
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from tui_rater.domain.decoding import Decoding, default_of
from tui_rater.domain.errors import UserError
from tui_rater.keys import check_keymap, closest

DEFAULT_DB = "tui-rater.db"
OptionValue = str | int | float | bool  # a backend option's value as TOML writes it (``judge/backends/options.py``)
ENV_PREFIX = "TUI_RATER_"


@dataclass(frozen=True)
class JudgeDefaults:
    # [judge] samples, temperature, top_p, max_tokens, seed: one key per field of Decoding, where they are defined
    decoding: Decoding = field(default_factory=Decoding)
    max_retries: int = 3
    base_url: str | None = None
    replicas: tuple[str, ...] = ()  # base_url as a list: the endpoints after the first
    # None: $OPENAI_API_KEY, sent to OpenAI only; a name given here or with --api-key-env is sent to base_url
    api_key_env: str | None = None
    n_ctx: int = 4096
    n_gpu_layers: int = 0
    n_threads: int = 0  # 0: every core
    # [judge.options.BACKEND]: a backend's own options, by backend name, as written (TOML's types); checked against
    # what the backend declares when a judge of that backend is made (``judge/backends/options.py``)
    backend_options: Mapping[str, Mapping[str, OptionValue]] = field(default_factory=dict)
    config_file: str | None = None  # where backend_options were read, for the sentence that refuses one


# the [judge] keys that are not decoding settings, with the ranges their flags take (0 threads: every core)
JUDGE_LIMITS: dict[str, tuple[int, int]] = {
    "max_retries": (0, 100),
    "n_ctx": (1, 10_000_000),
    "n_gpu_layers": (-1, 100_000),
    "n_threads": (0, 4096),
}
# a local model's settings: the config file's apply to a local judge only (a [judge] n_threads kept for the
# laptop's model must not refuse every API judge, as the same flag given for an API model is)
LOCAL_ONLY = ("n_ctx", "n_gpu_layers", "n_threads")


@dataclass(frozen=True)
class Settings:
    db: str = DEFAULT_DB
    annotator: str | None = None
    task_files: tuple[str, ...] = ()
    keys: dict[str, str] = field(default_factory=dict)
    judge: JudgeDefaults = field(default_factory=JudgeDefaults)
    config_path: str | None = None
    warnings: tuple[str, ...] = ()


def config_path() -> Path:
    explicit = os.environ.get(ENV_PREFIX + "CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    import platformdirs  # only when no explicit path: keeps the common path import-light

    return Path(platformdirs.user_config_dir("tui-rater", appauthor=False)) / "config.toml"


def load_settings(path: Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    env: Mapping[str, str] = os.environ if environ is None else environ
    path = path or config_path()
    settings = Settings()
    warnings: list[str] = []
    if path.exists():
        raw = _read_toml(path)
        settings = _apply_file(settings, raw, path)
        # [keys] problems cost nothing but a key: say so, and go on with the rest
        settings, problems = _usable_keys(settings)
        warnings += [f"config file {path}: {problem}" for problem in problems]
        if sys.platform != "win32" and os.stat(path).st_mode & (stat.S_IRGRP | stat.S_IROTH):
            # the file may hold an API key (judge.api_key): it should be private
            warnings.append(f"config file {path} is readable by other users; run `chmod 600 {path}`")
        settings = replace(settings, config_path=str(path))
    if env.get(ENV_PREFIX + "DB"):
        settings = replace(settings, db=env[ENV_PREFIX + "DB"])
    if env.get(ENV_PREFIX + "ANNOTATOR"):
        settings = replace(settings, annotator=env[ENV_PREFIX + "ANNOTATOR"])
    if env.get(ENV_PREFIX + "BASE_URL"):
        settings = replace(settings, judge=replace(settings.judge, base_url=env[ENV_PREFIX + "BASE_URL"], replicas=()))
    return replace(settings, warnings=tuple(warnings))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"config file {path} is not valid UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"config file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise UserError(f"cannot read config file {path}: {exc.strerror}") from None


def _apply_file(settings: Settings, raw: dict[str, Any], path: Path) -> Settings:
    known = ["annotator", "db", "judge", "keys", "task_files"]
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise UserError(f"config file {path}: unknown setting {unknown[0]!r} {_suggest(unknown[0], known)}")
    changes: dict[str, Any] = {}
    for key in ("db", "annotator"):
        if key in raw:
            if not isinstance(raw[key], str) or not raw[key].strip():
                raise UserError(f"config file {path}: {key!r} must be a non-empty string")
            changes[key] = str(Path(raw[key]).expanduser()) if key == "db" else raw[key]
    if "task_files" in raw:
        files = raw["task_files"]
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise UserError(f"config file {path}: 'task_files' must be a list of paths")
        changes["task_files"] = tuple(str(Path(f).expanduser()) for f in files)
    if "keys" in raw:
        keys = raw["keys"]
        if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
            raise UserError(f'config file {path}: [keys] maps action names to key strings such as "u,ctrl+z"')
        changes["keys"] = dict(keys)
    if "judge" in raw:
        changes["judge"] = _judge_from(raw["judge"], path)
    return replace(settings, **changes)


def _judge_from(raw: object, path: Path, decoding: Decoding | None = None) -> JudgeDefaults:
    """The [judge] table; its decoding keys are the fields of ``decoding`` (by default ``Decoding()``)."""
    if not isinstance(raw, dict):
        raise UserError(f"config file {path}: [judge] must be a table")
    defaults = JudgeDefaults() if decoding is None else JudgeDefaults(decoding=decoding)
    knobs = {knob.name: knob for knob in fields(defaults.decoding)}
    types = {
        f.name: type(getattr(defaults, f.name))
        for f in fields(JudgeDefaults)
        if f.name not in ("decoding", "replicas", "backend_options", "config_file")
    }
    types.update({name: type(default_of(knob)) for name, knob in knobs.items()})
    values: dict[str, Any] = {}
    given: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "api_key":
            continue  # read by the API backend only; never copied into settings objects
        if key == "base_url" and isinstance(value, list):  # several endpoints of one model (replicas)
            if not value or not all(isinstance(url, str) and url for url in value):
                raise UserError(f"config file {path}: [judge] base_url must be a URL or a list of URLs")
            values["base_url"], values["replicas"] = value[0], tuple(value[1:])
            continue
        if key == "options":
            values["backend_options"], values["config_file"] = _backend_options(value, path), str(path)
            continue
        if key not in types:
            known = [*types, "api_key", "options"]
            raise UserError(f"config file {path}: unknown [judge] setting {key!r} {_suggest(key, known)}")
        expected = types[key]
        if key in ("base_url", "api_key_env"):
            expected = str
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or isinstance(value, bool):
            kind = {int: "a whole number", float: "a number", str: "a string"}.get(expected, expected.__name__)
            raise UserError(f"config file {path}: [judge] {key} must be {kind}")
        if key in knobs:
            _check_range(knobs[key], value, path)
            given[key] = value
        else:
            if key in JUDGE_LIMITS and not JUDGE_LIMITS[key][0] <= value <= JUDGE_LIMITS[key][1]:
                low, high = JUDGE_LIMITS[key]
                raise UserError(f"config file {path}: [judge] {key} must be in [{low}, {high}]")
            values[key] = value
    return replace(defaults, decoding=defaults.decoding.given(given), **values)


def _backend_options(raw: object, path: Path) -> dict[str, dict[str, OptionValue]]:
    """[judge.options]: one table per backend, of values TOML writes (which backend declares what is checked when a
    judge is made: the backends are not imported to read the config file)."""
    shape = "[judge.options] holds one table per backend, e.g. [judge.options.echo] with pitch = 3"
    if not isinstance(raw, dict) or not all(isinstance(table, dict) for table in raw.values()):
        raise UserError(f"config file {path}: {shape}")
    for backend, table in raw.items():
        for name, value in table.items():
            if not isinstance(value, str | int | float | bool):
                raise UserError(
                    f"config file {path}: [judge.options.{backend}] {name} must be text, a number, true or false"
                )
    return {backend: dict(table) for backend, table in raw.items()}


def _check_range(knob: Field[Any], value: float, path: Path) -> None:
    low, high = knob.metadata["low"], knob.metadata["high"]
    if not low <= value <= high or (knob.metadata["low_open"] and value == low):
        opening = "(" if knob.metadata["low_open"] else "["
        raise UserError(f"config file {path}: [judge] {knob.name} must be in {opening}{low}, {high}]")


def _suggest(word: str, known: list[str]) -> str:
    hint = closest(word, known)
    return f"(did you mean {hint!r}?)" if hint else f"(known: {', '.join(sorted(known))})"


def _usable_keys(settings: Settings) -> tuple[Settings, list[str]]:
    usable, problems = check_keymap(settings.keys)
    return replace(settings, keys=usable), problems


def api_key_from_config(for_url: str | None = None, path: Path | None = None) -> str | None:
    """The key in [judge] api_key, if the user keeps one there (the environment is preferred), for a
    request to ``for_url``: the key goes to OpenAI or to the [judge] base_url of the same file, nowhere else."""
    path = path or config_path()
    if not path.exists():
        return None
    judge = _read_toml(path).get("judge", {})
    if not isinstance(judge, dict):
        return None
    key = judge.get("api_key")
    listed = judge.get("base_url")
    urls = listed if isinstance(listed, list) else [listed]  # each endpoint of the list is the user's
    if for_url and not is_openai_url(for_url) and for_url not in urls:
        return None
    return key if isinstance(key, str) and key else None


def is_openai_url(url: str) -> bool:
    """A URL of OpenAI's own API, where $OPENAI_API_KEY belongs."""
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return urlsplit(url).scheme == "https" and host == "api.openai.com"
