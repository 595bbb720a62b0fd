"""Tasks, attributes and scales: the papers' evaluation protocols as data.

A task is what one person sees: instructions, the item fields it shows, and the questions
(attributes) asked about each item. The LLM prompt for each attribute is built from the same
texts (see ``prompts.py``), so the judge and the human get exactly the same instructions.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tui_rater.domain.errors import UserError
from tui_rater.domain.prompts import CHIANG_LEE_TEMPLATES, STORY_INSTRUCTIONS, generic_template, placeholders
from tui_rater.domain.questions import SCALE_KINDS, Attribute, Choice, Scale, Task

__all__ = ["BUILTIN_TASKS", "SCALE_KINDS", "Attribute", "Choice", "Scale", "Task", "TaskRegistry", "load_task_file"]

MAX_CHOICES = 9
MAX_SCALE_END = 1_000_000
MAX_SCALE_SPAN = 10_000


# --- the papers' built-in tasks ---------------------------------------------------------

_LIKERT_SUFFIX = "(on a scale of 1-5, with 1 being the lowest)"
_LIKERT = Scale("likert", 1, 5, {1: "lowest", 5: "highest"})
_AGREE = Scale("likert", 1, 5, {1: "strongly disagree", 5: "strongly agree"})


STORY = Task(
    name="story",
    title="Open-ended story rating (Chiang & Lee 2023, §3)",
    instructions=STORY_INSTRUCTIONS,
    fields=("prompt", "story"),
    display_fields=("story",),
    attributes=(
        Attribute(
            "grammaticality",
            f"How grammatically correct is the text of the story fragment? {_LIKERT_SUFFIX}",
            _LIKERT,
            template=CHIANG_LEE_TEMPLATES[("story", "grammaticality")],
            protocol="likert",
        ),
        Attribute(
            "cohesiveness",
            f"How well do the sentences in the story fragment fit together? {_LIKERT_SUFFIX}",
            _LIKERT,
            template=CHIANG_LEE_TEMPLATES[("story", "cohesiveness")],
            protocol="likert",
        ),
        Attribute(
            "likability",
            f"How enjoyable do you find the story fragment? {_LIKERT_SUFFIX}",
            _LIKERT,
            template=CHIANG_LEE_TEMPLATES[("story", "likability")],
            protocol="likert",
        ),
        Attribute(
            "relevance",
            f"How relevant is the story fragment to the prompt? {_LIKERT_SUFFIX}",
            _LIKERT,
            shows=("prompt",),
            template=CHIANG_LEE_TEMPLATES[("story", "relevance")],
            protocol="likert",
            intro="Now read the PROMPT based on which the story fragment was written.",
        ),
    ),
    source="Chiang & Lee (2023), §3.1 and App. D.2.2",
    field_labels={"story": "Story fragment:", "prompt": "PROMPT:"},
)

TITLE_FLUENCY = Task(
    name="title-fluency",
    title="News title fluency (Chiang & Lee 2023, §4)",
    instructions=("You are given a news title. Please read the news title and answer the question."),
    fields=("title",),
    display_fields=("title",),
    attributes=(
        Attribute(
            "fluency",
            # §4's wording; App. D.2.3's copy of the LLM query lacks the closing
            # parenthesis, which prompts.py keeps verbatim.
            f"How natural and fluent is the text of the news title? {_LIKERT_SUFFIX}",
            _LIKERT,
            template=CHIANG_LEE_TEMPLATES[("title-fluency", "fluency")],
            protocol="likert",
        ),
    ),
    source="Chiang & Lee (2023), §4 and App. D.2.3",
    field_labels={"title": "News title:"},
)

TITLE_MEANING = Task(
    name="title-meaning",
    title="Meaning preserved after a synonym-substitution attack (Chiang & Lee 2023, §4)",
    instructions=("You are given two news titles. Please read the news titles and answer the question."),
    fields=("original", "attacked"),
    display_fields=("original", "attacked"),
    attributes=(
        Attribute(
            "meaning",
            "Do you agree that the meaning (or semantics) of news title 1 is preserved in "
            "news title 2? (on a scale of 1-5, with 1 being the strongly disagree and 5 "
            "being strongly agree.)",
            _AGREE,
            template=CHIANG_LEE_TEMPLATES[("title-meaning", "meaning")],
            protocol="likert",
        ),
    ),
    source="Chiang & Lee (2023), §4 and App. D.2.3",
    field_labels={"original": "News title 1:", "attacked": "News title 2:"},
    changed_words=("original", "attacked"),
)

# HANNA (Chhun et al. 2022): six criteria, defined as in shared/PROTOCOLS.md §4; the
# question form and 1-5 suffix follow Chiang & Lee so both studies read alike.
_HANNA_CRITERIA = (
    ("relevance", "How well does the story match its prompt?"),
    ("coherence", "How much does the story make sense?"),
    ("empathy", "How well did you understand the characters' emotions?"),
    ("surprise", "How surprising was the end of the story?"),
    ("engagement", "How much did you engage with the story?"),
    ("complexity", "How elaborate is the story?"),
)
HANNA = Task(
    name="hanna",
    title="HANNA's six story criteria (Chhun et al. 2022)",
    instructions=(
        "Please rate the story written for the prompt below.\n"
        "Note: Please take the time to fully read and understand the story."
    ),
    fields=("prompt", "story"),
    display_fields=("prompt", "story"),
    attributes=tuple(
        Attribute(name, f"{question} {_LIKERT_SUFFIX}", _LIKERT, protocol="likert")
        for name, question in _HANNA_CRITERIA
    ),
    source="Chhun et al. (2022), HANNA criteria",
    field_labels={"story": "Story fragment:", "prompt": "PROMPT:"},
)

# Chen et al. §2.1, Explicit Score prompt V1 (App. A).
STORY_EXPLICIT = Task(
    name="story-explicit",
    title="Explicit score 0-100 (Chen et al. 2023, §2.1)",
    instructions=(
        "Score the following storyline given the beginning of the story on a continual "
        'scale from 0 (worst) to 100 (best), where a score of 0 means "The storyline makes '
        'no sense and is totally not understandable" and a score of 100 means "The '
        "storyline is perfect-written and highly consistent with the given beginning of "
        'the story".'
    ),
    fields=("prompt", "story"),
    display_fields=("prompt", "story"),
    attributes=(
        Attribute(
            "overall",
            "Score:",
            Scale("continuous", 0, 100, {0: "worst", 100: "best"}),
            protocol="explicit",
        ),
    ),
    source="Chen et al. (2023), §2.1 and App. A (prompt V1)",
    field_labels={"story": "Story fragment:", "prompt": "PROMPT:"},
)

# Chen et al. §2.2, Pairwise Comparison prompt V1 (App. B).
STORY_PAIRWISE = Task(
    name="story-pairwise",
    title="Pairwise comparison A / B / tie (Chen et al. 2023, §2.2)",
    instructions=("Consider the following two storylines written according to the given beginning of the story:"),
    fields=("prompt", "story_a", "story_b"),
    display_fields=("prompt", "story_a", "story_b"),
    attributes=(
        Attribute(
            "preference",
            "Question: Which storyline is better-written and more consistent with the "
            "beginning of the story? Please answer with one of the following options.",
            Scale(
                "choice",
                0,
                2,
                choices=(
                    Choice("A", "Storyline-1"),
                    Choice("B", "Storyline-2"),
                    Choice(
                        "C",
                        "Both storylines are equally well-written and consistent with the beginning of the story.",
                    ),
                ),
            ),
            protocol="pairwise",
            params={"first": "story_a", "second": "story_b"},
        ),
    ),
    source="Chen et al. (2023), §2.2 and App. B (prompt V1)",
    field_labels={"prompt": "PROMPT:", "story_a": "Storyline-1:", "story_b": "Storyline-2:"},
)

BUILTIN_TASKS: dict[str, Task] = {
    t.name: t for t in (STORY, TITLE_FLUENCY, TITLE_MEANING, HANNA, STORY_EXPLICIT, STORY_PAIRWISE)
}


# --- custom tasks from TOML -------------------------------------------------------------


def load_task_file(path: str | Path) -> list[Task]:
    """Read custom tasks from a TOML file (format in README, example in sample_data/)."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"task file {path} does not exist") from None
    except UnicodeDecodeError:
        raise UserError(f"task file {path} is not valid UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"task file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise UserError(f"cannot read task file {path}: {exc.strerror}") from None
    entries = raw.get("task")
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list) or not entries:
        raise UserError(f"task file {path} defines no [[task]] table")
    return [_task_from_toml(entry, path, i) for i, entry in enumerate(entries, 1)]


