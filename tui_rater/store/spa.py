"""SPA setup (Ethayarajh & Jurafsky §5.2): packets of m prompts, one continuation per writer.

`tui-rater spa setup` draws, for each packet (one per annotator), m prompts that every chosen
system answered, and stores a custom task whose questions ask, for each pair of anonymised
writers and in both orders, "... what is the % chance that writer X is a better writer than
writer Y?", plus (optionally) a Likert rating of each writer's first continuation -- the
standard protocol, for comparison. Humans rate packets in the app; LLM judges get the same
packet and questions through the queue.
"""

from __future__ import annotations

import itertools
import json
import random
import string
from typing import Any

from tui_rater.domain.errors import UserError
from tui_rater.domain.tasks import task_from_definition
from tui_rater.store.study import Study

# one packet per annotator: a million asked for 19.5 GB of packets (the CLI's help says 10,000 too)
MAX_PACKETS = 10_000

# §5.2 step 2, with "system" -> "writer" as in the paper's own study (writers A-E, App. A)
SPA_QUESTION = (
    "Based on what you've read, from 0 to 100, what is the % chance that writer {x} is a better writer than writer {y}?"
)
LIKERT_QUESTION = "How good is writer {x}'s first continuation (Prompt 1)? (on a scale of 1-5, with 1 being the lowest)"
INSTRUCTIONS = (
    "You will read stories by several writers. Each writer continued the same {m} writing prompts. "
    "Some writers may be people and some may be AI systems. Judge each writer on how coherent, "
    "fluent, interesting and relevant to the prompt their stories are."
)


def spa_task_definition(
    name: str, letters: list[str], m: int, pairs: list[tuple[str, str]], likert: bool
) -> dict[str, Any]:
    attributes = []
    for x, y in pairs:
        for a, b in ((x, y), (y, x)):  # both orders (step 3's filter needs both)
            attributes.append(
                {
                    "name": f"p_{a}_over_{b}",
                    "question": SPA_QUESTION.format(x=a, y=b),
                    "scale": {"kind": "probability", "low": 0, "high": 100},
                    "protocol": "spa-probability",
                    "params": {"x": a, "y": b},
                }
            )
    if likert:
        for x in letters:
            attributes.append(
                {
                    "name": f"likert_{x}",
                    "question": LIKERT_QUESTION.format(x=x),
                    "scale": {"kind": "likert", "low": 1, "high": 5, "labels": {"1": "lowest", "5": "highest"}},
                    "protocol": "spa-likert",
                    "params": {"writer": x},
                }
            )
    return {
        "name": name,
        "title": "System-level probabilistic assessment (Ethayarajh & Jurafsky 2022, §5.2)",
        "instructions": INSTRUCTIONS.format(m=m),
        "fields": ["writers", "packet"],
        "display_fields": ["writers"],
        "attributes": attributes,
        "source": "Ethayarajh & Jurafsky (2022), The Authenticity Gap in Human Evaluation, §5.2",
    }


def setup(
    study: Study,
    systems: list[str],
    m: int = 5,
    packets: int = 1,
    seed: int = 0,
    source_task: str = "story",
    name: str = "spa",
    pairs: str = "all",
    likert: bool = True,
) -> dict[str, Any]:
    if len(systems) < 2 or len(set(systems)) != len(systems):
        raise UserError("--systems needs at least two different system names, e.g. --systems human,gpt2")
    if len(systems) > 26:
        raise UserError("SPA compares at most 26 systems")
    if m < 1:
        raise UserError("--m must be at least 1 (the paper recommends m = 5, at least 4)")
    if not 1 <= packets <= MAX_PACKETS:
        raise UserError(f"--packets must be from 1 to {MAX_PACKETS:,} (one packet per annotator)")
    task = study.task(source_task)
    if "story" not in task.fields or "prompt" not in task.fields:
        raise UserError(f"task {source_task!r} has no prompt and story columns to build SPA packets from")
    by_prompt: dict[str, dict[str, str]] = {}
    known = set()
    for item in study.items(source_task):
        known.add(item.system)
        by_prompt.setdefault(item.fields["prompt"], {}).setdefault(item.system or "", item.fields["story"])
    missing = [s for s in systems if s not in known]
    if missing:
        raise UserError(
            f"no {source_task} items were written by {missing[0]!r} (systems in the study: "
            f"{', '.join(sorted(str(s) for s in known))})"
        )
    eligible = sorted(p for p, stories in by_prompt.items() if all(s in stories for s in systems))
    if len(eligible) < m:
        raise UserError(
            f"only {len(eligible)} prompts were answered by every one of {', '.join(systems)}; "
            f"--m {m} needs at least {m}"
        )
    if name in study.item_task_names():
        raise UserError(f"the study already has SPA packets in task {name!r}; choose another --name")
    rng = random.Random(seed)
    # anonymised writers: letters in a random order, the same for every packet (as App. A.1)
    letters = list(string.ascii_uppercase[: len(systems)])
    shuffled = systems[:]
    rng.shuffle(shuffled)
    writer_of = dict(zip(letters, shuffled))
    letter_of = {system: letter for letter, system in writer_of.items()}
    if pairs == "all":
        comparisons = [(letter_of[a], letter_of[b]) for i, a in enumerate(systems) for b in systems[i + 1 :]]
    elif pairs == "chain":
        comparisons = [(letter_of[a], letter_of[b]) for a, b in itertools.pairwise(systems)]
    else:
        raise UserError("--pairs must be 'all' or 'chain'")
    definition = spa_task_definition(name, letters, m, comparisons, likert)
    spa_task = task_from_definition(definition)
    rows = []
    for number in range(packets):
        prompts = rng.sample(eligible, m)
        blocks = []
        for letter in letters:
            lines = [f"━━ Writer {letter} ━━"]
            for k, prompt in enumerate(prompts, 1):
                lines.append(f"Prompt {k}: {prompt}")
                lines.append(by_prompt[prompt][writer_of[letter]])
                lines.append("")
            blocks.append("\n".join(lines))
        packet = {"writers": writer_of, "prompts": prompts, "m": m, "seed": seed, "packet": number}
        rows.append(
            {
                "id": f"packet-{number + 1}",
                "system": "spa",
                "writers": "\n".join(blocks),
                "packet": json.dumps(packet, ensure_ascii=False),
            }
        )
    added, _ = study.add_items(spa_task, rows, source=f"spa setup --systems {','.join(systems)}", new_task=True)
    return {
        "task": name,
        "packets": added,
        "writers": writer_of,
        "questions": len(spa_task.attributes),
        "eligible_prompts": len(eligible),
    }
