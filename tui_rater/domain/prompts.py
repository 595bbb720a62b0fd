"""The papers' LLM prompt templates, verbatim, and their variants.

Placeholders are ``{field}`` names of the item (``{story}``, ``{prompt}``, ``{title}`` ...).
Substitution is one pass (``re.sub``), so braces or placeholders inside an item's text are
never expanded: the item is always presented inside the template's delimiters.

Every template puts the item before the question, so the prompts of one item's attributes
share their longest prefix (instructions + item) -- the judge queue schedules on that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tui_rater.domain.errors import UserError

if TYPE_CHECKING:
    from tui_rater.domain.questions import Attribute, Task

# Chiang & Lee App. D.2.2: the instruction block the teachers and the LLMs both saw.
STORY_INSTRUCTIONS = (
    "Please rate the story fragment\n"
    "The goal of this task is to rate story fragment.\n"
    "Note: Please take the time to fully read and understand the story fragment. "
    "We will reject submissions from workers that are clearly spamming the task."
)

# Chiang & Lee §3.3.2: the two instruction variants.
PERSONA = "(You are a human worker hired to rate the story fragment.)"
EXPLAIN = "Please also explain your decision."

_STORY_HEAD = STORY_INSTRUCTIONS + "\nStory fragment:\n{story}\n(End of story fragment)\n"

# Chiang & Lee App. D.2.2 (one query per attribute) and D.2.3.
CHIANG_LEE_TEMPLATES: dict[tuple[str, str], str] = {
    ("story", "grammaticality"): _STORY_HEAD
    + "How grammatically correct is the text of the story fragment? (on a scale of 1-5, with 1 being the lowest)",
    ("story", "cohesiveness"): _STORY_HEAD
    + "How well do the sentences in the story fragment fit together? (on a scale of 1-5, with 1 being the lowest)",
    ("story", "likability"): _STORY_HEAD
    + "How enjoyable do you find the story fragment? (on a scale of 1-5, with 1 being the lowest)",
    ("story", "relevance"): _STORY_HEAD + "Now read the PROMPT based on which the story fragment was written.\n"
    "PROMPT: {prompt}\n"
    "(End of PROMPT)\n"
    "How relevant is the story fragment to the prompt? (on a scale of 1-5, with 1 being the lowest)",
    # verbatim from App. D.2.3, including its missing closing parenthesis
    ("title-fluency", "fluency"): "You are given a news title. Please read the news title and answer the question.\n"
    "News title:\n{title}\n(End of news title)\n"
    "Question: How natural and fluent is the text of the news title? (on a scale of 1-5, with 1 being the lowest",
    (
        "title-meaning",
        "meaning",
    ): "You are given two news titles. Please read the news titles and answer the question.\n"
    "News title 1:\n{original}\n(End of news title 1)\n"
    "News title 2:\n{attacked}\n(End of news title 2)\n"
    "Question: Do you agree that the meaning (or semantics) of news title 1 is preserved in news title 2? "
    "(on a scale of 1-5, with 1 being the strongly disagree and 5 being strongly agree.)",
}

_CHEN_BODY = "The beginning of the story:\n{prompt}\n\nStoryline:\n{story}\n\n"
_CHEN_V1_HEAD = (
    "Score the following storyline given the beginning of the story on a continual scale from 0 (worst) "
    'to 100 (best), where a score of 0 means "The storyline makes no sense and is totally not understandable" '
    'and a score of 100 means "The storyline is perfect-written and highly consistent with the given beginning '
    'of the story".'
)
# Chen et al. App. A: Explicit Score prompts V1-V5 (V4 answers in 1-5 stars).
CHEN_EXPLICIT: dict[str, str] = {
    "v1": _CHEN_V1_HEAD + "\n\n" + _CHEN_BODY + "Score:",
    "v2": "On a scale of 0 to 100, evaluate the storyline based on the given beginning. A score of 0 indicates "
    "that the storyline is incomprehensible, while a score of 100 means that the storyline is flawlessly written "
    "and logically follows from the beginning of the story.\n\n" + _CHEN_BODY + "Score:",
    "v3": "Score the overall quality of the following storyline given the beginning of the story on a continual "
    "scale from 0 (worst) to 100 (best). Consider whether the storyline is well-written and consistent with the "
    "given beginning of the story.\n\n" + _CHEN_BODY + "Score:",
    "v4": "Score the following storyline given the beginning of the story with one to five stars. Where\n\n"
    '- one star means "Nonsense",\n'
    '- two stars mean "The storyline has some connections with the beginning, but is not understandable",\n'
    '- three stars mean "The storyline has some connections with the beginning and is understandable",\n'
    '- four stars mean "The storyline is consistent with the beginning and possibly involves a few grammar mistakes",\n'
    '- and five stars mean "Perfect storyline and grammar".\n\n' + _CHEN_BODY + "Stars (1-5):",
    "v5": _CHEN_V1_HEAD + ' Please first give your reason carefully (indicated by "Reason:") and then decide your '
    'final score (indicated by "Score: 1-100").\n\n' + _CHEN_BODY.rstrip("\n"),
}
# Chen et al. §2.1: the Implicit Score yes/no question.
CHEN_IMPLICIT = (
    "Consider the following storyline written according to the given beginning of the story:\n\n"
    + _CHEN_BODY
    + "Question: Is the storyline well-written and consistent with the beginning of the story?\n\nAnswer:"
)

_PAIR_BODY = "The beginning of the story:\n{prompt}\n\nStoryline-1:\n{story_a}\n\nStoryline-2:\n{story_b}\n\n"
_PAIR_HEAD = "Consider the following two storylines written according to the given beginning of the story:\n"
# Chen et al. App. B: Pairwise Comparison prompts V1-V4.
CHEN_PAIRWISE: dict[str, str] = {
    "v1": _PAIR_HEAD
    + "\n"
    + _PAIR_BODY
    + "Question: Which storyline is better-written and more consistent with the beginning of the story? "
    "Please answer with one of the following options.\n\n"
    "Options:\n(A) Storyline-1\n(B) Storyline-2\n"
    "(C) Both storylines are equally well-written and consistent with the beginning of the story.\n\n"
    "Answer: I will choose Option",
    "v2": "Question: Which storyline is better-written and more consistent with the beginning of the story? "
    "Please answer with one of the following options.\n\n"
    "The beginning of the story:\n{prompt}\n\n"
    "Options:\n(A) {story_a}\n(B) {story_b}\n"
    "(C) Both storylines are equally well-written and consistent with the beginning of the story.\n\n"
    "Answer: I will choose Option",
    "v3": _PAIR_HEAD
    + _PAIR_BODY
    + "Question: Which storyline has poorer writing and is less consistent with the beginning of the story? "
    "Please answer with one of the following options.\n\n"
    "Options:\n(A) Storyline-1\n(B) Storyline-2\n"
    "(C) Both storylines are equally poor-written and inconsistent with the beginning of the story.\n\n"
    "Answer: I will choose Option",
    "v4": _PAIR_HEAD
    + _PAIR_BODY
    + "Question: Which storyline is better-written and more consistent with the beginning of the story? "
    'Please first give your reason carefully (indicated by "Reason:") and then choose one of the following '
    'options (indicated by "Answer: A/B/C").\n\n'
    "Options:\n(A) Storyline-1\n(B) Storyline-2\n"
    "(C) Both storylines are equally well-written (poor-written) and consistent (inconsistent) with the "
    "beginning of the story.",
}


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    template_id: str  # e.g. "likert/story/relevance/persona"
    template_hash: str  # SHA-256 of the template text before substitution


def generic_template(task: Task, attribute: Attribute) -> str:
    """Instructions, each shown field between delimiters, then the question (custom tasks)."""
    parts = [task.instructions] if task.instructions else []
    for name in task.display_fields + tuple(f for f in attribute.shows if f not in task.display_fields):
        label = name.replace("_", " ").capitalize()
        parts.append(f"{label}:\n{{{name}}}\n(End of {label.lower()})")
    parts.append(attribute.question)
    return "\n".join(parts)


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders(template: str) -> list[str]:
    """The field names a template fills in ({story}, {prompt} ...)."""
    return _PLACEHOLDER.findall(template)


def fill(template: str, fields: dict[str, str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in fields:
            raise UserError(f"the prompt template needs the item field {name!r}, which the item lacks")
        return str(fields[name])

    return _PLACEHOLDER.sub(substitute, template)
