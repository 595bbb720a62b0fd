"""Rebuild the excerpts in tests/data/ from the team's reference folder (../shared).

    python tests/data/make_excerpts.py [path/to/shared]

The paper-fidelity tests compare against these excerpts, so a fresh clone runs them; where
../shared is present the same tests also check that every excerpt is still verbatim in its
source (tests/support.py: paper_excerpt, hanna_* helpers).
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parents[2] / "shared"

CHIANG = "001_29096bd7282ac109.txt"
CHEN = "004_2ef064783dfcafc3.txt"
HEADER = {
    CHIANG: (
        "# Chiang & Lee (ACL 2023), 'Can Large Language Models Be an Alternative to Human Evaluation?'\n"
        "# https://aclanthology.org/2023.acl-long.870/ -- CC BY 4.0 (ACL Anthology); quoted with attribution.\n"
        "# Verbatim lines of the text in shared/seeds/{name}; each '@@' marks where a run of lines begins.\n"
        "# Used by tests/domain/test_prompts.py (App. D.2.2-D.2.3 queries, Sec. 4 questions) and\n"
        "# tests/domain/test_parsing.py (ChatGPT's replies in Tables 7-10). Rebuild: tests/data/make_excerpts.py\n"
    ),
    CHEN: (
        "# Chen et al. (2023), 'Exploring the Use of Large Language Models for Reference-Free Text Quality\n"
        "# Evaluation: An Empirical Study' (arXiv:2304.00723). The prompts only, quoted with attribution\n"
        "# for checking that ours are reproduced verbatim; the paper's own licence applies to them.\n"
        "# Verbatim lines of the text in shared/seeds/{name}; each '@@' marks where a run of lines begins.\n"
        "# Used by tests/domain/test_prompts.py. Rebuild: tests/data/make_excerpts.py\n"
    ),
}


def _index(lines: list[str], start: str, after: int = 0) -> int:
    return next(i for i in range(after, len(lines)) if lines[i].startswith(start))


def _runs_chiang(lines: list[str]) -> list[tuple[int, int]]:
    runs = []
    questions = next(
        i for i, line in enumerate(lines) if "How natural and fluent is the text of the news title?" in line
    )
    runs.append((questions, questions + 1))  # Sec. 4.1: the questions asked of the teachers (and the LLMs)
    for i, line in enumerate(lines):  # Tables 7-10: ChatGPT's answers, one line each
        if re.match(r"^(Grammar|Cohesive|Likable|Relevant) ChatGPT ", line):
            runs.append((i, i + 1))
    start = _index(lines, "D.2.2 Open-Ended Story Generation")
    runs.append((start, _index(lines, "Appendix E", start)))  # App. D.2.2-D.2.3: the exact queries
    return runs


def _runs_chen(lines: list[str]) -> list[tuple[int, int]]:
    explicit = _index(lines, "===== PROMPT FOR EXPLICIT SCORE =====")
    implicit = _index(lines, "===== PROMPT FOR IMPLICIT SCORE =====")
    pairwise = _index(lines, "===== PROMPT FOR PAIRWISE COMPARISON =====")
    appendix = _index(lines, "A Different Prompts for Explicit Score")
    return [
        (explicit, _index(lines, "Implicit Score Given", explicit)),
        (implicit, _index(lines, "Unfortunately, access", implicit)),
        (pairwise, _index(lines, "```", pairwise)),
        (appendix, _index(lines, "C An Explanation", appendix)),
    ]


def write_paper(name: str, out: Path, runs) -> None:
    lines = (SHARED / "seeds" / name).read_text(encoding="utf-8").split("\n")
    parts = [HEADER[name].format(name=name)]
    for start, end in runs(lines):
        parts.append(f"@@ lines {start + 1}-{end}\n" + "\n".join(lines[start:end]).rstrip("\n") + "\n")
    out.write_text("".join(parts), encoding="utf-8")


LEAD = re.compile(r"\s*(\d)\b|\s*I would rate (?:this|the) story a (\d)")


def write_hanna() -> None:
    source = SHARED / "data" / "hanna"
    with open(source / "user_study.csv", encoding="utf-8") as handle:
        explanations = list(dict.fromkeys(r["Input.explanation"] for r in csv.DictReader(handle)))
    with open(HERE / "hanna" / "user_study_explanations.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["Input.explanation"])
        writer.writerows([text] for text in explanations)
    (HERE / "hanna" / "LICENSE").write_bytes((source / "LICENSE").read_bytes())


if __name__ == "__main__":
    write_paper(CHIANG, HERE / "papers" / "chiang_lee_2023.txt", _runs_chiang)
    write_paper(CHEN, HERE / "papers" / "chen_2023.txt", _runs_chen)
    write_hanna()
