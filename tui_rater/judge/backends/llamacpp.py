"""The built-in local backend: a ``.gguf`` file run by llama.cpp in this process (``local.py``, ``engine/``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from tui_rater.judge.backends.kind import JudgeBackend
from tui_rater.judge.backends.options import BackendOption

if TYPE_CHECKING:
    from tui_rater.domain.preflight import Probe
    from tui_rater.judge.backends.base import Backend, Message
    from tui_rater.judge.backends.local import LocalBackend
    from tui_rater.judge.spec import JudgeSpec


class LlamaCpp(JudgeBackend):
    name: ClassVar[str] = "llama.cpp"
    prefix: ClassVar[str | None] = None  # a path to a .gguf file
    # its flags (and [judge] keys); which make another judge is what its identity (below) has always kept
    options: ClassVar[tuple[BackendOption, ...]] = (
        BackendOption(
            "n_ctx",
            int,
            4096,
            "the context window in tokens (default: 4096, or the model's own if shorter)",
            flag="--n-ctx",
        ),
        BackendOption(
            "n_gpu_layers", int, 0, "layers offloaded to the GPU (-1: all)", identity=False, flag="--n-gpu-layers"
        ),
        BackendOption(
            "n_threads",
            int,
            0,
            "CPU threads (0: every core); the readings do not depend on it",
            identity=False,
            flag="--threads",
        ),
        BackendOption(
            "chat_template",
            str,
            None,
            "a Jinja2 chat template instead of the model's (its hash is kept)",
            flag="--chat-template",
        ),
    )
    reads_distribution: ClassVar[bool] = True
    renders_prompts: ClassVar[bool] = True
    remote: ClassVar[bool] = False
    sized_by_prompts: ClassVar[bool] = True

    def validate(self, spec: JudgeSpec) -> JudgeSpec:
        from dataclasses import replace

        from tui_rater.domain.errors import UserError
        from tui_rater.judge.spec import check_chat_template, check_local_model, check_threads

        if spec.n_ctx < 1:
            raise UserError("--n-ctx must be at least 1")
        check_threads(spec.n_threads)
        model = check_local_model(spec)
        if spec.chat_template is not None:
            check_chat_template(spec.chat_template)
        if spec.n_ctx > model.trained_context > 0:  # only the default gets here (a flag is refused)
            return replace(spec, n_ctx=model.trained_context)  # the model's own, shorter window
        return spec

    def identity(self, spec: JudgeSpec, config: dict[str, Any]) -> None:
        from tui_rater.judge.spec import _version, file_sha256

        config["backend"] = self.name
        config["model_file"] = Path(spec.model).name
        config["model_sha256"] = file_sha256(spec.model)
        config["llama_cpp_python_version"] = _version("llama-cpp-python")
        config.pop("model")
        if spec.chat_template:
            config["chat_template_sha256"] = hashlib.sha256(spec.chat_template.encode()).hexdigest()
            config.pop("chat_template")
        # where layers run does not change what the judge is
        config.pop("n_gpu_layers")
        # how llama.cpp computes, where that changes the stored numbers (batch invariance): part of the judge's identity
        # (and, for a model with K-quant or repackable weights, the kernels that compute them: issue 30)
        from tui_rater.judge.engine.native import model_numerics

        config["numerics"] = model_numerics(spec.model)

    def model_label(self, spec: JudgeSpec, config: Mapping[str, Any]) -> str:
        return f"{Path(spec.model).name}@{config['model_sha256'][:8]}"

    def load_note(self, spec: JudgeSpec) -> str | None:
        from tui_rater.judge.spec import local_load_note

        return local_load_note(spec)

    # --- the run's policy: one engine per process, its sequences shared by every worker -------------------

    def default_workers(self) -> int:
        """16 concurrent sequences of the one engine (never 16 copies of the model)."""
        from tui_rater.judge.backends.local import DEFAULT_SEQUENCES

        return DEFAULT_SEQUENCES

    def background_workers(self, per_judge: int) -> int:
        return per_judge

    def lease_size(self, spec: JudgeSpec) -> tuple[int, int]:
        """One job: an item's questions and samples run at once in the shared engine and share the item's prefix
        there (instead of one worker asking them one after another)."""
        return (1, 1)

    def make(
        self,
        spec: JudgeSpec,
        *,
        parallel: int | None = None,
        background: bool = False,
        prompts: list[list[Message]] | None = None,
    ) -> Backend:
        from tui_rater.judge.backends.local import DEFAULT_SEQUENCES, LocalBackend

        return LocalBackend(spec, parallel=parallel or DEFAULT_SEQUENCES, background=background, prompts=prompts)

    # --- the pre-flight check: every applicable mode, with the probes they read ---------------------------

    def preflight_probes(self, modes: tuple[str, ...]) -> dict[Probe, str]:
        """Each probe the checked modes read on a local model, run once for all of them with the question of the
        first mode that reads it (the modes are in the order they are checked: the one asked first)."""
        from tui_rater.domain.modes import mode_of
        from tui_rater.domain.preflight import Probe

        owners: dict[Probe, str] = {}
        for name in modes:
            for probe in Probe:
                if probe in mode_of(name).preflight.local:
                    owners.setdefault(probe, name)
        return owners

    def context_window(self, spec: JudgeSpec) -> int | None:
        return spec.n_ctx

    def template_source(self, spec: JudgeSpec, backend: Backend) -> str:
        if spec.chat_template:
            return "--chat-template"
        return "the model's" if cast("LocalBackend", backend).has_chat_template else "none"

    def prompt_facts(self, backend: Backend, messages: list[Message], text: str) -> tuple[str, int | None, int | None]:
        local = cast("LocalBackend", backend)
        ids = local.prompt_tokens(messages)
        return local.render(messages), len(ids), local.leading_bos(ids)
