"""A protocol from a fourth paper is one new class plus its tests (CONTRIBUTING.md walks through it).

MT-Bench's single-answer grading (Zheng et al. 2023) asks for a 1-10 rating written as "[[7]]". Nothing
outside this file changes: the judge, reparse and the report ask the protocol.
"""

from __future__ import annotations

import re
from typing import ClassVar

from tui_rater.domain import protocols
from tui_rater.domain.decoding import Decoding
from tui_rater.domain.parsing import ParseResult
from tui_rater.domain.protocols import EvaluationProtocol, Level
from tui_rater.domain.questions import Attribute
from tui_rater.domain.tasks import task_from_definition
from tui_rater.judge.spec import JudgeSpec
from tui_rater.service.judging import judge_study
from tui_rater.service.reparse import reparse
from tui_rater.service.reports import build_reports
from tui_rater.store.study import Study


class BracketRating(EvaluationProtocol):
    name: ClassVar[str] = "bracket-rating"
    title: ClassVar[str] = "single-answer grading, [[rating]] (Zheng et al. 2023)"
    level: ClassVar[Level] = Level.ORDINAL
    scale_kinds: ClassVar[tuple[str, ...]] = ("likert",)

    def parse(self, text: str, attribute: Attribute, variant: str) -> ParseResult:
        found = {float(m) for m in re.findall(r"\[\[(\d+(?:\.\d+)?)\]\]", text)}
        if len(found) != 1:
            return ParseResult(None, "ambiguous" if found else "no_number")
        value = found.pop()
        return ParseResult(value) if attribute.scale.contains(value) else ParseResult(None, "out_of_range")


if "bracket-rating" not in protocols.names():
    protocols.register(BracketRating())

DEFINITION = {
    "name": "mt-bench",
    "instructions": "Please act as an impartial judge and evaluate the response.",
    "fields": ["question", "answer"],
    "attributes": [
        {
            "name": "rating",
            "question": 'Rate the response on a scale of 1 to 10 by strictly following this format: "[[rating]]".',
            "scale": {"kind": "likert", "low": 1, "high": 10},
            "protocol": "bracket-rating",
        }
    ],
}


def test_a_fourth_protocol_judged_reparsed_and_reported(tmp_path, deterministic_judge):
    study = Study.open(tmp_path / "mt.db")
    task = task_from_definition(DEFINITION)
    study.add_items(task, [{"id": f"q{i}", "question": f"Q{i}?", "answer": f"A{i}."} for i in range(6)])
    attribute = study.task("mt-bench").attribute("rating")
    assert protocols.of(attribute).name == "bracket-rating"
    assert protocols.of(attribute).read_reply("Rating: [[7]]", attribute, "plain").value == 7.0
    assert protocols.of(attribute).read_reply("[[7]] or [[8]]", attribute, "plain").status == "ambiguous"
    human = study.human("expert")
    for item, value in zip(study.items("mt-bench"), (3, 7, 9, 2, 8, 5)):
        study.add_rating(item.key, "rating", human.id, value)
    run = judge_study(
        study, JudgeSpec("api:m", decoding=Decoding(samples=2), base_url=deterministic_judge).validate(), ["mt-bench"]
    )
    assert run.progress.done == 12 and run.progress.failed == 0
    # the loopback judge writes "Rating: 4", "5", ... -- none in brackets: typed failures, never a number
    statuses = {r[0] for r in study._db.conn.execute("SELECT parse_status FROM ratings WHERE job_id IS NOT NULL")}
    assert "ok" not in statuses and statuses <= {"no_number", "ambiguous", "refusal"}
    assert reparse(study).changed == 0
    records = build_reports(study, ["mt-bench"])["mt-bench"]
    assert any(r.table == "table1" and r.evaluator == "humans" for r in records)
