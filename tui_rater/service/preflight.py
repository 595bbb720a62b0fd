"""``tui-rater judge … --check``: what a researcher runs before spending hours of GPU (issue 13, item 12).

For the first items' questions, exactly as the judge would ask them: the prompt rendered with the
model's chat template, its token count and BOS tokens, how each scale label maps to the model's
tokens and, at the answer position, how much of the next-token probability falls on the scale.
Then one verdict: ready, use a chat template, use text mode, or a prompt that cannot fit.

Nothing is stored: no job, no rating, no judge; the study is only read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from tui_rater.domain import protocols
from tui_rater.domain.tasks import Task
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.spec import JudgeSpec
from tui_rater.store.study import Study

MODES_READ_AT_THE_ANSWER = ("distribution", "implicit")
TOP_K = 5


@dataclass(frozen=True)
class PromptCheck:
    """One question of one item, as the judge would ask it."""

    task: str
    item: str
    attribute: str
    presentation: str
    prompt: str  # what the model reads: the template applied (local), else the message text (API)
    tokens: int | None  # None: counted by the server, not here
    bos: int | None  # BOS tokens at the start of the prompt (None: an API model)
    option_tokens: dict[str, list[str]] = field(default_factory=dict)  # scale label -> the tokens that spell it
    missing_options: tuple[str, ...] = ()  # labels the model has no single token for
    mass: float | None = None  # next-token probability on the scale's labels at the answer position
    mass_is_lower_bound: bool = False  # an API that listed only its top tokens: the mass is at least this
    top: list[tuple[str, float]] = field(default_factory=list)  # the most probable next tokens
    error: str | None = None  # the backend could not answer this check (one sentence)


@dataclass(frozen=True)
class Preflight:
    judge: str
    mode: str
    template: str  # where the chat template comes from: "the model's", "--chat-template", "none", "the server's"
    n_ctx: int | None
    max_tokens: int
    min_mass: float
    checks: list[PromptCheck]
    verdict: str  # "ready", "use a chat template", "use text mode", "not ready"
    reason: str  # one sentence

    @property
    def ready(self) -> bool:
        return self.verdict == "ready"

    def as_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "mode": self.mode,
            "template": self.template,
            "n_ctx": self.n_ctx,
            "max_tokens": self.max_tokens,
            "min_mass": self.min_mass,
            "verdict": self.verdict,
            "reason": self.reason,
            "checks": [vars(check) for check in self.checks],
        }


def questions(study: Study, tasks: list[Task], items: int) -> list[tuple[Task, Any, Any, str]]:
    """(task, item, attribute, presentation) of the first ``items`` items of each task, every question."""
    asked = []
    for task in tasks:
        for item in study.items(task.name)[:items]:
            for attribute in task.attributes:
                for presentation in protocols.of(attribute).presentations(attribute):
                    asked.append((task, item, attribute, presentation))
    return asked


def check_judge(
    study: Study,
    spec: JudgeSpec,
    tasks: list[Task],
    items: int = 2,
    backend_factory: Callable[[JudgeSpec], Any] | None = None,
    judge_name: str = "",
) -> Preflight:
    """Load the model (or reach the server) once and check the first ``items`` items of each task."""
    from tui_rater.judge.worker import make_backend

    backend = (backend_factory or make_backend)(spec)
    try:
        checks: list[PromptCheck] = []
        unanswered = False  # a server that did not answer one question is not waited for again (--timeout each)
        for asked in questions(study, tasks, items):
            checks.append(_check(backend, spec, *asked, skip=unanswered))
            error = checks[-1].error or ""
            unanswered = unanswered or (spec.is_api and error.startswith(("timeout:", "connection:")))
        template = _template_source(backend, spec)
    finally:
        close = getattr(backend, "close", None)
        if close is not None:
            close()
    verdict, reason = _verdict(spec, checks, template)
    return Preflight(
        judge_name or spec.model,
        spec.mode,
        template,
        None if spec.is_api else spec.n_ctx,
        spec.max_tokens,
        spec.min_mass,
        checks,
        verdict,
        reason,
    )


def _template_source(backend: Any, spec: JudgeSpec) -> str:
    if spec.is_api:
        return "the server's"
    if spec.chat_template:
        return "--chat-template"
    return "the model's" if getattr(backend, "has_chat_template", False) else "none"


def _check(
    backend: Any, spec: JudgeSpec, task: Task, item: Any, attribute: Any, presentation: str, skip: bool = False
) -> PromptCheck:
    protocol = protocols.for_mode(task, attribute, spec.mode)
    prompt = protocol.render(task, attribute, item.fields, spec.variant, presentation)
    messages = [{"role": "user", "content": prompt.text}]
    where = {"task": task.name, "item": item.id, "attribute": attribute.name, "presentation": presentation}
    if spec.is_api:
        rendered, tokens, bos = prompt.text, None, None
    else:
        rendered = backend.render(messages)
        ids = backend.prompt_tokens(messages)
        tokens, bos = len(ids), backend.leading_bos(ids)
    facts: dict[str, Any] = {}
    if skip:
        return PromptCheck(
            **where,
            prompt=rendered,
            tokens=tokens,
            bos=bos,
            error="not asked: the server did not answer an earlier question",
        )
    try:
        facts = _answer_position(backend, spec, protocol, attribute, messages)
    except JudgeError as exc:
        facts = {"error": f"{exc.kind}: {exc.message}"}
    return PromptCheck(**where, prompt=rendered, tokens=tokens, bos=bos, **facts)


def _answer_position(
    backend: Any, spec: JudgeSpec, protocol: Any, attribute: Any, messages: list[dict[str, str]]
) -> dict[str, Any]:
    """The scale's tokens and the next-token probability on them, where the reply would begin."""
    if spec.mode == "implicit":  # Chen et al. §2.1: yes / no among the top tokens
        top = [(str(text), float(p)) for text, p in backend.top_tokens(messages, protocol.TOP_K)]
        answers = protocol.YES | protocol.NO
        return {"top": top, "mass": sum(p for text, p in top if text.strip() in answers), "mass_is_lower_bound": True}
    options = protocol.options(attribute, spec.variant)
    labels = list(options.labels) if options is not None else []
    facts: dict[str, Any] = {}
    if not spec.is_api:
        if labels:
            mapping = {label: backend.option_token_pieces(label) for label in labels}
            facts["option_tokens"] = {label: pieces for label, pieces in mapping.items() if pieces}
            facts["missing_options"] = tuple(label for label, pieces in mapping.items() if not pieces)
            scored = [label for label in labels if mapping[label]]
            if scored:
                facts["mass"] = sum(backend.option_probabilities(messages, scored).values())
        facts["top"] = [(str(text), float(p)) for text, p in backend.top_tokens(messages, TOP_K)]
    elif spec.mode in ("text", "constrained"):  # an API: no logprobs to read, but the server must answer
        _ask_once(backend, spec, protocol, attribute, messages)
    elif labels and spec.mode == "distribution":  # an API: only a server with logprobs can say
        from tui_rater.judge.backends.base import OptionProbabilities

        found = OptionProbabilities.of(backend.option_probabilities(messages, labels))
        facts["mass"] = sum(found.probabilities.values())
        facts["mass_is_lower_bound"] = bool(found.unscored)
    return facts


