"""A judge configuration: which model, how it is asked, how it samples -- and its provenance.

Model spec: a path to a ``.gguf`` file (local, llama.cpp) or ``api:<model>`` (any
OpenAI-compatible server, through the openai client). The API key is read from the
environment (``OPENAI_API_KEY`` or ``--api-key-env NAME``) or the config file, and is never
stored in the study file, the provenance, logs or messages.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tui_rater.domain.errors import UserError

MODES = ("text", "constrained", "distribution", "implicit")
NO_KEY = "no-key"
_SHA_CACHE: dict[tuple[str, int, float], str] = {}


@dataclass(frozen=True)
class JudgeSpec:
    model: str  # the path of a .gguf file, or "api:<model id>"
    mode: str = "text"
    variant: str = "plain"
    samples: int = 3  # Chiang & Lee: 3 samples per question, as 3 "annotators"
    temperature: float = 1.0
    top_p: float = 0.9
    seed: int = 0
    conversation: bool = False  # the paper's ChatGPT setting: all questions in one chat
    max_tokens: int = 128
    max_retries: int = 3  # regenerations of a reply that does not parse
    # distribution mode: a pass with less next-token probability than this on the options is
    # stored as low_mass (the model was not answering), not as a rating
    min_mass: float = 0.5
    # local
    n_ctx: int = 4096
    n_gpu_layers: int = 0
    chat_template: str | None = None  # None: the GGUF's own template, if it has one
    # API
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    extra: dict = field(default_factory=dict)

    @property
    def is_api(self) -> bool:
        return self.model.startswith("api:")

    @property
    def api_model(self) -> str:
        return self.model.removeprefix("api:")

    def validate(self) -> JudgeSpec:
        if self.mode not in MODES:
            raise UserError(f"--mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.samples < 1 or self.samples > 100:
            raise UserError("--samples must be between 1 and 100")
        if not 0 <= self.temperature <= 5:
            raise UserError("--temperature must be between 0 and 5")
        if not 0 < self.top_p <= 1:
            raise UserError("--top-p must be in (0, 1]")
        if self.max_retries < 0 or self.max_tokens < 1:
            raise UserError("--max-retries must be >= 0 and --max-tokens >= 1")
        if not 0 <= self.min_mass <= 1:
            raise UserError("--min-mass must be between 0 and 1")
        if self.is_api:
            if not self.api_model:
                raise UserError("an API model spec is api:<model>, e.g. api:gpt-4o-mini")
            if self.base_url is not None:
                check_base_url(self.base_url)
            if self.n_gpu_layers:
                raise UserError("--n-gpu-layers applies to local .gguf models only")
        else:
            path = Path(self.model)
            if not path.exists():
                raise UserError(f"model file {path} does not exist (give a .gguf path or api:<model>)")
            if path.is_dir():
                raise UserError(f"model {path} is a directory; give the .gguf file inside it")
            with open(path, "rb") as handle:
                if handle.read(4) != b"GGUF":
                    raise UserError(f"model file {path} is not a GGUF file (it lacks the GGUF header)")
        return self

    def api_key(self) -> str:
        """The key, from the environment or the config file; a placeholder for keyless local servers."""
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        from tui_rater.config import api_key_from_config

        key = api_key_from_config()
        if key:
            return key
        if self.base_url:
            return NO_KEY  # llama.cpp server, Ollama, vLLM on loopback: no key needed
        raise UserError(f"no API key: set ${self.api_key_env} (or --api-key-env NAME, or [judge] api_key)")


# query parameters that say which API version is spoken, not who speaks: kept in the provenance
PUBLIC_QUERY = frozenset({"api-version", "api_version"})
REDACTED = "[redacted]"
URL_SECRET_MIN_LENGTH = 8


def check_base_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        raise UserError("--base-url is not a URL (give e.g. http://127.0.0.1:8080/v1)") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError("--base-url must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8080/v1")


def strip_credentials(url: str) -> str:
    """The URL without user, password, secret query values or fragment: what may be stored and shown."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    host = parts.netloc.rpartition("@")[2]
    query = [
        (name, value if name.lower() in PUBLIC_QUERY else REDACTED)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit((parts.scheme, host, parts.path, urlencode(query, safe="[]"), ""))


def url_secrets(url: str | None) -> list[str]:
    """What a URL carries that must never appear in a stored reply: its password (or a user name
    that is a token, with no password) and secret query values. Short ones (a user name such as
    "alice") are left alone: replacing them would change the replies' words."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    found = [parts.password or parts.username or ""]
    found += [value for name, value in parse_qsl(parts.query) if name.lower() not in PUBLIC_QUERY]
    return [secret for secret in found if len(secret) >= URL_SECRET_MIN_LENGTH]


def file_sha256(path: str | Path) -> str:
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime)
    if key not in _SHA_CACHE:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _SHA_CACHE[key] = digest.hexdigest()
    return _SHA_CACHE[key]


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def provenance(spec: JudgeSpec) -> dict:
    """Everything needed to say which judge produced a rating (never the API key)."""
    config = asdict(spec)
    config.pop("api_key_env", None)
    config.pop("timeout_s", None)
    if spec.is_api:
        config["backend"] = "openai-compatible"
        config["api_model"] = spec.api_model
        # a key written into the URL (user:key@host, ?api_key=...) is never stored (issue 11)
        config["base_url"] = strip_credentials(spec.base_url or "https://api.openai.com/v1")
        config["openai_version"] = _version("openai")
        config.pop("n_ctx"), config.pop("n_gpu_layers"), config.pop("chat_template")
    else:
        config["backend"] = "llama.cpp"
        config["model_file"] = Path(spec.model).name
        config["model_sha256"] = file_sha256(spec.model)
        config["llama_cpp_python_version"] = _version("llama-cpp-python")
        config.pop("model")
        if spec.chat_template:
            config["chat_template_sha256"] = hashlib.sha256(spec.chat_template.encode()).hexdigest()
            config.pop("chat_template")
        # where layers run does not change what the judge is
        config.pop("n_gpu_layers")
    config["tui_rater_version"] = _version("tui-rater")
    return config


def rater_name(spec: JudgeSpec, config: dict) -> str:
    """A readable, unique name: model, mode, variant, sampling, and a hash of the whole config."""
    if spec.is_api:
        model = f"api:{spec.api_model}"
    else:
        model = f"{Path(spec.model).name}@{config['model_sha256'][:8]}"
    identity = {k: v for k, v in config.items() if not k.endswith("_version")}
    digest = hashlib.sha256(repr(sorted(identity.items())).encode()).hexdigest()[:6]
    parts = [model, spec.mode, spec.variant, f"T{spec.temperature:g}", f"p{spec.top_p:g}", f"s{spec.seed}"]
    if spec.conversation:
        parts.append("chat")
    return "/".join(parts) + f"#{digest}"
