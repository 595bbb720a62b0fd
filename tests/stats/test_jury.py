"""Juries (``tui-rater jury``): values checked against pandas on the members' exported ratings, one row per member and
one for the jury in every table and the pane, the jury-vs-member test against scipy, forgetting a member, names."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sp

from tests.support import digest
from tui_rater.cli import main
from tui_rater.service.reports import built_reports
from tui_rater.stats.live import pane_data
from tui_rater.store.study import Study

TASK = """
[[task]]
name = "panel"
instructions = "Rate the reply."
fields = ["text"]

[[task.attributes]]
name = "quality"
question = "How good is it? (1-5)"
scale = { kind = "likert", low = 1, high = 5 }

[[task.attributes]]
name = "topic"
question = "Which topic?"
scale = { kind = "choice", choices = ["news", "sport", "other"] }
"""
ITEMS = 60
HUMANS = ("h1", "h2", "h3")
MEMBERS = ("j-a", "j-b", "j-c")
LATE = ("x58", "x59")  # j-c rates these only later (the jury follows)


def run(*args: object) -> int:
    return main([str(a) for a in args])


def _ratings(rng: np.random.Generator) -> list[dict[str, object]]:
    """3 people and 3 judges (3 samples each) on a 1-5 question and a 3-way choice, judges of unequal quality."""
    rows: list[dict[str, object]] = []
    noise = {"j-a": 0.6, "j-b": 1.0, "j-c": 1.4}
    for i in range(ITEMS):
        item = f"x{i}"
        truth, topic = float(rng.integers(1, 6)), int(rng.integers(0, 3))
        for human in HUMANS:
            rows.append({"item": item, "rater": human, "attribute": "quality", "sample": 0, "kind": "human",
                         "value": float(np.clip(round(truth + rng.normal(0, 0.7)), 1, 5))})  # fmt: skip
            given = topic if rng.random() < 0.8 else int(rng.integers(0, 3))
            rows.append({"item": item, "rater": human, "attribute": "topic", "sample": 0, "kind": "human",
                         "value": float(given)})  # fmt: skip
        for judge, sd in noise.items():
            for sample in range(3):
                value = float(np.clip(round(truth + rng.normal(0, sd)), 1, 5))
                rows.append({"item": item, "rater": judge, "attribute": "quality", "sample": sample, "kind": "llm",
                             "value": value})  # fmt: skip
                said = topic if rng.random() < 1 - sd / 3 else int(rng.integers(0, 3))
                rows.append({"item": item, "rater": judge, "attribute": "topic", "sample": sample, "kind": "llm",
                             "value": float(said)})  # fmt: skip
    return rows


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["item", "rater", "attribute", "sample", "kind", "value"])
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture
def panel(tmp_path: Path) -> tuple[Path, list[dict[str, object]]]:
    """A study of 60 items in 2 systems, with j-c's ratings of two items held back (``late``)."""
    task_file, items, db = tmp_path / "t.toml", tmp_path / "items.csv", tmp_path / "panel.db"
    task_file.write_text(TASK)
    items.write_text(
        "id,system,text\n" + "".join(f"x{i},{'sys-a' if i % 2 else 'sys-b'},Text {i}\n" for i in range(ITEMS))
    )
    assert run("import", items, "--task", "panel", "--task-file", task_file, "--db", db) == 0
    rows = _ratings(np.random.default_rng(11))
    now = [r for r in rows if not (r["rater"] == "j-c" and r["item"] in LATE)]
    assert run("import-ratings", _write(tmp_path / "r.csv", now), "--db", db) == 0
    late = [r for r in rows if r["rater"] == "j-c" and r["item"] in LATE]
    _write(tmp_path / "late.csv", late)
    return db, rows


def _vote_or_none(values: list[float]) -> float | None:
    counts = Counter(values).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return None
    return counts[0][0]


