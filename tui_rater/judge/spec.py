"""A judge configuration: which model, how it is asked, how it samples -- and its provenance.

Model spec: a path to a ``.gguf`` file (local, llama.cpp) or ``api:<model>`` (any
OpenAI-compatible server, through the openai client). The API key is read from the
environment (``OPENAI_API_KEY`` or ``--api-key-env NAME``) or the config file, and is never
stored in the study file, the provenance, logs or messages.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlencode, urlsplit, urlunsplit

from tui_rater.domain import modes
from tui_rater.domain.decoding import KNOBS, Decoding, flag_name
from tui_rater.domain.errors import UserError
from tui_rater.judge.paths import cache_dir

if TYPE_CHECKING:
    from tui_rater.judge.backends.kind import JudgeBackend
    from tui_rater.judge.gguf_header import GGUFHeader

NO_KEY = "no-key"
DEFAULT_N_CTX = 4096
LARGE_MODEL_BYTES = 1 << 30  # above this, say what is being loaded before the long wait
KV_BYTES = 2  # llama.cpp's KV cache holds f16 keys and values by default
_SHA_LOCK = threading.Lock()
SHA_CACHE_FILE = "model-sha256.json"


@dataclass(frozen=True)
class JudgeSpec:
    model: str  # the path of a .gguf file, or "api:<model id>"
    mode: str = "text"
    variant: str = "plain"
    decoding: Decoding = field(default_factory=Decoding)  # samples, temperature, top_p, max_tokens, seed
    conversation: bool = False  # the paper's ChatGPT setting: all questions in one chat
    max_retries: int = 3  # regenerations of a reply that does not parse
    # distribution mode: a pass with less next-token probability than this on the options is
    # stored as low_mass (the model was not answering), not as a rating
    min_mass: float = 0.5
    # local
    n_ctx: int = 4096  # DEFAULT_N_CTX
    n_gpu_layers: int = 0
    n_threads: int = 0  # llama.cpp's CPU threads (0: every core); the readings do not depend on it
    chat_template: str | None = None  # None: the GGUF's own template, if it has one
    # API
    base_url: str | None = None
    # more endpoints serving the same model as base_url (replicas: vLLM, SGLang, llama-server behind one
    # judge, ``backends/api_pool``); not part of the judge's identity, so adding a replica makes no new judge
    replicas: tuple[str, ...] = ()
    # None: $OPENAI_API_KEY, which is sent to OpenAI only (never to another --base-url unless named)
    api_key_env: str | None = None
    timeout_s: float = 120.0
    # the backend's own options (``JudgeBackend.options`` without a flag: --backend-option NAME=VALUE, the config
    # file's [judge.options.BACKEND]), parsed, by name: a backend reads its options here, not from fields of its own
    extra: dict[str, object] = field(default_factory=dict)
    # the user's name for this configuration (--judge-name): part of its identity, so two servers
    # answering to the same model name and URL but configured differently stay two judges
    judge_name: str | None = None

    @property
    def backend(self) -> str:
        """The registered name of the backend the model spec asks for (``judge/backends/registry.py``)."""
        from tui_rater.judge.backends.registry import backend_name

        return backend_name(self.model)

    @property
    def kind(self) -> JudgeBackend:
        """The backend itself: its abilities and policies (``judge/backends/kind.py``)."""
        from tui_rater.judge.backends.registry import backend

        return backend(self.backend)

    @property
    def options(self) -> dict[str, object]:
        """Every setting this judge's backend declares, by name, as one value: its flags' fields and its own options
        (``extra``); the settings of other backends are not in it."""
        return {
            option.name: getattr(self, option.name) if option.flag else self.extra.get(option.name)
            for option in self.kind.options
        }

    @property
    def api_model(self) -> str:
        return self.model.removeprefix("api:")

    @property
    def endpoints(self) -> tuple[str, ...]:
        """Every server this judge asks, the first (its identity's) first; empty for OpenAI's own API."""
        return (self.base_url, *self.replicas) if self.base_url else ()

    def at(self, endpoint: str) -> JudgeSpec:
        """This judge asking one of its endpoints alone: the key routing (``api_key``) is that endpoint's."""
        return replace(self, base_url=endpoint, replicas=())

    def validate(self) -> JudgeSpec:
        modes.mode_of(self.mode)  # one sentence naming the modes if it is none of them
        decoding = self.decoding
        if self.max_retries < 0:
            raise UserError("--max-retries must be >= 0")
        for knob in KNOBS:  # every setting within its range (the flags and the config file check the same)
            value, meta = getattr(decoding, knob.name), knob.metadata
            if not meta["low"] <= value <= meta["high"] or (meta["low_open"] and value == meta["low"]):
                opening = "(" if meta["low_open"] else "["
                raise UserError(f"{flag_name(knob)} must be in {opening}{meta['low']}, {meta['high']}]")
        if not 0 <= self.min_mass <= 1:
            raise UserError("--min-mass must be between 0 and 1")
        if self.judge_name is not None:
            check_judge_name(self.judge_name)
        return self.kind.validate(self)

    def api_key(self) -> str:
        """The key, from the environment or the config file; a placeholder for keyless local servers.

        A key goes only where the user sent it: $OPENAI_API_KEY to OpenAI, or to another server only
        when its variable is named (``--api-key-env``); the config file's key to OpenAI or its own base_url.
        """
        from tui_rater.config import api_key_from_config, is_openai_url

        foreign = bool(self.base_url) and not is_openai_url(self.base_url or "")
        if self.api_key_env is not None or not foreign:
            key = os.environ.get(self.key_variable)
            if key:
                return key
        key = api_key_from_config(self.base_url)
        if key:
            return key
        if self.base_url:
            return NO_KEY  # llama.cpp server, Ollama, vLLM on loopback: no key needed
        raise UserError(f"no API key: set ${self.key_variable} (or --api-key-env NAME, or [judge] api_key)")

    @property
    def key_variable(self) -> str:
        return self.api_key_env or DEFAULT_KEY_VARIABLE


def usable_cores() -> int:
    """The CPU cores this process may run on (a container's or taskset's share, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def check_threads(n_threads: int) -> None:
    """More llama.cpp threads than cores is refused: they spin waiting for each other (4096 threads on 2 cores
    took a tiny model's one reply past two minutes, 5 s with 2); 0 is every core."""
    cores = usable_cores()
    if n_threads > cores:
        raise UserError(
            f"--threads {n_threads} is more than the {cores} CPU cores tui-rater can use here; give at most "
            f"{cores}, or leave it out for every core"
        )


def check_judge_name(name: str) -> None:
    from tui_rater.domain.display import check_name
    from tui_rater.store.labels import MAX_JUDGE_NAME

    check_name(name, "--judge-name", MAX_JUDGE_NAME)


DEFAULT_KEY_VARIABLE = "OPENAI_API_KEY"

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


def check_distinct(urls: tuple[str, ...]) -> None:
    """The same server given twice would be asked as two replicas (and counted twice): refused."""
    seen: set[tuple[str, str, int | None, str, str]] = set()
    for url in urls:
        shown = strip_credentials(url).rstrip("/")
        parts = urlsplit(shown)
        # a host's case and the scheme's default port written out name the same server
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
        server = (parts.scheme.lower(), parts.hostname or "", port, parts.path.rstrip("/"), parts.query)
        if server in seen:
            raise UserError(f"--base-url {shown} is given twice; give each endpoint once")
        seen.add(server)


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
    """What a URL carries that must never appear in a stored reply: its password (or a user name that
    is a token, with no password) and secret query values, each as written in the URL and decoded (a
    server may echo either; ``api_reply.scrub`` also tries their other encodings). A user name alone
    shorter than 8 characters ("alice") is left alone: replacing it would change the replies' words."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    found = []
    if parts.password:
        found.append(parts.password)
    elif parts.username and len(unquote(parts.username)) >= URL_SECRET_MIN_LENGTH:
        found.append(parts.username)
    if parts.password or found:
        # the client sends them as `Authorization: Basic base64(user:password)`: a server may echo that too
        import base64

        userpass = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
        sent = base64.b64encode(userpass).decode()
        found += [sent, sent.rstrip("=")]
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if value and unquote_plus(name).lower() not in PUBLIC_QUERY:
            found.append(value)
    return sorted({form for secret in found for form in (secret, unquote(secret), unquote_plus(secret)) if form})


# --- a local model, checked before llama.cpp loads it -----------------------------------------


@dataclass(frozen=True)
class LocalModel:
    """What the GGUF header says, as far as loading it here is concerned."""

    path: Path
    file_bytes: int
    trained_context: int  # the context length the model was trained with (its GGUF metadata)
    kv_bytes_per_token: int | None  # the KV cache's bytes per token of context (None: not an attention model)


def check_local_model(spec: JudgeSpec) -> LocalModel:
    """Refuse, in one sentence and in milliseconds, a local model that cannot work here: not a
    GGUF file, a damaged header, ``--n-ctx`` beyond the context the model was trained with, or
    weights plus KV cache larger than this machine's memory (llama.cpp would otherwise grow to
    gigabytes, or read a 30 GB file for minutes, before failing). The backend may call it too."""
    from tui_rater.judge.gguf_header import BadHeader, read_gguf_header

    path = Path(spec.model)
    if not path.exists():
        raise UserError(f"model file {path} does not exist (give a .gguf path or api:<model>)")
    if path.is_dir():
        raise UserError(f"model {path} is a directory; give the .gguf file inside it")
    try:
        header = read_gguf_header(path)
    except BadHeader as exc:
        raise UserError(f"model file {path} is not a GGUF file llama.cpp can load: {exc}") from None
    except OSError as exc:
        raise UserError(f"cannot read model file {path}: {exc.strerror or exc}") from None
    trained = header.arch_value("context_length")
    model = LocalModel(
        path, header.file_bytes, trained if isinstance(trained, int) and trained > 0 else 0, _kv_per_token(header)
    )
    if model.trained_context and spec.n_ctx > model.trained_context and spec.n_ctx != DEFAULT_N_CTX:
        raise UserError(
            f"--n-ctx {spec.n_ctx:,} is beyond the {model.trained_context:,}-token context {path.name} was trained "
            f"with; use --n-ctx {model.trained_context} or less"
        )
    if spec.n_gpu_layers == 0:  # weights and cache in this machine's memory (else on the GPU: not checked here)
        _check_memory(model, min(spec.n_ctx, model.trained_context or spec.n_ctx))
    return model


def _kv_per_token(header: GGUFHeader) -> int | None:
    def number(key: str) -> int | None:
        value = header.arch_value(key)
        if isinstance(value, list):  # per-layer values
            value = max((v for v in value if isinstance(v, int)), default=None)
        return value if isinstance(value, int) and value > 0 else None

    layers, embd, heads = number("block_count"), number("embedding_length"), number("attention.head_count")
    if not (layers and embd and heads):
        return None
    kv_heads = number("attention.head_count_kv") or heads
    key = number("attention.key_length") or embd // heads
    value = number("attention.value_length") or embd // heads
    return layers * kv_heads * (key + value) * KV_BYTES


def _memory() -> tuple[int | None, int | None]:
    """(total, available now) bytes of memory; None where the platform does not say."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)

        def kib(name: str) -> int | None:
            return int(fields[name].split()[0]) * 1024 if name in fields else None

        return kib("MemTotal"), kib("MemAvailable")
    except (OSError, ValueError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), None
    except (AttributeError, ValueError, OSError):
        return None, None


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def _check_memory(model: LocalModel, n_ctx: int) -> None:
    total, available = _memory()
    kv = (model.kv_bytes_per_token or 0) * n_ctx
    advice = "use a smaller --n-ctx or model, or --n-gpu-layers to put it on a GPU"
    if available is not None and kv > available:
        raise UserError(
            f"{model.path.name} with --n-ctx {n_ctx:,} needs about {_gb(kv)} for its context (KV cache), "
            f"more than the {_gb(available)} of memory available now; {advice}"
        )
    if total is not None and model.file_bytes + kv > total:
        if model.file_bytes > total:
            advice = "use a smaller (more quantised) model, or --n-gpu-layers to put it on a GPU"
        raise UserError(
            f"{model.path.name} needs about {_gb(model.file_bytes + kv)} ({_gb(model.file_bytes)} of weights and "
            f"{_gb(kv)} of context), more than this machine's {_gb(total)} of memory; {advice}"
        )


def load_note(spec: JudgeSpec) -> str | None:
    """What to say before a long wait on a large local model (None: small or an API model)."""
    return spec.kind.load_note(spec)


def local_load_note(spec: JudgeSpec) -> str | None:
    """``load_note`` for a local model file (``backends/llamacpp.py``)."""
    try:
        size = Path(spec.model).stat().st_size
    except OSError:
        return None
    if size < LARGE_MODEL_BYTES:
        return None
    name = Path(spec.model).name
    if cached_sha256(spec.model) is not None:  # hashed on an earlier start: only the load is left
        return f"loading model {name} ({_gb(size)}): llama.cpp maps it…"
    return (
        f"loading model {name} ({_gb(size)}): its checksum (once per file), then llama.cpp maps it; this takes a while…"
    )


def check_chat_template(template: str) -> None:
    """Render a ``--chat-template`` the way the local backend does (llama-cpp-python's Jinja2 chat
    formatter) on a one-turn and a three-turn chat; refuse one that fails or drops the messages."""
    try:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        from llama_cpp.llama_types import ChatCompletionRequestMessage
    except ImportError:  # pragma: no cover - a broken install; the backend says so
        return
    probe = "TUI-RATER-PROBE"
    chats: tuple[list[ChatCompletionRequestMessage], ...] = (
        [{"role": "user", "content": probe}],
        [{"role": "user", "content": "1"}, {"role": "assistant", "content": "2"}, {"role": "user", "content": probe}],
    )
    try:
        formatter = Jinja2ChatFormatter(template, eos_token="</s>", bos_token="<s>")
        prompts = [formatter(messages=chat).prompt for chat in chats]
    except Exception as exc:  # jinja2 raises many types (syntax, undefined, the template's own raise_exception)
        detail = " ".join(str(exc).split())[:200]
        raise UserError(f"the chat template does not work ({type(exc).__name__}: {detail})") from None
    if not all(probe in prompt for prompt in prompts):
        raise UserError("the chat template leaves out the messages' text; check that it prints message['content']")


def file_sha256(path: str | Path) -> str:
    """The file's SHA-256, remembered in the user's cache by (path, size, mtime, inode): a model is hashed once,
    not on every start (16 s for an 8B f16 GGUF). Any change to the file's size, mtime or inode hashes it again."""
    path = Path(path).resolve()
    known = cached_sha256(path)
    if known is not None:
        return known
    st = path.stat()
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    with _SHA_LOCK:
        entries = _read_sha_cache()  # another process may have added entries meanwhile
        entries[str(path)] = {**stamp, "sha256": digest.hexdigest()}
        _write_sha_cache(entries)
    return digest.hexdigest()


def cached_sha256(path: str | Path) -> str | None:
    """The SHA-256 remembered for this file if its size, mtime and inode are unchanged, else None."""
    path = Path(path).resolve()
    try:
        st = path.stat()
    except OSError:
        return None
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}
    with _SHA_LOCK:
        entry = _read_sha_cache().get(str(path))
    if isinstance(entry, dict) and all(entry.get(k) == v for k, v in stamp.items()) and entry.get("sha256"):
        return str(entry["sha256"])
    return None


