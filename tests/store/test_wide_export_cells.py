"""`export --what wide` (issue 35): each cell chosen by SQLite, the file checked byte for byte against a wide table
built here from the test's own record of what it stored -- not from the product's reading of the study.

The study has gaps (items nobody rated, a column whose first rating comes late), changed minds and undos, two judges
with repeated samples, both orders of a pair and a failed reading, a person's stray sample and blind retests (never
in force), two raters whose columns share a name, another task, and ids, systems and names that need quoting or
would run as a spreadsheet formula.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from tui_rater.store.db import utc_now, write
from tui_rater.store.ratings import NewRating, insert_ratings
from tui_rater.store.study import Study

STORY_IDS = ["=cmd", "a,b", 'q"uote', "Zoë", "-3", "+x", "@at", *(f"s{i}" for i in range(7, 30))]
SYSTEMS = [None, "@gpt2", "human", "=sys,1"]
PEOPLE = ("ann", "b,ob", "=eve", 'Zo"e')
JUDGES = ("j1", "j2")


@dataclass
class Stored:
    id: int
    item: int
    attribute: str
    rater: str
    presentation: str
    sample: int
    value: float | None
    retest: bool
    retracted: bool = False


def _build(tmp_path: Path) -> tuple[Study, list[Stored], dict[str, int], dict[str, list[tuple[int, str, str | None]]]]:
    study = Study.open(tmp_path / "s.db")
    items: dict[str, list[tuple[int, str, str | None]]] = {}
    for name, ids in (("story", STORY_IDS), ("title-fluency", ["t,1", "=t2", "t3"])):
        task = study.task(name)
        rows = [
            {"id": item_id, "system": SYSTEMS[i % len(SYSTEMS)], **{f: f"{f} {i}" for f in task.fields}}
            for i, item_id in enumerate(ids)
        ]
        study.add_items(task, rows)
        keys = {item.id: item.key for item in study.items(name)}
        items[name] = [(keys[r["id"]], r["id"], r["system"]) for r in rows]  # in import order
    rater_ids = {name: study.human(name).id for name in PEOPLE}
    rater_ids |= {name: study.judge(name, {"model": name}).id for name in (*JUDGES, "j1:x")}
    stored: list[Stored] = []

    def store(
        item: int,
        attribute: str,
        rater: str,
        value: float | None,
        *,
        sample: int = 0,
        presentation: str = "",
        retest_of: int | None = None,
        parse_status: str = "ok",
    ) -> None:
        rating = NewRating(item, attribute, rater_ids[rater], value, utc_now(), sample=sample,
                           presentation=presentation, retest_of=retest_of, parse_status=parse_status)  # fmt: skip
        with write(study._db) as conn:
            rating_id = insert_ratings(conn, [rating])
        assert rating_id is not None
        stored.append(Stored(rating_id, item, attribute, rater, presentation, sample, value, retest_of is not None))

    rng = random.Random(35)
    story = [key for key, _, _ in items["story"]]
    questions = [a.name for a in study.task("story").attributes]
    for step in range(700):
        rater = rng.choice([*PEOPLE, *JUDGES])
        # the first 20 items again and again (revisions); later ones rarely (gaps); items 26-29 never
        item = rng.choice(story[:20]) if step < 600 else rng.choice(story[:26])
        attribute = rng.choice(questions if rater != "=eve" or step > 300 else questions[:1])  # a late column
        value: float | None = float(rng.randint(1, 5))
        sample, presentation, retest_of, status = 0, "", None, "ok"
        if rater in JUDGES:
            sample = rng.choice((0, 0, 1, 2))
            presentation = rng.choice(("", "original", "swapped"))  # two orders share a column
            if rng.random() < 0.15:
                value, status = None, "unparsed"  # a reply that did not parse
            elif rng.random() < 0.3 and value < 5:
                value += 0.5
        elif rng.random() < 0.05:
            sample = 1  # a person's rating under another sample: never in force
        elif rng.random() < 0.05 and stored:
            retest_of = stored[-1].id  # a blind retest: never in force
        store(item, attribute, rater, value, sample=sample, presentation=presentation, retest_of=retest_of,
              parse_status=status)  # fmt: skip
        if rng.random() < 0.08:  # an undo: the rating before it is in force again
            undone = rng.choice(stored)
            study.retract_rating(undone.id)
            undone.retracted = True
    # two raters whose columns have one name ("j1:x:y"), the judge "j1:x" with the lower id first in an item
    store(story[3], "y", "j1:x", 2.0)
    store(story[3], "x:y", "j1", 4.0)
    store(story[5], "x:y", "j1", 1.0)
    for key, _, _ in items["title-fluency"][:2]:
        store(key, "fluency", "b,ob", float(rng.randint(1, 5)))
    return study, stored, rater_ids, items


def _expected(
    stored: list[Stored],
    rater_ids: dict[str, int],
    items: dict[str, list[tuple[int, str, str | None]]],
    task: str | None,
    safe: bool,
    separator: str,
) -> bytes:
    """The wide table from the record: per item, the newest stored rating of each (question, rater, presentation,
    sample) not undone, not a retest, a person's only under sample 0; a column per rater:question[:sample] in the
    order of its first rating (items in task and import order, then question, rater id, presentation, sample);
    a cell the first such rating of its column in that order; then written as CSV by hand."""
    humans = set(PEOPLE)
    newest: dict[tuple[int, str, str, str, int], Stored] = {}
    for s in stored:
        if s.retracted or s.retest or (s.rater in humans and s.sample != 0):
            continue
        group = (s.item, s.attribute, s.rater, s.presentation, s.sample)
        if group not in newest or s.id > newest[group].id:
            newest[group] = s
    rows = [(name, key, item_id, system) for name in sorted(items) if task in (None, name)
            for key, item_id, system in items[name]]  # fmt: skip
    columns: list[str] = []
    cells: dict[tuple[int, str], float | None] = {}
    for _, key, _, _ in rows:
        ratings = sorted(
            (s for s in newest.values() if s.item == key),
            key=lambda s: (s.attribute, rater_ids[s.rater], s.presentation, s.sample),
        )
        for s in ratings:
            column = f"{s.rater}:{s.attribute}" + (f":{s.sample}" if s.sample else "")
            if column not in columns:
                columns.append(column)
            cells.setdefault((key, column), s.value)

    def text(cell: str) -> str:
        if safe and cell.startswith(("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")):
            try:
                float(cell)
            except ValueError:
                cell = "'" + cell
        if any(c in cell for c in (separator, '"', "\n", "\r")):
            cell = '"' + cell.replace('"', '""') + '"'
        return cell

    header = ["id", *(["task"] if task is None else []), "system", *columns]
    lines = [separator.join(text(h) for h in header)]
    for name, key, item_id, system in rows:
        line = [text(item_id), *([text(name)] if task is None else []), "" if system is None else text(system)]
        for column in columns:
            value = cells.get((key, column))
            line.append("" if value is None else repr(value))
        lines.append(separator.join(line))
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize(
    ("task", "ext", "raw"),
    [(None, "csv", False), (None, "tsv", True), ("story", "csv", False), ("title-fluency", "csv", True)],
)
def test_the_cells_are_those_of_the_record(tmp_path, cli, monkeypatch, task, ext, raw):
    # several batches of items, and the cells read by several statements side by side
    monkeypatch.setattr("tui_rater.store.wide_export.BATCH_ITEMS", 7)
    monkeypatch.setattr("tui_rater.store.wide_export.COLUMNS_PER_QUERY", 5, raising=False)
    study, stored, rater_ids, items = _build(tmp_path)
    out = tmp_path / f"w.{ext}"
    args = ["export", "--what", "wide", "--out", out, "--db", study.path]
    code, said, err = cli(*args, *(["--task", task] if task else []), *(["--raw-csv"] if raw else []))
    assert code == 0, err
    expected = _expected(stored, rater_ids, items, task, not raw, "\t" if ext == "tsv" else ",")
    if task != "title-fluency":  # the study has what the test is for
        assert expected.count(b"j1:x:y") == 1
        assert b"'=eve:" in expected or raw
    assert out.read_bytes() == expected
    assert f"wrote {len(expected.splitlines()) - 1} rows of wide" in said


def test_a_study_without_ratings_writes_the_items(tmp_path, cli):
    study = Study.open(tmp_path / "s.db")
    study.add_items(study.task("story"), [{"id": "=a", "system": None, "prompt": "P", "story": "S"}])
    code, _, err = cli("export", "--what", "wide", "--out", tmp_path / "w.csv", "--db", study.path)
    assert code == 0, err
    assert (tmp_path / "w.csv").read_bytes() == b"id,task,system\n'=a,story,\n"