def task_from_definition(entry: dict[str, Any], where: str = "the study file") -> Task:
    """Rebuild a custom task from the definition stored with its items."""
    # a sentence names the task: the study may hold several ("task file the study file, task 1" named none)
    return _task_from_toml(entry, Path(where), 1, f"the study's task {entry.get('name')!r}")


def _task_from_toml(entry: object, path: Path, index: int, where: str = "") -> Task:
    where = where or f"task file {path}, task {index}"
    if not isinstance(entry, dict):
        raise UserError(f"{where} is not a table")
    name = _required_str(entry, "name", where)
    if name in BUILTIN_TASKS:
        raise UserError(f"{where}: the name {name!r} is a built-in task; choose another name")
    fields = entry.get("fields")
    if not isinstance(fields, list) or not fields or not all(isinstance(f, str) and f.isidentifier() for f in fields):
        raise UserError(f"{where}: 'fields' must be a non-empty list of column names (letters, digits, _)")
    reserved = {"id", "system", "task"} & set(fields)
    if reserved:
        raise UserError(f"{where}: 'fields' may not use the reserved column name {sorted(reserved)[0]!r}")
    display = entry.get("display_fields", fields)
    if not _str_list(display) or not set(display) <= set(fields):
        raise UserError(f"{where}: 'display_fields' must be a list of names from 'fields'")
    attrs_raw = entry.get("attributes")
    if not isinstance(attrs_raw, list) or not attrs_raw:
        raise UserError(f"{where}: define at least one [[task.attributes]] table")
    attributes = []
    seen: set[str] = set()
    for j, attr in enumerate(attrs_raw, 1):
        awhere = f"{where}, attribute {j}"
        if not isinstance(attr, dict):
            raise UserError(f"{awhere} is not a table")
        aname = _required_str(attr, "name", awhere)
        if aname in seen:
            raise UserError(f"{awhere}: attribute name {aname!r} is used twice")
        seen.add(aname)
        shows = attr.get("shows", [])
        if not _str_list(shows) or not set(shows) <= set(fields):
            raise UserError(f"{awhere}: 'shows' must be a list of names from 'fields'")
        template = attr.get("template")
        if template is not None and not isinstance(template, str):
            raise UserError(f"{awhere}: 'template' must be a string")
        _check_template(template, fields, awhere)
        attribute = Attribute(
            name=aname,
            question=_required_str(attr, "question", awhere),
            scale=_scale_from_toml(attr.get("scale", {}), awhere),
            shows=tuple(shows),
            template=template,
            protocol=_optional_str(attr, "protocol", awhere),
            params=_params(attr, awhere),
            intro=_optional_str(attr, "intro", awhere),
        )
        _check_protocol(attribute, tuple(fields), awhere)
        attributes.append(attribute)
    instructions = entry.get("instructions", "")
    if not isinstance(instructions, str):
        raise UserError(f"{where}: 'instructions' must be a string")
    task = Task(
        name=name,
        title=str(entry.get("title", name)),
        instructions=instructions,
        fields=tuple(fields),
        display_fields=tuple(display),
        attributes=tuple(attributes),
        source=str(entry.get("source", str(path))),
        builtin=False,
        definition=entry,
    )
    _check_prompts(task, where)
    return task


