"""``tui-rater judge … --check``: what a researcher runs before spending hours of GPU.

For the first items' questions, exactly as the judge would ask them: the prompt rendered with the
model's chat template, its token count and BOS tokens, how each scale label maps to the model's
tokens and, at the answer position, how much of the next-token probability falls on the scale.

Then a verdict **per mode**: the one agreement-ready rule (domain/readiness.py) that a finished run's summary and
the report apply to what the judge stored, applied here to what the checked questions give, in the same words.
What is read for a mode and its evidence are the mode's own (``Mode.preflight``, domain/preflight.py): this
module runs the probes the modes name over a backend and asks each mode for its verdict. The built-in modes:

- ``text``: the checked questions are answered once, as the run asks them (its decoding, its length
  limit), and read by the protocol. The rule's typed failures are those that would be left after the run's
  ``--max-retries`` regenerations: ``(1 - read share) ** (max_retries + 1) <= 0.10``.
- ``constrained``: a grammar makes every reply valid, so the reply says nothing; what does is the
  probability the model put on the allowed answers *before* the constraint (the scale mass at the
  answer position): at most 10 % of the checked questions may have less than half of it there.
- ``distribution``: the options' probabilities are the reading: every option needs a token path, a question
  below ``--min-mass`` is a typed failure, and at most 10 % may have less than half on the scale.
- ``implicit`` (a protocol that has it): "yes"/"no" among the top tokens, less than half on them for at most
  10 % of the questions.

The scale mass is the one distribution mode stores (``LocalBackend.option_probabilities``: every
tokenisation path of each option, " 3" written as " " then "3" included), so the check and the run
agree on one prompt. Then one verdict for the mode asked, and the mode recommended when it is not ready.

Nothing is stored: no job, no rating, no judge; the study is only read.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from tui_rater.domain import protocols
from tui_rater.domain.modes import IMPLICIT, TEXT, ReplyFacts, mode_of
from tui_rater.domain.preflight import Limits, ModeCheck, Probe, PromptCheck
from tui_rater.domain.tasks import Task
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.spec import JudgeSpec
from tui_rater.store.study import Study

# the order a mode is recommended in when the one asked is not ready: the cheapest reading first
RECOMMENDED_ORDER = ("distribution", "constrained", "text", "implicit")
TOP_K = IMPLICIT.top_k(protocols.REGISTRY["implicit"])  # the top tokens shown: as many as the implicit score reads


@dataclass(frozen=True)
class Preflight:
    judge: str
    mode: str
    template: str  # where the chat template comes from: "the model's", "--chat-template", "none", "the server's"
    n_ctx: int | None
    max_tokens: int
    min_mass: float
    checks: list[PromptCheck]
    verdict: str  # "ready", "use --mode M", "use a chat template", "not ready"
    reason: str  # one sentence
    modes: list[ModeCheck] = field(default_factory=list)  # every mode that applies (a local model), or the one asked
    recommended: str | None = None  # the mode to run: the one asked when ready, else the first ready one

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
            "recommended": self.recommended,
            "modes": {m.mode: {k: v for k, v in vars(m).items() if k != "mode"} for m in self.modes},
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


def applicable_modes(tasks: list[Task], variant: str) -> tuple[str, ...]:
    """The modes every question of these tasks can be asked in, with this prompt variant (the implicit score asks
    its own question: Chen et al.'s v1-v5 are the explicit score's)."""

    def fits(mode: str, task: Task, attribute: Any) -> bool:
        if mode not in protocols.of(attribute).modes:
            return False
        return variant in protocols.for_mode(task, attribute, mode).variants(task, attribute)

    return tuple(m for m in RECOMMENDED_ORDER if all(fits(m, t, a) for t in tasks for a in t.attributes))


def check_judge(
    study: Study,
    spec: JudgeSpec,
    tasks: list[Task],
    items: int = 2,
    backend_factory: Callable[[JudgeSpec], Any] | None = None,
    judge_name: str = "",
    workers: int | None = None,
) -> Preflight:
    """Load the model (or reach the server) once and check the first ``items`` items of each task. ``workers``:
    the sequences the run would decode together (a local model's numbers are read the way the run reads them)."""
    from tui_rater.judge.worker import make_backend

    asked = questions(study, tasks, items)
    if backend_factory is not None:
        backend = backend_factory(spec)
    else:
        backend = make_backend(spec, parallel=workers or max(1, min(len(asked), 16)))
    kind = spec.kind
    # a backend that reads the whole distribution is checked in every applicable mode; a server in the one asked
    every = kind.reads_distribution
    modes = tuple(dict.fromkeys((spec.mode, *applicable_modes(tasks, spec.variant)))) if every else (spec.mode,)
    owners = kind.preflight_probes(modes)
    try:
        # the answer position, question after question as a --workers 1 run reads it (the engine shares prompt
        # prefixes between sequences: asked together, the numbers would move with what else is in the batch);
        # a server that did not answer one question is not waited for again (--timeout each) ...
        checks: list[PromptCheck] = []
        unanswered = False
        for one in asked:
            checks.append(_check(backend, spec, owners, *one, skip=unanswered))
            error = checks[-1].error or ""
            unanswered = unanswered or (kind.remote and error.startswith(("timeout:", "connection:")))
        if (replying := owners.get(Probe.REPLY)) is not None:  # ... then one reply per question, decoded together
            with ThreadPoolExecutor(max_workers=max(1, min(len(asked), 16))) as pool:
                checks = list(
                    pool.map(lambda pair: _with_reply(backend, spec, replying, pair[0], *pair[1]), zip(checks, asked))
                )
        template = kind.template_source(spec, backend)
    finally:
        backend.close()
    blocked = _blocked(spec, checks)
    mode_checks = [_mode_verdict(spec, mode, checks, template, blocked) for mode in modes]
    verdict, reason, recommended = _verdict(spec, mode_checks, template, blocked)
    return Preflight(
        judge_name or spec.model,
        spec.mode,
        template,
        kind.context_window(spec),
        spec.decoding.max_tokens,
        spec.min_mass,
        checks,
        verdict,
        reason,
        mode_checks,
        recommended,
    )


def _check(
    backend: Any,
    spec: JudgeSpec,
    owners: dict[Probe, str],
    task: Task,
    item: Any,
    attribute: Any,
    presentation: str,
    skip: bool = False,
) -> PromptCheck:
    protocol = protocols.for_mode(task, attribute, spec.mode)
    prompt = protocol.render(task, attribute, item.fields, spec.variant, presentation)
    messages = [{"role": "user", "content": prompt.text}]
    where = {"task": task.name, "item": item.id, "attribute": attribute.name, "presentation": presentation}
    rendered, tokens, bos = spec.kind.prompt_facts(backend, messages, prompt.text)
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
        if not spec.kind.reads_distribution:
            facts = _api_answer_position(backend, spec, protocol, attribute, presentation, messages)
        elif tokens is not None and tokens < (spec.kind.context_window(spec) or tokens + 1):
            facts = _local_answer_position(backend, spec, owners, task, item, attribute, presentation, messages)
    except JudgeError as exc:
        facts = {"error": f"{exc.kind}: {exc.message}"}
    return PromptCheck(**where, prompt=rendered, tokens=tokens, bos=bos, **facts)


def _local_answer_position(
    backend: Any,
    spec: JudgeSpec,
    owners: dict[Probe, str],
    task: Task,
    item: Any,
    attribute: Any,
    presentation: str,
    messages: list[dict[str, str]],
) -> dict[str, Any]:
    """The scale's token paths and the probability that the reply begins on the scale -- the numbers distribution
    mode stores -- the top next tokens, and the implicit score's yes / no, as the checked modes read them."""
    facts: dict[str, Any] = {}
    if (scale := owners.get(Probe.SCALE)) is not None:
        protocol = protocols.for_mode(task, attribute, scale)
        starts = protocol.answer_starts(attribute, spec.variant)
        mapping = {label: backend.option_token_pieces(label) for label in starts}
        facts["option_tokens"] = {label: pieces for label, pieces in mapping.items() if pieces}
        facts["missing_options"] = tuple(label for label, pieces in mapping.items() if not pieces)
        scored = [label for label in starts if mapping[label]]
        if scored:
            facts["mass"] = sum(backend.option_probabilities(messages, scored).values())
        facts["top"] = [(str(text), float(p)) for text, p in backend.top_tokens(messages, TOP_K)]
    if (yes_no := owners.get(Probe.YES_NO)) is not None:
        implicit = protocols.for_mode(task, attribute, yes_no)
        asked = implicit.render(task, attribute, item.fields, spec.variant, presentation)
        top = [(str(t), float(p)) for t, p in backend.top_tokens([{"role": "user", "content": asked.text}], TOP_K)]
        facts["implicit_mass"] = IMPLICIT.answer_mass(implicit, top)
        if Probe.YES_NO in mode_of(spec.mode).preflight.local:  # the mode asked reads these: they are its numbers
            facts["top"], facts["mass"], facts["mass_is_lower_bound"] = top, facts["implicit_mass"], True
    return facts


def _api_answer_position(
    backend: Any, spec: JudgeSpec, protocol: Any, attribute: Any, presentation: str, messages: list[dict[str, str]]
) -> dict[str, Any]:
    """A server: the one probe the mode asked reads there (its question's top tokens, the options' logprobs, one
    reply as the run reads it, or one short reply that takes the run's constraint)."""
    probe = mode_of(spec.mode).preflight.server
    if probe is Probe.YES_NO:  # Chen et al. §2.1: yes / no among the top tokens
        top = [(str(text), float(p)) for text, p in backend.top_tokens(messages, IMPLICIT.top_k(protocol))]
        return {"top": top, "mass": IMPLICIT.answer_mass(protocol, top), "mass_is_lower_bound": True}
    if probe is Probe.REPLY:  # one reply, asked and read as the run would: does the server's model answer?
        return _text_reply(backend, spec, protocol, attribute, presentation, messages)
    if probe is Probe.ANSWERED:  # no logprobs to read, but the server must answer and take the constraint
        _ask_once(backend, spec, protocol, attribute, messages)
        return {}
    options = protocol.options(attribute, spec.variant)
    labels = list(options.labels) if options is not None else []
    facts: dict[str, Any] = {}
    if labels:  # the scale: only a server with logprobs can say
        from tui_rater.judge.backends.base import OptionProbabilities

        found = OptionProbabilities.of(backend.option_probabilities(messages, labels))
        facts["mass"] = sum(found.probabilities.values())
        facts["mass_is_lower_bound"] = bool(found.unscored)
    return facts


def _with_reply(
    backend: Any,
    spec: JudgeSpec,
    mode: str,
    check: PromptCheck,
    task: Task,
    item: Any,
    attribute: Any,
    presentation: str,
) -> PromptCheck:
    """The check with one reply to ``mode``'s question, asked and read as the run would (a local model)."""
    if check.error or check.tokens is None or check.tokens >= spec.n_ctx:
        return check
    protocol = protocols.for_mode(task, attribute, mode)
    prompt = protocol.render(task, attribute, item.fields, spec.variant, presentation)
    try:
        messages = [{"role": "user", "content": prompt.text}]
        facts = _text_reply(backend, spec, protocol, attribute, presentation, messages)
    except JudgeError as exc:
        return replace(check, error=f"{exc.kind}: {exc.message}")
    return replace(check, **facts)


def _text_reply(
    backend: Any, spec: JudgeSpec, protocol: Any, attribute: Any, presentation: str, messages: list[dict[str, str]]
) -> dict[str, Any]:
    """One free reply with the run's decoding and length limit, read by the protocol as the run reads it."""
    reply = backend.complete(messages, spec.decoding)
    facts = ReplyFacts(reply.finish_reason, reply.structured)
    reading = TEXT.read(protocol, attribute, spec.variant, presentation, reply.text, facts)
    return {"reply": reply.text, "reply_status": reading.status, "finish_reason": reply.finish_reason}


def _ask_once(backend: Any, spec: JudgeSpec, protocol: Any, attribute: Any, messages: list[dict[str, str]]) -> None:
    """One reply of one token, as the judge would ask (its constraint included): a server that cannot be reached,
    has no such model, answers garbage or refuses the constraint fails here, not hours into the run."""
    constrained = mode_of(spec.mode).constrained
    backend.complete(
        messages,
        replace(spec.decoding, max_tokens=1),
        grammar=protocol.grammar(attribute, spec.variant) if constrained else None,
        json_schema=protocol.json_schema(attribute, spec.variant) if constrained else None,
    )


def _blocked(spec: JudgeSpec, checks: list[PromptCheck]) -> str | None:
    """What stops every mode: no item, a question that could not be checked, a doubled BOS, a prompt too long."""
    if not checks:
        return "there is no item to check"
    failed = [c for c in checks if c.error]
    if failed:
        return f"{len(failed)} of {len(checks)} questions could not be checked: {failed[0].error}"
    doubled = [c for c in checks if c.bos is not None and c.bos > 1]
    if doubled:
        return f"prompts start with {doubled[0].bos} BOS tokens (the template and the tokenizer both add one)"
    window = spec.kind.context_window(spec)
    if window is not None:
        longest = max(c.tokens or 0 for c in checks)
        reply = spec.decoding.max_tokens
        if longest + (1 if mode_of(spec.mode).at_answer_position else reply) > window:
            return (
                f"the longest prompt has {longest:,} tokens: with --max-tokens {reply} it does not fit "
                f"--n-ctx {spec.n_ctx:,}; raise --n-ctx"
            )
    return None


def _mode_verdict(
    spec: JudgeSpec, mode: str, checks: list[PromptCheck], template: str, blocked: str | None
) -> ModeCheck:
    """The mode's own verdict over the checked questions (domain/preflight.py), unless something stops every mode."""
    if blocked:
        return ModeCheck(mode, False, blocked)
    server = not spec.kind.reads_distribution  # only the asked mode, with its one server probe
    return mode_of(mode).preflight.verdict(mode, checks, Limits(spec.min_mass, spec.max_retries, server))


def _verdict(
    spec: JudgeSpec, modes: list[ModeCheck], template: str, blocked: str | None
) -> tuple[str, str, str | None]:
    if blocked:
        return "not ready", blocked, None
    by_mode = {m.mode: m for m in modes}
    asked = by_mode[spec.mode]
    if asked.ready:
        return "ready", asked.reason, spec.mode
    ready = next((m for m in modes if m.ready), None)
    if ready is not None:
        reason = f"--mode {spec.mode}: {asked.reason}; --mode {ready.mode}: {ready.reason}"
        return f"use --mode {ready.mode}", reason, ready.mode
    if template == "none" and spec.kind.renders_prompts:
        return (
            "use a chat template",
            f"{asked.reason}, and the model has no chat template (--chat-template, or an instruct model)",
            None,
        )
    return "not ready", f"{asked.reason}; no mode is agreement-ready with this model", None