def _read_sha_cache() -> dict[str, dict[str, object]]:
    try:
        data = json.loads((cache_dir() / SHA_CACHE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # no cache yet, or an unreadable one: hash again
    return data.get("files", {}) if isinstance(data, dict) and isinstance(data.get("files"), dict) else {}


def _write_sha_cache(entries: dict[str, dict[str, object]]) -> None:
    """Atomically (write, then rename); a cache that cannot be written only costs a hash on the next start."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".sha256-", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"files": entries}, handle, indent=0)
        os.replace(tmp, folder / SHA_CACHE_FILE)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def provenance(spec: JudgeSpec) -> dict[str, Any]:
    """Everything needed to say which judge produced a rating (never the API key)."""
    # the decoding settings are written flat, by name, as before they were one object: a judge's identity
    # (its rater name hashes this dict) must not change with the code's shape
    config = {
        key: value
        for name, held in asdict(spec).items()
        for key, value in (spec.decoding.record().items() if name == "decoding" else [(name, held)])
    }
    if spec.judge_name is None:
        config.pop("judge_name")  # an unnamed judge keeps the identity it had before names existed
    config.pop("api_key_env", None)
    config.pop("timeout_s", None)
    # a judge is its model and settings at its first endpoint: the replicas behind it are where jobs run, recorded
    # per job (``sources``), so a judge made with one --base-url goes on, the same judge, with replicas added after it
    config.pop("replicas", None)
    # how many CPU threads compute: the same numbers with any count (tests/judge/test_reproducible.py)
    config.pop("n_threads", None)
    # the backend's own options that make it another judge (empty for the built-ins: their settings are flags)
    config["extra"] = spec.kind.identity_options(spec)
    # the backend names its model and keeps its own settings (the built-ins write what they wrote before they were
    # objects: tests/judge/test_identity_pins.py)
    spec.kind.identity(spec, config)
    config["tui_rater_version"] = _version("tui-rater")
    return config


def rater_name(spec: JudgeSpec, config: dict[str, Any]) -> str:
    """A readable, unique name: model, mode, variant, sampling, and a hash of the whole config."""
    model = spec.kind.model_label(spec, config)
    identity = {k: v for k, v in config.items() if not k.endswith("_version")}
    digest = hashlib.sha256(repr(sorted(identity.items())).encode()).hexdigest()[:6]
    decoding = spec.decoding
    parts = [model, spec.mode, spec.variant, f"T{decoding.temperature:g}", f"p{decoding.top_p:g}", f"s{decoding.seed}"]
    if decoding.top_k or decoding.min_p:  # llama.cpp's cuts, asked for (the papers use neither)
        parts.insert(-1, f"k{decoding.top_k}m{decoding.min_p:g}")
    if spec.conversation:
        parts.append("chat")
    return "/".join(parts) + f"#{digest}"
