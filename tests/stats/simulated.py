"""Simulated raters with a known answer, written into a real study file (for the verdict sections' tests).

Each item has a true score; each human rates it with noise; the judges are ``copycat`` (copies the
first human exactly: it must win against the others, Calderon et al.'s sanity check), ``random``
(uniform on the scale: it must lose), and ``close`` (the truth plus small noise). The humans rate the items
in a shuffled order, all of an item's ratings together, so the report's rating order is known.
The values are kept by item id, apart from the study, for the tests' direct calls of the statistics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tests.stats.ratings import insert
from tui_rater.store.study import Study

SYSTEMS = ("gpt2", "human")


@dataclass
class Simulated:
    path: Path
    attributes: tuple[str, ...]
    ids: list[str]  # item ids, in import order
    system: dict[str, str]  # item id -> system
    prompt: dict[str, str]  # item id -> prompt (each prompt answered once by every system)
    humans: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # attribute -> human -> id -> value
    judges: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # attribute -> judge -> id -> value
    order: list[str] = field(default_factory=list)  # the order the humans rated the items

    def open(self) -> Study:
        return Study.open(self.path)


def likert_study(
    path: Path,
    *,
    humans: int = 4,
    prompts: int = 20,
    attributes: tuple[str, ...] = ("grammaticality", "likability"),
    rated_share: float = 1.0,
    seed: int = 0,
    human_names: list[str] | None = None,
    judge_samples: int = 1,
) -> Simulated:
    """``prompts`` x 2 systems story items, Likert 1-5; the humans rate a random ``rated_share`` of them."""
    rng = np.random.default_rng(seed)
    study = Study.open(path)
    rows = [
        {"id": f"{s}-{p}", "system": s, "prompt": f"Prompt {p}.", "story": f"Story {p} by {s}."}
        for p in range(prompts)
        for s in SYSTEMS
    ]
    study.add_items(study.task("story"), rows)
    found = Simulated(
        path,
        attributes,
        [r["id"] for r in rows],
        {r["id"]: r["system"] for r in rows},
        {r["id"]: r["prompt"] for r in rows},
    )
    key = {item.id: item.key for item in study.items("story")}
    names = human_names or [f"h{k}" for k in range(humans)]
    rated = [i for i in found.ids if rng.random() < rated_share]
    found.order = [found.ids[k] for k in rng.permutation(len(found.ids)) if found.ids[k] in rated]
    for attribute in attributes:
        truth = {i: float(rng.integers(1, 6)) for i in found.ids}
        # the gpt2 system writes a little worse: a real difference between systems
        truth = {
            i: max(1.0, t - 1) if found.system[i] == "gpt2" and rng.random() < 0.5 else t for i, t in truth.items()
        }
        found.humans[attribute] = {
            name: {i: float(np.clip(truth[i] + rng.choice([-1, 0, 0, 1]), 1, 5)) for i in found.order} for name in names
        }
        first = found.humans[attribute][names[0]]
        found.judges[attribute] = {
            "copycat": {i: first.get(i, truth[i]) for i in found.ids},
            "random": {i: float(rng.integers(1, 6)) for i in found.ids},
            "close": {i: float(np.clip(truth[i] + rng.choice([-1, 0, 0, 0, 1]), 1, 5)) for i in found.ids},
        }
    raters = {name: study.human(name) for name in names}
    for item in found.order:  # every human's ratings of an item together: the item's ratings complete at once
        for attribute in attributes:
            for name, rater in raters.items():
                study.add_rating(key[item], attribute, rater.id, found.humans[attribute][name][item])
    for judge in ("copycat", "random", "close"):
        rater = study.judge(judge, {"api_model": judge, "mode": "text"})
        for attribute in attributes:
            for item, value in found.judges[attribute][judge].items():
                for sample in range(judge_samples):
                    insert(study, key[item], attribute, rater.id, value, sample=sample)
    study.close()
    return found
