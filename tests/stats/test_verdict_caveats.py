"""The verdict does not mislead (issue 22, item 10): every verdict row says when the humans' own agreement is
too low for the test to mean much (Krippendorff's α below 0.667) and when ω has not settled as items
arrived (the convergence curve), in the text tables, the JSON records and beside the verdict in HTML."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from tests.stats.simulated import likert_study
from tests.support import run_cli_process
from tui_rater.stats.convergence import AltTestPoint
from tui_rater.stats.sections.converging import settled
from tui_rater.stats.sections.verdict import LOW_HUMAN_ALPHA
from tui_rater.store.study import Study


def _records(path: Path, task: str) -> list[dict]:
    out = run_cli_process("report", "--db", path, "--format", "json", timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["tasks"][task]


def _human_alpha(path: Path, attribute: str) -> float:
    """The humans' ordinal α on every item, from the study file by hand (raters x items, NaN where unrated)."""
    study = Study.open(path)
    rows = study._db.conn.execute(
        "SELECT ra.name, r.item_key, r.value FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
        "WHERE ra.kind = 'human' AND r.attribute = ? AND r.value IS NOT NULL",
        [attribute],
    ).fetchall()
    study.close()
    raters = sorted({name for name, _, _ in rows})
    items = sorted({key for _, key, _ in rows})
    m = np.full((len(raters), len(items)), np.nan)
    for name, key, value in rows:
        m[raters.index(name), items.index(key)] = value
    return float(krippendorff.alpha(reliability_data=m, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]))


def test_every_demo_verdict_says_the_humans_barely_agree(demo):
    records = _records(demo, "hanna")
    verdicts = {r["attribute"]: r for r in records if r["table"] == "verdict" and r["statistic"] == "verdict"}
    assert sum(r["value"] == 1 for r in verdicts.values()) == 4  # the four "yes: may replace" of the issue
    caveats = {
        r["attribute"]: r for r in records if r["table"] == "verdict" and r["statistic"] == "caveat_human_agreement"
    }
    assert set(caveats) == set(verdicts) and len(caveats) == 6
    taus = {r["attribute"]: r["value"] for r in records if r["table"] == "table2" and r["statistic"] == "kendall_tau"}
    for attribute, caveat in caveats.items():
        assert caveat["value"] == pytest.approx(_human_alpha(demo, attribute))
        assert caveat["value"] < 0.2 and caveat["n"] == 96
        assert f"the humans' own α is {caveat['value']:.2f}, below {LOW_HUMAN_ALPHA}" in caveat["note"]
        assert (
            "Krippendorff 2004" in caveat["note"]
            and f"its τ with the humans is {taus[attribute]:.2f}" in caveat["note"]
        )


def test_a_verdict_that_flipped_as_items_arrived_says_it_has_not_settled(demo):
    records = _records(demo, "hanna")
    settled_ = {r["attribute"]: r for r in records if r["table"] == "verdict" and r["statistic"] == "verdict_settled"}
    curve = [
        r
        for r in records
        if (r["table"], r["attribute"], r["statistic"]) == ("verdict_convergence", "relevance", "verdict")
    ]
    last_third = {r["value"] for r in curve if r["n"] >= 2 * 96 / 3}
    assert last_third == {0.0, 1.0}  # relevance: ω 1 → 0 over the last items
    assert settled_["relevance"]["value"] == 0 and "has not settled" in settled_["relevance"]["note"]
    for attribute in ("coherence", "empathy", "surprise", "engagement", "complexity"):
        assert settled_[attribute]["value"] == 1 and settled_[attribute]["note"] == ""
    text = run_cli_process("report", "--db", demo, env=None).stdout
    assert "⚠ the verdict has not settled" in text and "⚠ the humans' own α is 0.07" in text


def test_raters_who_agree_and_a_steady_verdict_carry_no_caveat(tmp_path):
    sim = likert_study(tmp_path / "agree.db")  # 4 humans close to a true score: α 0.73 and 0.83
    records = _records(sim.path, "story")
    caveats = [r for r in records if r["table"] == "verdict" and r["statistic"] == "caveat_human_agreement"]
    assert caveats and all(r["value"] > LOW_HUMAN_ALPHA and r["note"] == "" for r in caveats)
    copycat = [r for r in records if r["statistic"] == "verdict_settled" and r["evaluator"] == "copycat"]
    assert copycat and all(r["value"] == 1 and r["note"] == "" for r in copycat)
    markdown = run_cli_process("report", "--db", sim.path, "--format", "markdown").stdout
    assert "| caveats |" in markdown and "⚠ the humans' own" not in markdown


def _point(n: int, passed: bool | None, omega: float | None = None) -> AltTestPoint:
    return AltTestPoint(n, omega if omega is not None else float(bool(passed)), 0.5, passed)


def test_settled_reads_the_last_third_of_the_curve():
    early_flips = [_point(30, False), _point(45, True), _point(55, False)] + [_point(n, True) for n in (66, 78, 90)]
    assert settled(early_flips) == (1.0, "")  # what happened before ⅔ of the items does not count
    value, note = settled([_point(n, True) for n in (30, 66, 78)] + [_point(90, False, 0.33)])
    assert value == 0.0 and "ω at n 66: 1.00 → 78: 1.00 → 90: 0.33" in note
    value, note = settled([_point(30, True), _point(40, True)])  # two points from ⅔ of 40 items on
    assert value is None and "cannot yet be seen to settle" in note
    assert settled([]) == (None, "")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.flow: list[tuple[str, str]] = []  # (the element, its text) in page order
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.open.append(tag if not dict(attrs).get("class") else f"{tag}.{dict(attrs)['class']}")

    def handle_endtag(self, tag):
        self.open.pop()

    def handle_data(self, data):
        self.flow.append((" ".join(self.open), data))


def test_the_html_page_puts_the_caveats_beside_the_verdict(demo, tmp_path):
    out = run_cli_process("report", "--db", demo, "--out", tmp_path / "r.html", timeout=300)
    assert out.returncode == 0, out.stderr
    page = _Page()
    page.feed((tmp_path / "r.html").read_text(encoding="utf-8"))
    texts = [text for _, text in page.flow]
    verdict_table = next(i for i, t in enumerate(texts) if t.startswith("Can the judge replace the humans?"))
    next_part = texts.index("System scores, bias-corrected")
    between = page.flow[verdict_table:next_part]
    boxed = " ".join(text for where, text in between if "div.caveats" in where)
    assert boxed.count("below 0.667 (Krippendorff 2004") == 6 and boxed.count("has not settled") == 1
    assert "relevance · hanna-mistral-7b-p1" in boxed