def _str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _check_template(template: str | None, fields: list[str], where: str) -> None:
    """Every {placeholder} of a prompt template names one of the task's fields (else every judge
    request for the task would fail, item by item, long after the file was accepted)."""
    unknown = sorted(set(placeholders(template or "")) - set(fields))
    if unknown:
        raise UserError(
            f"{where}: the template's {{{unknown[0]}}} is not one of the task's fields ({', '.join(fields)})"
        )


def _check_prompts(task: Task, where: str) -> None:
    """Every {placeholder} in the prompt text a task file supplies -- its template, or the
    instructions and question the generic template is built from -- names a field of the task:
    otherwise every judge request would fail, item by item, long after the file was accepted.
    (The papers' own templates, which a protocol may use instead, are the protocol's business.)"""
    from tui_rater.domain import protocols  # the protocols import this module

    for position, attribute in enumerate(task.attributes, 1):
        protocol = protocols.of(attribute)
        base = attribute.template or generic_template(task, attribute)
        used = any(base in protocol.template(task, attribute, v)[1] for v in protocol.variants(task, attribute))
        unknown = sorted(set(placeholders(base)) - set(task.fields)) if used else []
        if unknown:
            raise UserError(
                f"{where}, attribute {position}: the judge's prompt would fill {{{unknown[0]}}} from an item "
                f"field the task does not have ({', '.join(task.fields)}); remove the braces or add the field"
            )


