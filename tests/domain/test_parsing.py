"""parse_score on what real judges write: the paper's Tables 7-10 and HANNA's LLM answers."""

from __future__ import annotations

import re

import pytest

from tests.support import hanna_explanations, paper_excerpt
from tui_rater import parse_score
from tui_rater.domain.parsing import ParseResult, parse_choice

CASES = [
    ("I would rate the grammar of this story as a 3.", 3),
    ("On a scale of 1-5, with 1 being the lowest, I would rate the grammatical correctness of the text as a 5.", 5),
    ("4/5", 4),
    ("I'd give it 4 out of 5 because the plot is thin.", 4),
    ("Score: 85", None),  # off a 1-5 scale
    ("**4**", 4),
    ("4.5", 4.5),
    ("2 — The story only has a weak relationship with the prompt.", 2),
    ("Title 1 and title 2 mean the same, so I strongly agree: 5", 5),
    ("I would rate it a four.", 4),
    ("Rating: 3\nThe sentences flow.", 3),
    ("The story has 2 characters and 3 scenes.", None),
]


@pytest.mark.parametrize("text,expected", CASES)
def test_reads_what_judges_write(text, expected):
    result = parse_score(text)
    assert result.value == expected
    assert (result.failure is None) == (expected is not None)


def test_failure_types():
    assert parse_score("Score: 85").failure == "out_of_range"
    assert parse_score("Score: 85", scale=(0, 100)).value == 85
    assert parse_score("I am an AI and I do not have the ability to experience enjoyment").failure == "refusal"
    assert parse_score("The prose is vivid.").failure == "no_number"
    assert parse_score("").failure == "no_number"
    assert parse_score("I would rate the grammar a 4. I would rate the relevance a 2.").failure == "ambiguous"
    assert parse_score("The story has 2 characters and 3 scenes.").failure == "ambiguous"


def test_half_points_kept_as_the_paper_did():
    assert parse_score("I would rate it 3.5 out of 5").value == 3.5


def test_explicit_score_replies():
    assert parse_score("Reason: the plot wanders.\nScore: 62", scale=(0, 100)).value == 62
    assert parse_score(" 70", scale=(0, 100)).value == 70
    assert parse_score("Score: 1-100\n55", scale=(0, 100)).value == 55


def test_choice_replies():
    keys = ("A", "B", "C")
    assert parse_choice(" (B) Storyline-2", keys).value == 1
    assert parse_choice(" A", keys).value == 0
    assert parse_choice("Reason: both are weak, (A) rambles and (B) stops.\nAnswer: C", keys).value == 2
    assert parse_choice("I cannot decide.", keys).failure in ("refusal", "no_number")


def _paper_chatgpt_replies():
    replies = []
    for line in paper_excerpt("chiang_lee_2023").splitlines():
        m = re.match(r"^(Grammar|Cohesive|Likable|Relevant) ChatGPT (.*)$", line)
        if m:
            replies.append(m.group(2))
    return replies


def test_tables_7_to_10_chatgpt_replies():
    replies = _paper_chatgpt_replies()
    assert len(replies) == 16
    # read by hand from Tables 7-10 (stories 1-4, attributes in order G, C, L, R)
    expected = [4, 5, 2, 5, 3, 2, 1, 1, 5, 4, 3, 5, 3, 2, 1, 1]
    assert [parse_score(r).value for r in replies] == expected


def test_the_papers_rule_misreads_what_ours_reads():
    # App. D.2.1: remove "1-5", take the first number -> 1 for this Table 9 reply.
    reply = next(r for r in _paper_chatgpt_replies() if r.startswith("The text of the story fragment appears"))
    paper_rule = re.search(r"\d+(\.\d+)?", reply.replace("1-5", "").replace("out of 5", "").replace("/5", ""))
    assert float(paper_rule.group()) == 1
    assert parse_score(reply).value == 5


def test_hanna_user_study_llm_answers():
    # every answer starts with its rating ("2 — ...", " 3 Coherence", "I would rate this story a 4 ..."),
    # often followed by other numbers (scene counts, "1-5") that must not be read instead
    answers = hanna_explanations()
    assert len(answers) == 92
    for text in answers:
        lead = re.match(r"\s*(\d)\b", text) or re.match(r"\s*I would rate (?:this|the) story a (\d)", text)
        assert lead, text[:120]
        assert parse_score(text).value == float(lead.group(1)), text[:120]


# Issue 13, item 6: what a real model's replies were misread as.
ISSUE_13 = [
    ("1. Grammar: a few typos.\n2. Flow: …\nOverall score: 4", (1, 5), 4.0, None),  # was 1
    ("P = 0.7", (0, 100), None, "ambiguous"),  # was 0.7
    ("I would rate this a 4,5.", (1, 5), None, "ambiguous"),  # was 4
    ("3 or 4 -- leaning towards 4.", (1, 5), None, "ambiguous"),  # was 3
    ("1-5: 3", (1, 5), 3.0, None),  # App. D.2.1 strips a bare "1-5"; was 1
    ("3,000 years ago, the kingdom of Aram fell.", (1, 5), None, "ambiguous"),  # was 3
    ("The 2004/05 season was the club's best.", (1, 5), None, "ambiguous"),  # was 5
    ("10 minutes later, Jack returned.", (0, 100), None, "ambiguous"),  # was 10
]


