"""A kind of judge backend, as one registered object: its abilities and the policies the run asks it for.

Inspect AI's ``ModelAPI`` + ``@modelapi`` and ``llm``'s ``register_models`` are the model: the run never asks
"is this an API model?"; it asks the judge's backend what it can do (``reads_distribution``, ``can_batch``, ...)
and what it wants (how many workers, how many jobs a worker leases, which pre-flight probes, what its identity
records). The built-ins (``llamacpp.py``, ``openai_compatible.py``) and a third party's backend (CONTRIBUTING.md,
"Add a backend") are registered the same way (``registry.py``, the ``tui_rater.backends`` entry points).

A kind is asked with the judge's ``JudgeSpec``; the clients it makes (``make``) are ``base.Backend`` instances,
one per worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from tui_rater.domain.errors import UserError
from tui_rater.judge.backends.options import BackendOption, option_values

if TYPE_CHECKING:
    from tui_rater.domain.preflight import Probe
    from tui_rater.judge.backends.base import Backend, Message
    from tui_rater.judge.spec import JudgeSpec


class JudgeBackend:
    """One kind of backend. Subclass it, set the class attributes, override what differs from the defaults."""

    name: ClassVar[str]  # the registered name, stored in the judge's identity as ``backend``
    # the model spec that picks this backend: "<prefix>:<model>" (None: a path to a model file)
    prefix: ClassVar[str | None] = None
    # the settings this backend takes (``options.py``): those with a flag of their own (``--n-ctx``, ``--base-url``)
    # are JudgeSpec fields, left at their defaults for a backend that does not declare them; the others are given as
    # --backend-option NAME=VALUE or in the config file's [judge.options.NAME], and held in ``JudgeSpec.extra``
    options: ClassVar[tuple[BackendOption, ...]] = ()

    # --- abilities ----------------------------------------------------------------------------------------
    # the model's whole next-token distribution is read here (a local model: a scale's mass before a grammar,
    # every mode's probes at pre-flight); False: only what a server returns (its top log-probabilities)
    reads_distribution: ClassVar[bool] = False
    # the chat template is applied here: prompts are counted in tokens, their BOS checked, their context window known
    renders_prompts: ClassVar[bool] = False
    # requests go to a server that may not answer (a run of unanswered requests stops the judge; --base-url applies)
    remote: ClassVar[bool] = True
    # requests can be sent to an offline Batch endpoint (``judge --batch``)
    can_batch: ClassVar[bool] = False
    # the run's longest prompts are handed to ``make`` (a local engine sizes its KV cache by them)
    sized_by_prompts: ClassVar[bool] = False

    # --- the judge's settings and identity ----------------------------------------------------------------

    def model_id(self, spec: JudgeSpec) -> str:
        """The model's name as this backend asks for it: the model spec without its prefix."""
        return spec.model.removeprefix(f"{self.prefix}:") if self.prefix else spec.model

    def validate(self, spec: JudgeSpec) -> JudgeSpec:
        """This backend's own checks of the settings (one sentence each); the settings it fills in."""
        if not self.model_id(spec):
            raise UserError(f"a {self.name} model spec is {self.prefix}:<model>")
        return spec

    def option_names(self) -> tuple[str, ...]:
        """The names of the settings this backend takes (its flags' JudgeSpec fields and its own options)."""
        return tuple(option.name for option in self.options)

    def option_values(
        self, given: tuple[str, ...], configured: Mapping[str, object] | None = None, source: str = "the config file"
    ) -> dict[str, object]:
        """This backend's own options for one judge (``JudgeSpec.extra``): the config file's table under the
        ``--backend-option`` flags, parsed, with the defaults filled in; one sentence for what it cannot take."""
        return option_values(self.name, self.options, given, configured, source)

    def identity_options(self, spec: JudgeSpec) -> dict[str, object]:
        """Of the judge's own options (``spec.extra``), those that make it another judge."""
        kept = {option.name for option in self.options if option.identity and option.flag is None}
        return {name: value for name, value in spec.extra.items() if name in kept}

    def identity(self, spec: JudgeSpec, config: dict[str, Any]) -> None:
        """Write into ``config`` (the judge's provenance, ``spec.provenance``) what names this backend's model, and
        remove the settings that are not its own. Never a key."""
        config["backend"] = self.name
        config["model_id"] = self.model_id(spec)

    def model_label(self, spec: JudgeSpec, config: Mapping[str, Any]) -> str:
        """The model's part of the judge's rater name (``spec.rater_name``)."""
        return f"{self.prefix}:{self.model_id(spec)}" if self.prefix else self.model_id(spec)

    def check_access(self, spec: JudgeSpec) -> None:
        """Refuse, before the study changes, a judge that cannot be asked (a missing key)."""

    def check_endpoints(self, spec: JudgeSpec) -> None:
        """Refuse, before any job is queued, endpoints that cannot be one judge (they serve different models)."""

    def load_note(self, spec: JudgeSpec) -> str | None:
        """What to say before a long wait (loading a large model); None: nothing."""
        return None

    # --- the run's policy ---------------------------------------------------------------------------------

    def default_workers(self) -> int:
        """Workers of a `tui-rater judge` run without --workers."""
        return 8

    def background_workers(self, per_judge: int) -> int:
        """Workers of a judge running behind the annotation app (``per_judge``: what the app asks for)."""
        return 4

    def lease_size(self, spec: JudgeSpec) -> tuple[int, int]:
        """(min_jobs, max_jobs) a worker leases at once."""
        return (4, 4)

    def preload(self) -> None:
        """Import what the workers need once, before they start (not under the import lock of 16 threads). `judge`
        calls it in a thread at its start (``service.judging.WarmUp``), beside the study's opening and the queueing
        of the first jobs, and again on the workers' start (waiting there for what is still being imported)."""

    def warm(self, spec: JudgeSpec) -> None:
        """Once the judge is resolved, make ahead what the workers' first request would make first (an API client
        and the parts of its library imported at first use); in ``WarmUp``'s thread, after ``preload``."""

    def make(
        self,
        spec: JudgeSpec,
        *,
        parallel: int | None = None,
        background: bool = False,
        prompts: list[list[Message]] | None = None,
    ) -> Backend:
        """One worker's client. ``parallel``: the workers sharing an engine; ``background``: behind the app;
        ``prompts``: the run's longest (when ``sized_by_prompts``)."""
        raise NotImplementedError

    # --- the pre-flight check (``service/preflight.py``) -------------------------------------------------

    def preflight_probes(self, modes: tuple[str, ...]) -> dict[Probe, str]:
        """Each probe the pre-flight runs, with the mode whose question it asks (none: the asked mode's one
        server probe)."""
        return {}

    def context_window(self, spec: JudgeSpec) -> int | None:
        """The tokens a prompt and its reply must fit in (None: the server's business)."""
        return None

    def template_source(self, spec: JudgeSpec, backend: Backend) -> str:
        """Whose chat template the prompts are read through, as the pre-flight says it."""
        return "the server's"

    def prompt_facts(self, backend: Backend, messages: list[Message], text: str) -> tuple[str, int | None, int | None]:
        """(the prompt as the model reads it, its length in tokens, its leading BOS tokens); None: not known."""
        return text, None, None