def _expected_jury(db: Path, tmp: Path, rule: str) -> pd.DataFrame:
    """The jury's value per (item, attribute) from the members' ratings exported by the CLI, in pandas."""
    out = tmp / f"export-{rule}.csv"
    assert run("export", "--what", "ratings", "--db", db, "--out", out) == 0
    frame = pd.read_csv(out)
    frame = frame[frame["rater"].isin(MEMBERS)]
    quality = frame[frame["attribute"] == "quality"].groupby(["item", "rater"])["value"].mean()
    topic = (
        frame[frame["attribute"] == "topic"].groupby(["item", "rater"])["value"].agg(lambda v: _vote_or_none(list(v)))
    )
    found = []
    for attribute, per_member in (("quality", quality), ("topic", topic)):
        wide = per_member.unstack("rater").reindex(columns=list(MEMBERS)).dropna()
        for item, row in wide.iterrows():
            values = [float(row[m]) for m in MEMBERS]
            if attribute == "topic" or rule == "vote":
                counts = Counter(values)
                top = max(counts.values())
                value = next(v for v in values if counts[v] == top)  # the first-named member's among the tied
            else:
                value = float(np.mean(values)) if rule == "mean" else float(np.median(values))
            found.append({"item": item, "attribute": attribute, "value": value})
    return pd.DataFrame(found)


def _report_json(db: Path, tmp: Path) -> list[dict]:
    out = tmp / "report.json"
    assert run("report", "--db", db, "--format", "json", "--out", out) == 0
    return json.loads(out.read_text())["tasks"]["panel"]


@pytest.mark.parametrize("rule", ["mean", "median", "vote"])
def test_jury_values_are_the_members_exported_ratings_combined(panel, tmp_path, rule):
    db, _ = panel
    assert run("jury", "trio", "--members", ",".join(MEMBERS), "--aggregate", rule, "--db", db) == 0
    expected = _expected_jury(db, tmp_path, rule)
    study = Study.open(db)
    report = built_reports(study, ["panel"])["panel"]
    ids = {item.key: item.id for item in study.items("panel")}
    got = report.frame.filter(report.frame["rater"] == "trio").to_pandas()
    got["item"] = got["item_key"].map(ids)
    merged = expected.merge(got[["item", "attribute", "value"]], on=["item", "attribute"], how="outer")
    assert len(merged) == len(expected) and merged["value_y"].notna().all()
    np.testing.assert_allclose(merged["value_x"], merged["value_y"])
    # and what the user reads: Table 1's mean of the jury per system, over these values
    records = _report_json(db, tmp_path)
    systems = {item.id: item.system for item in study.items("panel")}
    quality = expected[expected["attribute"] == "quality"].assign(system=lambda f: f["item"].map(systems))
    for system, values in quality.groupby("system")["value"]:
        mean = next(r for r in records if r["table"] == "table1" and r["evaluator"] == "trio"
                    and r["system"] == system and r["attribute"] == "quality" and r["statistic"] == "mean")  # fmt: skip
        assert mean["value"] == pytest.approx(values.mean()) and mean["n"] == len(values)


def test_every_table_the_verdict_ppi_convergence_and_the_pane_show_the_jury_beside_its_members(panel, tmp_path):
    db, _ = panel
    assert run("jury", "trio", "--members", ",".join(MEMBERS), "--db", db) == 0
    records = _report_json(db, tmp_path)
    with_member: dict[str, set[str]] = {}
    for r in records:
        for who in (r["evaluator"], r["evaluator_b"]):
            with_member.setdefault(r["table"], set()).add(who)
    member_tables = {t for t, who in with_member.items() if set(MEMBERS) <= who}
    assert {"verdict", "ppi", "ppi_convergence", "verdict_convergence", "table1", "judges"} <= member_tables
    # calibration covers judges with a distribution over the scale (the members here: 3 samples an item); a mean
    # jury has a score, not a distribution, so it has no row there
    missing = sorted(t for t in member_tables - {"calibration"} if "trio" not in with_member[t])
    assert not missing, f"tables with every member but no jury row: {missing}"
    verdicts = [r for r in records if r["table"] == "verdict" and r["statistic"] == "winning_rate"]
    assert {r["evaluator"] for r in verdicts} >= {*MEMBERS, "trio"}
    study = Study.open(db)
    pane = pane_data(study, "panel", {}, [])
    for attribute in pane.attributes:
        judges = [row.judge for row in attribute.rows]
        assert sorted(judges) == sorted([*MEMBERS, "trio"]), attribute.name