@pytest.mark.parametrize("text,scale,value,failure", ISSUE_13)
def test_issue_13_misreadings(text, scale, value, failure):
    assert parse_score(text, scale) == ParseResult(value, failure)


def test_the_article_a_is_not_option_a():
    # issue 13: read as A, which pushes errors onto the first position (position bias)
    assert parse_choice("A close call, but Storyline-2 is tighter. Answer: B").value == 1
    assert parse_choice(" A tough choice. Both storylines have problems.").failure == "no_number"
    assert parse_choice(" A because Storyline-1 keeps the tone.").value == 0


def test_options_read_by_their_names():
    names = ("Storyline-1", "Storyline-2", "Both storylines are equally well-written and consistent.")
    assert parse_choice(" Storyline-2", names=names).value == 1
    assert parse_choice("Reason: Storyline-1 drifts.\nAnswer: Storyline-2", names=names).value == 1
    assert parse_choice("Answer: (A) Storyline-2", names=names).failure == "ambiguous"
    assert parse_choice(" Storyline-2 is better.", names=names).value == 1  # the whole reply is the verdict
    assert parse_choice(" Storyline-2 is better, but Storyline-1 is bolder.", names=names).failure == "ambiguous"
    assert parse_choice(" Storyline-2").failure == "ambiguous"  # without names: a number, no option


def test_stars_decimals_and_other_scales():
    assert parse_score("★★★★☆").value == 4
    assert parse_score("★★★★☆", (0, 100)).failure == "out_of_range"  # issue 13 item 7: stars are 1-5
    assert parse_score("4,5/5").value == 4.5  # a decimal comma that is clearly one
    assert parse_score("Score: 8/10").failure == "out_of_range"
    assert parse_score("Rating: 3/4").failure == "ambiguous"


# issue 26, item 5: real small-model replies that were stored as ok with the wrong value
MISREADS = [
    ("1: Probably not relevant\n2: Somewhat relevant\n3: Relevant\n4: Very relevant\n5: Highly relevant", (1, 5)),
    ("It picks up at the end of the story fragment (2) and continues the plot.", (1, 5)),
    ('I agree with the previous rating of "1" because the story ignores the prompt.', (1, 5)),
    ("3.10: The story follows the prompt closely.", (1, 5)),
]


@pytest.mark.parametrize("text,scale", MISREADS)
def test_what_is_no_answer_is_a_typed_failure(text, scale):
    result = parse_score(text, scale)
    assert result.value is None and result.failure in ("ambiguous", "no_number")


@pytest.mark.parametrize(
    "text,scale,expected",
    [
        ("Score: 4/5 -- wait, on reflection, 3/5.", (1, 5), 3),
        ("I'd rate it 4 -- no, 3.", (1, 5), 3),
        ("Score: 85/100 -- hmm, maybe 80.", (0, 100), 80),
        ("Rating: 2. Actually, make that 4.", (1, 5), 4),
        ("Score: 4. Actually, the ending is weak.", (1, 5), 4),  # nothing after the turn corrects the 4
        ("Score: 4 -- wait, maybe 3 or 4.", (1, 5), None),  # the correction itself hedges
    ],
)
def test_a_judge_that_corrects_itself_is_read_as_its_correction(text, scale, expected):
    result = parse_score(text, scale)
    assert result.value == expected
    assert (result.failure is None) == (expected is not None)


def test_replies_a_person_reads_at_once():
    assert parse_score("About 65%.", (0, 100)).value == 65
    better = ("Storyline-1", "Storyline-2", "Both storylines are equally well-written and consistent.")
    worse = ("Storyline-1", "Storyline-2", "Both storylines are equally poor-written and inconsistent.")
    assert parse_choice("Storyline-1 wins.", names=better).value == 0
    assert parse_choice("A is better than B", names=better).value == 0
    assert parse_choice("B is clearly better than A.", names=better).value == 1
    assert parse_choice("Storyline-2 is worse.", names=worse).value == 1  # "which is worse": B
    assert parse_choice("Storyline-1 wins.", names=worse).failure == "ambiguous"  # answers another question
    assert parse_choice("A is better than B").failure == "ambiguous"  # without names the question is unknown


def test_a_whole_point_scale_takes_whole_and_half_points_only():
    from tui_rater.domain import protocols
    from tui_rater.domain.tasks import STORY as task

    attribute = task.attributes[0]
    protocol = protocols.for_mode(task, attribute, "text")
    assert protocol.read_reply("Rating: 3.5", attribute, "plain").value == 3.5
    assert protocol.read_reply("Rating: 3.1", attribute, "plain").status == "out_of_range"
