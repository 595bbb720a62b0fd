"""The reports the golden test compares (``test_report_golden.py``): the bundled demo data, and one study
that reaches every report section, both reported through the real CLI.

The demo is what `tui-rater demo --no-app` imports (HANNA: three people and an LLM). The second study is
built from seeded random ratings so that every table has rows: Likert questions with three people, judges
that differ only in temperature (Table 3), a judge's typed failures and scale mass (readings), an item at
the scale's end (extremes), a retest, notes; a 0-100 question (meta-evaluation); pairwise answers in both
orders (position, Bradley-Terry, pairwise meta-evaluation); a choice question (nominal); SPA packets.

Regenerate the golden files only for a deliberate change of a number or a layout, in a commit of its own
that says why: ``.venv/bin/python -m tests.stats.golden``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np

from tests.stats.ratings import insert
from tests.stats.simulated import likert_study
from tests.support import DATA, run_cli_process
from tui_rater import __version__
from tui_rater.domain.tasks import task_from_definition
from tui_rater.service.juries import JuryOptions, make_jury
from tui_rater.store import spa
from tui_rater.store.db import write
from tui_rater.store.study import Study

GOLDEN = DATA / "report"
# (file name, study, report flags): every format that is text, and the settings a user gives
REPORTS = (
    ("demo.json", "demo", ("--format", "json")),
    ("demo.md", "demo", ("--format", "markdown")),
    ("demo.csv", "demo", ("--format", "csv")),
    ("demo.txt", "demo", ("--format", "table")),
    ("wide.json", "wide", ("--format", "json")),
    ("wide.md", "wide", ("--format", "markdown")),
    ("wide.csv", "wide", ("--format", "csv")),
    ("wide.txt", "wide", ("--format", "table")),
    ("wide-epsilon.md", "wide", ("--format", "markdown", "--epsilon", "0.1", "--spa-tau", "1.3")),
    ("wide-crowd.md", "wide", ("--format", "markdown", "--raters", "crowd", "--no-spa-filter")),
    ("demo.html", "demo", ("--format", "html")),
    ("wide.html", "wide", ("--format", "html")),
)
STUDY_PATH = "<study>"  # the study's path in a report, wherever the test built it
VERSION = "<version>"
FIGURE = "(figure)"

CHOICE_TASK = {
    "name": "exchange",
    "instructions": "Read the exchange.",
    "fields": ["context", "response"],
    "attributes": [
        {
            "name": "kind",
            "question": "Is the response a question, an answer or other?",
            "scale": {"kind": "choice", "choices": ["question", "answer", "other"]},
        }
    ],
}


def demo_study(folder: Path) -> Path:
    db = folder / "demo.db"
    out = run_cli_process("demo", "--no-app", "--db", db, cwd=folder, env=_env(folder))
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return db


def wide_study(folder: Path) -> Path:
    """Seeded ratings of every protocol, so that every report table has rows."""
    db = folder / "wide.db"
    rng = np.random.default_rng(23)
    likert_study(db, humans=3, prompts=8, seed=23)  # story: 3 people, judges copycat / random / close
    study = Study.open(db)
    keys = [item.key for item in study.items("story")]
    _story_extras(study, keys, rng)
    _explicit(study, rng)
    _pairwise(study, rng)
    _choice(study, rng)
    _spa(study, rng)
    # a jury of the two 0-100 scorers (made last: the other raters keep their ids)
    make_jury(study, JuryOptions("panel", ("scorer-a", "scorer-b"), "mean", "story-explicit"))
    # a rating's time is when it was stored; a retest's drift is read against it: a minute per rating instead
    with write(study._db) as conn:
        conn.execute(
            "UPDATE ratings SET created_at = strftime('%Y-%m-%dT%H:%M:%S.000+00:00', '2026-01-01', id || ' minutes')"
        )
        conn.execute("UPDATE notes SET created_at = '2026-01-02T00:00:00.000+00:00'")
    study.close()
    return db


def _story_extras(study: Study, keys: list[int], rng: np.random.Generator) -> None:
    # two runs of one model differing only in temperature: Table 3
    for temperature in (0.0, 1.0):
        run = study.judge(f"run-t{temperature:g}", {"api_model": "m", "mode": "text", "temperature": temperature})
        for key in keys:
            for attribute in ("grammaticality", "likability"):
                insert(study, key, attribute, run.id, float(rng.integers(1, 6)))
    # a distribution judge: its scale mass, a typed failure, and an item at the scale's top on every question
    reader = study.judge("reader", {"api_model": "r", "mode": "distribution"})
    for i, key in enumerate(keys):
        for attribute in ("grammaticality", "likability"):
            if i == 3 and attribute == "likability":
                insert(study, key, attribute, reader.id, None, status="no_number")
                continue
            value = 5.0 if i == 0 else float(rng.integers(1, 6))
            insert(study, key, attribute, reader.id, value, details={"mass": round(0.8 + 0.19 * rng.random(), 4)})
    # h0 rates the first items again, blind: test-retest
    h0 = study.human("h0")
    first = study._db.conn.execute(
        "SELECT id, item_key, attribute, value FROM ratings WHERE rater_id = ? ORDER BY id LIMIT 8", [h0.id]
    ).fetchall()
    for rating_id, item_key, attribute, value in first:
        again = float(np.clip(value + rng.choice([-1, 0, 0, 1]), 1, 5))
        study.add_rating(item_key, attribute, h0.id, again, retest_of=rating_id)
    # notes: a flag, and comments whose text a table must show literally (a pipe, a line break)
    h1 = study.human("h1")
    study.add_note(keys[2], h1.id, "flag")
    study.add_note(keys[2], h1.id, "comment", "off | topic\nsecond line", attribute="likability")
    study.add_note(keys[5], h0.id, "comment", "reads like a poem")


def _explicit(study: Study, rng: np.random.Generator) -> None:
    rows = [
        {"id": f"e{s}-{p}", "system": s, "prompt": f"Prompt {p}.", "story": f"Story {p} by {s}."}
        for p in range(8)
        for s in ("gpt2", "human")
    ]
    study.add_items(study.task("story-explicit"), rows)
    keys = [item.key for item in study.items("story-explicit")]
    truth = rng.uniform(20, 90, len(keys))
    for name in ("e1", "e2", "e3"):
        rater = study.human(name)
        for key, t in zip(keys, truth):
            study.add_rating(key, "overall", rater.id, float(np.clip(round(t + rng.normal(0, 10)), 0, 100)))
    for name, noise in (("scorer-a", 8.0), ("scorer-b", 25.0)):
        judge = study.judge(name, {"api_model": name, "mode": "text", "variant": "v1"})
        for key, t in zip(keys, truth):
            insert(study, key, "overall", judge.id, float(np.clip(round(t + rng.normal(0, noise)), 0, 100)))


def _pairwise(study: Study, rng: np.random.Generator) -> None:
    systems = ["gpt2 vs human"] * 6 + ["human vs fusion"] * 6
    study.add_items(
        study.task("story-pairwise"),
        [
            {"id": f"p{i}", "system": s, "prompt": f"P{i}", "story_a": f"A{i}", "story_b": f"B{i}"}
            for i, s in enumerate(systems)
        ],
    )
    keys = [item.key for item in study.items("story-pairwise")]
    for name in ("ph1", "ph2", "ph3"):
        rater = study.human(name)
        for key in keys:
            study.add_rating(key, "preference", rater.id, float(rng.choice(3, p=[0.4, 0.4, 0.2])))
    v1 = study.judge("pair-v1", {"api_model": "pm", "mode": "text", "variant": "v1"})
    v4 = study.judge("pair-v4", {"api_model": "pm", "mode": "text", "variant": "v4"})
    for i, key in enumerate(keys):
        insert(study, key, "preference", v1.id, float(rng.choice(3, p=[0.6, 0.3, 0.1])), presentation="original")
        if i < len(keys) - 1:  # the last pair never judged in the swapped order
            insert(study, key, "preference", v1.id, float(rng.choice(3, p=[0.3, 0.6, 0.1])), presentation="swapped")
        for order in ("original", "swapped"):
            for sample in range(3):
                value = float(rng.choice(3, p=[0.45, 0.45, 0.1]))
                insert(study, key, "preference", v4.id, value, presentation=order, sample=sample)


def _choice(study: Study, rng: np.random.Generator) -> None:
    task = task_from_definition(CHOICE_TASK)
    study.remember_task(task)
    study.add_items(task, [{"id": f"x{i}", "context": f"Said {i}?", "response": f"Reply {i}."} for i in range(10)])
    keys = [item.key for item in study.items("exchange")]
    truth = rng.choice(3, size=len(keys))
    for name in ("c1", "c2", "c3"):
        rater = study.human(name)
        for key, t in zip(keys, truth):
            value = t if rng.random() < 0.8 else rng.choice(3)
            study.add_rating(key, "kind", rater.id, float(value))
    judge = study.judge("kinds", {"api_model": "k", "mode": "text"})
    for key, t in zip(keys, truth):
        for sample in range(2):
            insert(study, key, "kind", judge.id, float(t if rng.random() < 0.7 else rng.choice(3)), sample=sample)


def _spa(study: Study, rng: np.random.Generator) -> None:
    spa.setup(study, ["human", "gpt2"], m=4, packets=4, seed=3)
    task = study.task("spa")
    keys = [item.key for item in study.items("spa")]
    judge = study.judge("spa-judge", {"api_model": "s", "mode": "text"})
    for k, key in enumerate(keys):
        person = study.human(f"s{k}")
        for attribute in task.attributes:
            if attribute.scale.kind == "likert":
                study.add_rating(key, attribute.name, person.id, float(rng.integers(1, 6)))
                for sample in range(2):
                    insert(study, key, attribute.name, judge.id, float(rng.integers(1, 6)), sample=sample)
            else:
                study.add_rating(key, attribute.name, person.id, float(rng.integers(0, 101)))
                for sample in range(2):
                    insert(study, key, attribute.name, judge.id, float(rng.integers(0, 101)), sample=sample)


def _env(folder: Path) -> dict[str, str]:
    # no user config, no annotator from the environment: the same report wherever it runs
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUI_RATER_")}
    env["XDG_CONFIG_HOME"] = str(folder / "config")
    env["HOME"] = str(folder)
    return env


def studies(folder: Path) -> dict[str, Path]:
    return {"demo": demo_study(folder), "wide": wide_study(folder)}


def report(found: dict[str, Path], name: str) -> str:
    """The golden file ``name`` as the CLI writes it now: the study's path replaced by STUDY_PATH, the
    version by VERSION, and an HTML report's figures by FIGURE (matplotlib's SVG bytes differ between its
    releases; the figures' captions and descriptions stay)."""
    which, flags = next((which, flags) for file, which, flags in REPORTS if file == name)
    db = found[which]
    out = db.parent / f"out-{name}"
    done = run_cli_process("report", "--db", db, *flags, "--out", out, env=_env(db.parent))
    if done.returncode != 0:
        raise RuntimeError(f"{name}: {done.stderr}")
    text = out.read_text(encoding="utf-8").replace(str(db), STUDY_PATH)
    if name.endswith(".html"):
        text = text.replace(f"tui-rater {__version__}", f"tui-rater {VERSION}")
        text = re.sub(r'src="data:image/svg\+xml;base64,[A-Za-z0-9+/=]*"', f'src="{FIGURE}"', text)
    return text


def reports(folder: Path) -> dict[str, str]:
    """Each golden file's name and the report the CLI writes now."""
    found = studies(folder)
    return {name: report(found, name) for name, _, _ in REPORTS}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for name, text in reports(Path(tmp)).items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
            print(f"wrote {GOLDEN / name}", file=sys.stderr)