def test_the_jury_follows_new_member_ratings_without_being_rebuilt(panel, tmp_path):
    db, _ = panel
    assert run("jury", "trio", "--members", ",".join(MEMBERS), "--db", db) == 0
    study = Study.open(db)
    before = built_reports(study, ["panel"])["panel"].frame
    marker = study.change_marker()
    assert run("import-ratings", tmp_path / "late.csv", "--db", db) == 0
    after = built_reports(study, ["panel"])["panel"].frame

    def count(frame):
        return frame.filter((frame["rater"] == "trio") & (frame["attribute"] == "quality")).height

    assert count(after) == count(before) + len(LATE)
    assert study.change_marker() != marker  # the live pane recomputes


def _advantages(humans: dict[str, dict[str, float]], judge: dict[str, float], items: list[str]) -> np.ndarray:
    """Per item, the alt-test's W^f (Calderon et al. 2025, -RMSE alignment) averaged over the left-out humans,
    written here from the paper."""
    out = []
    for item in items:
        raters = [h for h in humans if item in humans[h]]
        wins = []
        for left in raters:
            others = np.array([humans[h][item] for h in raters if h != left])
            judged = -np.sqrt(np.mean((others - judge[item]) ** 2))
            own = -np.sqrt(np.mean((others - humans[left][item]) ** 2))
            wins.append(float(judged >= own - 1e-12))
        out.append(np.mean(wins))
    return np.array(out)


def test_the_jury_against_each_member_is_scipys_paired_t_test_on_the_alt_tests_per_item_scores(panel, tmp_path):
    from statsmodels.stats.multitest import multipletests

    db, rows = panel
    assert run("jury", "trio", "--members", ",".join(MEMBERS), "--aggregate", "mean", "--db", db) == 0
    frame = pd.DataFrame(
        [r for r in rows if r["attribute"] == "quality" and not (r["rater"] == "j-c" and r["item"] in LATE)]
    )
    per = frame.groupby(["rater", "item"])["value"].mean()
    humans = {h: per[h].to_dict() for h in HUMANS}
    members = {m: per[m].to_dict() for m in MEMBERS}
    items = sorted(set.intersection(*(set(members[m]) for m in MEMBERS)))
    jury = {i: float(np.mean([members[m][i] for m in MEMBERS])) for i in items}
    own = _advantages(humans, jury, items)
    records = _report_json(db, tmp_path)
    table = [r for r in records if r["table"] == "jury" and r["attribute"] == "quality"]
    pvalues = []
    for member in MEMBERS:
        theirs = _advantages(humans, members[member], items)
        expected = sp.ttest_rel(own, theirs, alternative="greater")
        row = next(r for r in table if r["statistic"] == "advantage_difference" and r["evaluator_b"] == member)
        assert row["p"] == pytest.approx(expected.pvalue, rel=1e-9)
        assert row["value"] == pytest.approx(float(np.mean(own - theirs)))
        assert row["n"] == len(items)
        pvalues.append(expected.pvalue)
    holm = multipletests(pvalues, method="holm")[1]
    for member, adjusted in zip(MEMBERS, holm):
        row = next(r for r in table if r["statistic"] == "advantage_difference" and r["evaluator_b"] == member)
        assert f"Holm-adjusted p = {adjusted:.3g}" in row["note"]
    best = next(r for r in table if r["statistic"] == "better_than_best_member")
    verdict = {
        (r["evaluator"], r["statistic"]): r["value"]
        for r in records
        if r["table"] == "verdict" and r["attribute"] == "quality" and r["system"] == "all"
    }
    expected_best = max(
        MEMBERS,
        key=lambda m: (verdict[(m, "winning_rate")], verdict[(m, "advantage_probability")], -MEMBERS.index(m)),
    )
    assert best["evaluator_b"] == expected_best
    assert best["p"] == pytest.approx(max(pvalues), rel=1e-9)
    assert best["value"] == float(max(pvalues) < 0.05)


