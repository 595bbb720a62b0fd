"""What an OpenAI-compatible server says about the model behind its alias.

The reply's ``model`` is the name the server was started with (an alias: "tiny", "gpt-4o") and its
``system_fingerprint`` is often empty: neither identifies the weights. A server that says more is asked
once per judge run, and what it says is recorded with the judge (``store.judges.record_server``):

- llama.cpp's ``llama-server``: ``GET /props`` -- the model file's path, the chat template it applies
  (for a GGUF without one: its default ChatML, while a local run sends the prompt bare), the context size;
- vLLM: ``GET /v1/models`` -- each model's ``root`` (the weights it loaded) and ``max_model_len``.

When neither identifies the weights, that is recorded too (``identifies_weights``: false).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

Get = Callable[[str], Any]  # an absolute URL -> the parsed JSON body; raises on any failure


def describe(get: Get, root: str, base: str, model: str) -> dict[str, Any]:
    """The server's facts about ``model``: its /props (llama.cpp), its /v1/models entry (vLLM and others)."""
    facts: dict[str, Any] = {}
    props = _json(get, root + "/props")
    if isinstance(props, dict):
        found: dict[str, Any] = {}
        if isinstance(props.get("model_path"), str):
            found["model_path"] = props["model_path"]
        template = props.get("chat_template")
        if isinstance(template, str) and template:
            found["chat_template"] = template
            found["chat_template_sha256"] = hashlib.sha256(template.encode("utf-8")).hexdigest()
        settings = props.get("default_generation_settings")
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else props.get("n_ctx")
        if isinstance(n_ctx, int) and not isinstance(n_ctx, bool):
            found["n_ctx"] = n_ctx
        if isinstance(props.get("build_info"), str):
            found["build_info"] = props["build_info"]
        if found:
            facts["props"] = found
    listed = _json(get, base + "/models")
    entries = listed.get("data") if isinstance(listed, dict) else None
    if isinstance(entries, list):
        mine = next((e for e in entries if isinstance(e, dict) and e.get("id") == model), None)
        if mine is not None:
            entry = {k: mine[k] for k in ("id", "root", "owned_by", "max_model_len") if _scalar(mine.get(k))}
            if entry:
                facts["model"] = entry
    root_named = facts.get("model", {}).get("root")
    facts["identifies_weights"] = bool(facts.get("props", {}).get("model_path") or (root_named and root_named != model))
    return facts


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool) and value != ""


def _json(get: Get, url: str) -> Any:
    try:
        found = get(url)
        return json.loads(found) if isinstance(found, str | bytes) else found
    except Exception:  # a server without the endpoint, or down: it says nothing here, the run finds out
        return None


def warnings(facts: dict[str, Any], alias: str) -> list[str]:
    """What a researcher must know about a server's facts, one sentence each."""
    said = []
    if not facts.get("identifies_weights"):
        said.append(f"nothing the server reported identifies the weights behind {alias!r} (only its alias)")
    if facts.get("props", {}).get("chat_template"):
        said.append(
            "the server wrapped every prompt in its chat template (recorded); a local run of a GGUF without a "
            "template sends the prompt bare, so the two paths do not ask the same prompt"
        )
    return said