def _required_str(table: dict[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{where}: {key!r} must be a non-empty string")
    return value


def _optional_str(table: dict[str, Any], key: str, where: str) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise UserError(f"{where}: {key!r} must be a string")
    return value


def _params(table: dict[str, Any], where: str) -> dict[str, str]:
    params = table.get("params", {})
    if not isinstance(params, dict) or not all(isinstance(v, str) for v in params.values()):
        raise UserError(f'{where}: \'params\' must be a table of strings, e.g. {{ first = "a", second = "b" }}')
    return {str(k): v for k, v in params.items()}


def _check_protocol(attribute: Attribute, fields: tuple[str, ...], where: str) -> None:
    """The protocol exists and accepts the question (its scale, its parameters)."""
    from tui_rater.domain import protocols  # the protocols import this module

    try:
        protocols.of(attribute).check_attribute(attribute, fields)
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None


def _scale_from_toml(raw: object, where: str) -> Scale:
    if not isinstance(raw, dict):
        raise UserError(f"{where}: 'scale' must be a table")
    kind = raw.get("kind", "likert")
    if kind not in SCALE_KINDS:
        raise UserError(f"{where}: scale kind {kind!r} is not one of {', '.join(SCALE_KINDS)}")
    if kind == "choice":
        choices = raw.get("choices")
        if not isinstance(choices, list) or len(choices) < 2 or not all(isinstance(c, str) for c in choices):
            raise UserError(f"{where}: a choice scale needs 'choices', a list of at least two labels")
        if len(choices) > MAX_CHOICES:  # a person answers with the keys 1-9
            raise UserError(f"{where}: a choice scale has at most {MAX_CHOICES} choices, not {len(choices)}")
        keys = [chr(ord("A") + i) for i in range(len(choices))]
        return Scale("choice", 0, len(choices) - 1, choices=tuple(Choice(k, c) for k, c in zip(keys, choices)))
    default_low, default_high = (1, 5) if kind == "likert" else (0, 100)
    low, high = raw.get("low", default_low), raw.get("high", default_high)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)) or not low < high:
        raise UserError(f"{where}: scale 'low' and 'high' must be numbers with low < high")
    if not all(math.isfinite(v) and abs(v) <= MAX_SCALE_END for v in (low, high)):
        raise UserError(f"{where}: scale 'low' and 'high' must be finite numbers between ±{MAX_SCALE_END:,}")
    if high - low > MAX_SCALE_SPAN:  # a judge's grammar lists every whole value of the scale
        raise UserError(f"{where}: the scale spans {high - low:g}; at most {MAX_SCALE_SPAN:,} is supported")
    if kind == "likert" and (not float(low).is_integer() or not float(high).is_integer() or high - low > 9):
        raise UserError(f"{where}: a likert scale needs whole-number ends at most 10 points apart")
    labels_raw = raw.get("labels", {})
    if not isinstance(labels_raw, dict):
        raise UserError(f'{where}: scale \'labels\' must be a table such as {{ "1" = "lowest" }}')
    try:
        labels = {int(k): str(v) for k, v in labels_raw.items()}
    except ValueError:
        raise UserError(f"{where}: scale label keys must be whole numbers") from None
    return Scale(kind, low, high, labels)


class TaskRegistry:
    """Built-in tasks plus any loaded from ``--task-file``.

    ``unusable``: the study's tasks that cannot be rebuilt here, each with its sentence (a protocol from a package
    uninstalled since): asking for one says why, while the other tasks, the papers' among them, stay usable.
    """

    def __init__(self, extra: list[Task] | None = None, unusable: dict[str, UserError] | None = None):
        self._tasks = dict(BUILTIN_TASKS)
        for task in extra or []:
            self._tasks[task.name] = task
        self.unusable = {name: error for name, error in (unusable or {}).items() if name not in self._tasks}

    def get(self, name: str) -> Task:
        if name in self.unusable and name not in self._tasks:
            raise self.unusable[name]
        try:
            return self._tasks[name]
        except KeyError:
            known = ", ".join(self._tasks)
            raise UserError(f"unknown task {name!r} (known tasks: {known})") from None

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks.values())

    def __contains__(self, name: str) -> bool:
        return name in self._tasks or name in self.unusable

    @classmethod
    def with_files(cls, paths: list[str] | None) -> TaskRegistry:
        extra: list[Task] = []
        for path in paths or []:
            extra.extend(load_task_file(path))
        return cls(extra)


def definition_change(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The first difference between two stored definitions of a task, in words (for a refusal)."""
    old_attrs = {a.get("name"): a for a in old.get("attributes", []) if isinstance(a, dict)}
    new_attrs = {a.get("name"): a for a in new.get("attributes", []) if isinstance(a, dict)}
    if gone := [name for name in old_attrs if name not in new_attrs]:
        return f"question {gone[0]!r} is missing from the new one"
    if added := [name for name in new_attrs if name not in old_attrs]:
        return f"the new one adds question {added[0]!r}"
    for name, attribute in old_attrs.items():
        for key in sorted(set(attribute) | set(new_attrs[name])):
            if attribute.get(key) != new_attrs[name].get(key):
                was, now = attribute.get(key), new_attrs[name].get(key)
                return f"question {name!r}: {key} was {was!r}, now {now!r}"
    for key in sorted((set(old) | set(new)) - {"attributes"}):
        if old.get(key) != new.get(key):
            return f"{key} was {old.get(key)!r}, now {new.get(key)!r}"
    return "the definitions differ"