def test_forgetting_a_member_is_refused_in_one_sentence_and_with_force_takes_the_jury(panel, capsys):
    db, _ = panel
    assert run("jury", "trio", "--members", ",".join(MEMBERS), "--db", db) == 0
    capsys.readouterr()
    before = digest(db)
    assert run("judges", "--forget", "j-b", "--yes", "--db", db) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "member of jury 'trio'" in err and "--force" in err
    assert digest(db) == before
    assert run("judges", "--forget", "j-b", "--yes", "--force", "--db", db) == 0
    assert "jury trio" in capsys.readouterr().out
    assert run("jury", "--list", "--format", "json", "--db", db) == 0
    assert json.loads(capsys.readouterr().out)["juries"] == []


def test_judges_lists_the_jury_with_its_members_identities_and_rule(panel, capsys):
    db, _ = panel
    assert run("jury", "trio", "--members", "j-a,j-b", "--aggregate", "median", "--task", "panel", "--db", db) == 0
    capsys.readouterr()
    assert run("judges", "--format", "json", "--db", db) == 0
    listed = {j["label"]: j for j in json.loads(capsys.readouterr().out)["judges"]}
    assert listed["trio"]["is_jury"] and not listed["j-a"]["is_jury"]
    rule = listed["trio"]["config"]["jury"]
    assert rule["aggregate"] == "median" and rule["task"] == "panel"
    assert [m["label"] for m in rule["members"]] == ["j-a", "j-b"]
    assert all(len(m["identity"]) == 64 for m in rule["members"])
    assert run("jury", "other", "--members", "j-a,j-c", "--aggregate", "median", "--db", db) == 0
    capsys.readouterr()
    assert run("jury", "--list", "--format", "json", "--db", db) == 0
    juries = json.loads(capsys.readouterr().out)["juries"]
    assert len({j["identity"] for j in juries}) == 2  # other members: another identity


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("trio", "--members", "j-a"), "at least 2 members"),
        (("trio", "--members", "j-a,j-a"), "named twice"),
        (("trio", "--members", "j-a,h1"), "'h1' is an annotator, not a judge; a jury's members are judges"),
        (("trio", "--members", "j-a,nobody"), "no judge 'nobody'"),
        (("trio", "--members", "j-a,j-b", "--aggregate", "distribution"), "no stored scale distributions"),
        (("bad\x1bname", "--members", "j-a,j-b"), "printable characters"),
        (("j-a", "--members", "j-b,j-c"), "already the name of a rater"),
    ],
)
def test_bad_juries_are_one_sentence_and_leave_the_study_as_it_was(panel, capsys, args, said):
    db, _ = panel
    before = digest(db)
    assert run("jury", *args, "--db", db) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and err.count("\n") == 0
    assert digest(db) == before


def test_a_jury_name_with_markup_is_shown_literally(panel, capsys, tmp_path):
    db, _ = panel
    name = "[bold red]jury[/]"
    assert run("jury", name, "--members", ",".join(MEMBERS), "--db", db) == 0
    capsys.readouterr()
    assert run("jury", "--list", "--db", db) == 0
    assert name in capsys.readouterr().out
    assert run("judges", "--db", db) == 0
    assert "[bold" in capsys.readouterr().out
    assert run("report", "--db", db, "--format", "table") == 0
    assert name in capsys.readouterr().out.replace("\n", "")