def _ask_once(backend: Any, spec: JudgeSpec, protocol: Any, attribute: Any, messages: list[dict[str, str]]) -> None:
    """One reply of one token, as the judge would ask (its constraint included): a server that cannot be reached,
    has no such model, answers garbage or refuses the constraint fails here, not hours into the run."""
    constrained = spec.mode == "constrained"
    backend.complete(
        messages,
        temperature=spec.temperature,
        top_p=spec.top_p,
        max_tokens=1,
        seed=spec.seed,
        grammar=protocol.grammar(attribute, spec.variant) if constrained else None,
        json_schema=protocol.json_schema(attribute, spec.variant) if constrained else None,
    )


def _verdict(spec: JudgeSpec, checks: list[PromptCheck], template: str) -> tuple[str, str]:
    if not checks:
        return "not ready", "there is no item to check"
    failed = [c for c in checks if c.error]
    if failed:
        return "not ready", f"{len(failed)} of {len(checks)} questions could not be checked: {failed[0].error}"
    doubled = [c for c in checks if c.bos is not None and c.bos > 1]
    if doubled:
        return (
            "not ready",
            f"prompts start with {doubled[0].bos} BOS tokens (the template and the tokenizer both add one)",
        )
    if not spec.is_api:
        longest = max(c.tokens or 0 for c in checks)
        if longest + (spec.max_tokens if spec.mode in ("text", "constrained") else 1) > spec.n_ctx:
            return (
                "not ready",
                f"the longest prompt has {longest:,} tokens: with --max-tokens {spec.max_tokens} it does not fit "
                f"--n-ctx {spec.n_ctx:,}; raise --n-ctx",
            )
    missing = sorted({label for c in checks for label in c.missing_options})
    if missing and spec.mode in MODES_READ_AT_THE_ANSWER:
        return "use text mode", f"the model has no single token for {', '.join(map(repr, missing))}"
    masses = [c.mass for c in checks if c.mass is not None]
    if spec.mode in MODES_READ_AT_THE_ANSWER and masses:
        typical = median(masses)
        if typical < spec.min_mass:
            share = f"only {typical:.1%} of the next-token probability (median) is on the scale"
            if template == "none":
                return "use a chat template", f"{share}, and the model has no chat template (--chat-template)"
            return "use text mode", f"{share} (below --min-mass {spec.min_mass:g}); the ratings would be noise"
        return "ready", f"{typical:.1%} of the next-token probability (median) is on the scale"
    if template == "none" and not spec.is_api:
        return "ready", "the prompts go to the model as plain text (it has no chat template); check the replies"
    return "ready", "the prompts fit and the template applies"
