"""The built-in server backend: any OpenAI-compatible chat-completions server (``api.py``; ``api_pool.py`` for
replicas of one model), asked for as ``api:<model>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from tui_rater.domain.errors import UserError
from tui_rater.judge.backends.kind import JudgeBackend
from tui_rater.judge.backends.options import API_KEY_ENV, BASE_URL, TIMEOUT, BackendOption

if TYPE_CHECKING:
    from tui_rater.judge.backends.base import Backend, Message
    from tui_rater.judge.spec import JudgeSpec

OPENAI_API = "https://api.openai.com/v1"


class OpenAICompatible(JudgeBackend):
    name: ClassVar[str] = "openai-compatible"
    prefix: ClassVar[str | None] = "api"
    # its flags (and [judge] keys); more --base-url are replicas of the first (``JudgeSpec.replicas``)
    options: ClassVar[tuple[BackendOption, ...]] = (BASE_URL, API_KEY_ENV, TIMEOUT)
    remote: ClassVar[bool] = True
    can_batch: ClassVar[bool] = True

    def validate(self, spec: JudgeSpec) -> JudgeSpec:
        from tui_rater.judge.spec import check_base_url, check_distinct

        if not self.model_id(spec):
            raise UserError("an API model spec is api:<model>, e.g. api:gpt-4o-mini")
        if spec.replicas and spec.base_url is None:
            raise UserError("several endpoints need a --base-url each (the first is not OpenAI's API)")
        for url in spec.endpoints:
            check_base_url(url)
        check_distinct(spec.endpoints)
        if spec.n_gpu_layers:
            raise UserError("--n-gpu-layers applies to local .gguf models only")
        if spec.n_threads:
            raise UserError("--threads applies to local .gguf models only")
        return spec

    def identity(self, spec: JudgeSpec, config: dict[str, Any]) -> None:
        from tui_rater.judge.spec import _version, strip_credentials

        config["backend"] = self.name
        config["api_model"] = self.model_id(spec)
        # a key written into the URL (user:key@host, ?api_key=...) is never stored
        config["base_url"] = strip_credentials(spec.base_url or OPENAI_API)
        config["openai_version"] = _version("openai")
        config.pop("n_ctx"), config.pop("n_gpu_layers"), config.pop("chat_template")

    def model_label(self, spec: JudgeSpec, config: Mapping[str, Any]) -> str:
        return f"api:{self.model_id(spec)}"

    def check_access(self, spec: JudgeSpec) -> None:
        """Every endpoint's key: one sentence now when there is none (a key goes only where the user sent it)."""
        for endpoint in spec.endpoints or (None,):
            (spec.at(endpoint) if endpoint else spec).api_key()

    def check_endpoints(self, spec: JudgeSpec) -> None:
        if spec.replicas:  # several endpoints: refused before the study changes when they serve different models
            from tui_rater.judge.backends.api_pool import check_endpoints

            check_endpoints(spec)

    # --- the run's policy: clients asking one server side by side --------------------------------------

    def default_workers(self) -> int:
        return 8

    def background_workers(self, per_judge: int) -> int:
        return 4

    def lease_size(self, spec: JudgeSpec) -> tuple[int, int]:
        """A worker asks its jobs one after another: for a reply (text, constrained) it takes 4, so that a few
        items' jobs spread over all the workers and the server decodes them side by side (whole items left 13 of
        16 workers idle on a 3-item run, the server decoding one reply at a time); at the answer position (one
        token: the prompt is the work) it takes whole items, so the server's prompt cache meets an item's
        questions in turn."""
        from tui_rater.domain.modes import mode_of

        return (4, 64) if mode_of(spec.mode).at_answer_position else (4, 4)

    def preload(self) -> None:
        import openai  # noqa: F401 - once here, not under the import lock of 16 starting threads

    def warm(self, spec: JudgeSpec) -> None:
        if spec.replicas:  # (a pool's clients are made with it)
            return
        from tui_rater.judge.backends.api import warm_client

        warm_client(spec)

    def make(
        self,
        spec: JudgeSpec,
        *,
        parallel: int | None = None,
        background: bool = False,
        prompts: list[list[Message]] | None = None,
    ) -> Backend:
        if spec.replicas:
            from tui_rater.judge.backends.api_pool import ApiPool

            return ApiPool(spec)  # several endpoints of one model: requests spread over them
        from tui_rater.judge.backends.api import ApiBackend

        return ApiBackend(spec)
