"""The protocol objects: what each asks, what it accepts, how it reads an answer -- one path for all."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tui_rater.domain import protocols
from tui_rater.domain.decoding import Decoding
from tui_rater.domain.errors import UserError
from tui_rater.domain.protocols import ORIGINAL, SWAPPED, Level
from tui_rater.domain.protocols.base import tempered
from tui_rater.domain.tasks import BUILTIN_TASKS, STORY, STORY_EXPLICIT, STORY_PAIRWISE, Scale, task_from_definition

LIKABILITY = STORY.attribute("likability")
OVERALL = STORY_EXPLICIT.attribute("overall")
PREFERENCE = STORY_PAIRWISE.attribute("preference")


def test_every_builtin_question_has_a_protocol_with_a_level():
    levels = {
        (task.name, protocols.of(a).name, protocols.of(a).level)
        for task in BUILTIN_TASKS.values()
        for a in task.attributes
    }
    assert ("story", "likert", Level.ORDINAL) in levels
    assert ("story-explicit", "explicit", Level.INTERVAL) in levels
    assert ("story-pairwise", "pairwise", Level.NOMINAL) in levels


def test_grammar_follows_the_answer_space_v4_stars():
    explicit = protocols.of(OVERALL)
    assert explicit.grammar(OVERALL, "v1") == 'root ::= "100" | [1-9] [0-9] | [0-9]'
    # V4 answers in 1-5 stars: its grammar must allow only 1-5, or constrained V4 can never succeed
    assert explicit.grammar(OVERALL, "v4") == 'root ::= "1" | "2" | "3" | "4" | "5"'
    assert explicit.json_schema(OVERALL, "v4")["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    assert protocols.of(LIKABILITY).grammar(LIKABILITY, "plain") == 'root ::= "1" | "2" | "3" | "4" | "5"'
    assert protocols.of(PREFERENCE).grammar(PREFERENCE, "v1") == 'root ::= "A" | "B" | "C"'


def test_stars_are_mapped_to_0_100_in_one_place():
    explicit = protocols.of(OVERALL)
    reading = explicit.read_reply("I give it 4 stars.", OVERALL, "v4")
    assert reading.value == 75.0 and reading.details["stars"] == 4
    assert explicit.read_reply("Score: 80", OVERALL, "v1").value == 80.0


@pytest.mark.parametrize(
    "variant,presentation,answer,expected",
    [
        ("v1", ORIGINAL, "(A)", 0.0),  # story_a shown first and chosen
        ("v1", SWAPPED, "(A)", 1.0),  # story_b shown first: "A" means story_b
        ("v3", ORIGINAL, "(A)", 1.0),  # V3: "(A) is worse" -> story_b is better
        ("v3", SWAPPED, "(A)", 0.0),
        ("v1", SWAPPED, "(C)", 2.0),  # a tie is a tie in both orders
    ],
)
def test_pairwise_canonical_in_the_items_terms(variant, presentation, answer, expected):
    reading = protocols.of(PREFERENCE).read_reply(answer, PREFERENCE, variant, presentation)
    assert reading.value == expected and reading.details["answered"] == answer.strip("()")


def test_pairwise_swaps_the_compared_fields():
    pairwise = protocols.of(PREFERENCE)
    fields = {"prompt": "P", "story_a": "FIRST TEXT", "story_b": "SECOND TEXT"}
    original = pairwise.render(STORY_PAIRWISE, PREFERENCE, fields, "v1", ORIGINAL).text
    swapped = pairwise.render(STORY_PAIRWISE, PREFERENCE, fields, "v1", SWAPPED).text
    assert original.index("FIRST TEXT") < original.index("SECOND TEXT")
    assert swapped.index("SECOND TEXT") < swapped.index("FIRST TEXT")
    assert pairwise.presentations(PREFERENCE) == (ORIGINAL, SWAPPED)


def test_reason_first_replies_cut_short_are_truncated_not_read():
    explicit = protocols.of(OVERALL)
    cut = "Reason: The storyline starts well, 3 characters meet, and by paragraph 2 the"
    assert explicit.read_reply(cut, OVERALL, "v5", truncated=True).status == "truncated"
    # an answer-first reply keeps its value, marked
    reading = protocols.of(LIKABILITY).read_reply("4. The story is", LIKABILITY, "plain", truncated=True)
    assert reading.value == 4.0 and reading.details["truncated"] is True


def test_distribution_low_mass_is_a_typed_failure():
    likert = protocols.of(LIKABILITY)
    noise = {"1": 1e-5, "2": 2e-5, "3": 1e-5, "4": 0.0, "5": 0.0}
    reading = likert.read_distribution(
        noise, LIKABILITY, "plain", decoding=Decoding(samples=3, temperature=1.0, top_p=0.9, seed=1), min_mass=0.5
    )
    assert [s.status for s in reading.samples] == ["low_mass"] * 3
    assert reading.details["mass"] == pytest.approx(4e-5)
    ok = likert.read_distribution(
        {"1": 0.1, "2": 0.1, "3": 0.2, "4": 0.4, "5": 0.0},
        LIKABILITY,
        "plain",
        decoding=Decoding(samples=2000, temperature=1.0, top_p=1.0, seed=0),
        min_mass=0.5,
    )
    values = [s.value for s in ok.samples]
    assert ok.details["mass"] == pytest.approx(0.8)
    assert ok.details["distribution"]["4"] == pytest.approx(0.5)
    assert ok.details["expected"] == pytest.approx((0.1 + 0.2 + 0.6 + 1.6) / 0.8)
    assert 5.0 not in values and np.mean(values) == pytest.approx(ok.details["expected"], abs=0.08)


def test_probabilities_adding_up_to_more_than_one_are_no_distribution():
    """Options' next-token probabilities add up to at most 1. More is no distribution (logits sent as logprobs, a
    token counted under two options): every sample a typed failure, never a renormalised draw."""
    likert = protocols.of(LIKABILITY)
    args = dict(decoding=Decoding(samples=3, temperature=1.0, top_p=0.9, seed=1), min_mass=0.5)
    reading = likert.read_distribution({"1": 0.2, "2": 0.3, "3": 0.5, "4": 0.5, "5": 0.3}, LIKABILITY, "plain", **args)
    assert [s.status for s in reading.samples] == ["not_probabilities"] * 3
    assert [s.value for s in reading.samples] == [None] * 3 and "distribution" not in reading.details
    assert reading.details["mass"] == pytest.approx(1.8)
    # a softmax's rounding (a mass of 1 + 1e-7) is still a distribution
    rounded = likert.read_distribution({"1": 0.5000001, "2": 0.5}, LIKABILITY, "plain", **args)
    assert {s.status for s in rounded.samples} == {"ok"}


def test_distribution_of_a_pair_is_canonical_per_draw():
    pairwise = protocols.of(PREFERENCE)
    reading = pairwise.read_distribution(
        {"A": 0.9, "B": 0.0, "C": 0.0},
        PREFERENCE,
        "v1",
        SWAPPED,
        decoding=Decoding(samples=4, temperature=1.0, top_p=0.9, seed=3),
        min_mass=0.5,
    )
    assert [s.value for s in reading.samples] == [1.0] * 4  # "A" in the swapped order is story_b
    assert "expected" not in reading.details  # a nominal answer has no expected value


def test_same_seed_same_draws_and_independent_seeds_differ():
    likert = protocols.of(LIKABILITY)
    p = {"1": 0.2, "2": 0.2, "3": 0.2, "4": 0.2, "5": 0.2}
    decoding = Decoding(samples=50, temperature=1.0, top_p=1.0)

    def draws(seed: int) -> list[float | None]:
        reading = likert.read_distribution(p, LIKABILITY, "plain", decoding=replace(decoding, seed=seed), min_mass=0.5)
        return [s.value for s in reading.samples]

    a, b, c = draws(7), draws(7), draws(8)
    assert a == b and a != c
    seeds = {protocols.derive_seed("judge", "story", "s1", attr, "", 0) for attr in STORY.attribute_names}
    assert len(seeds) == 4  # each question its own stream


def test_temperature_and_nucleus():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    assert list(tempered(p, 0, 1.0)) == [1, 0, 0, 0]
    q = tempered(p, 1.0, 0.9)  # nucleus keeps {0.5, 0.3, 0.15}
    assert q[3] == 0 and q.sum() == pytest.approx(1) and q[0] == pytest.approx(0.5 / 0.95)
    hot = tempered(p, 2.0, 1.0)  # p^(1/T), renormalised: flatter
    assert hot == pytest.approx(np.sqrt(p) / np.sqrt(p).sum())
    cold = tempered(p, 0.5, 0.9)  # p^2 normalised: 0.685, 0.247, ...; the nucleus reaching 0.9 is {0, 1}
    assert cold == pytest.approx(np.array([0.25, 0.09, 0, 0]) / 0.34)


def test_implicit_score_without_yes_or_no_is_a_typed_failure():
    implicit = protocols.get("implicit")
    reading = implicit.read_top_tokens([("The", 0.4), ("It", 0.2), (" story", 0.1), ("A", 0.05), ("\n", 0.05)], OVERALL)
    assert reading.status == "no_answer_token" and reading.value is None
    ok = implicit.read_top_tokens([("Yes", 0.5), (" yes", 0.1), ("No", 0.25), ("NO", 0.05), ("Maybe", 0.1)], OVERALL)
    assert ok.value == pytest.approx(100 * max(0.6, 1 - 0.3))
    # probabilities that add up to more than 1 are none; a rounding overshoot stays on the 0-100 scale
    assert implicit.read_top_tokens([("Yes", 0.9), ("No", 0.6)], OVERALL).status == "not_probabilities"
    rounded = implicit.read_top_tokens([("Yes", 1.0005)], OVERALL)
    assert (rounded.value, rounded.status) == (100.0, "ok")


def test_modes_and_variants_are_checked_with_one_sentence():
    with pytest.raises(UserError, match="does not apply"):
        protocols.for_mode(STORY_EXPLICIT, OVERALL, "distribution")
    with pytest.raises(UserError, match="does not apply"):
        protocols.for_mode(STORY, LIKABILITY, "implicit")
    assert protocols.for_mode(STORY_EXPLICIT, OVERALL, "implicit").name == "implicit"
    with pytest.raises(UserError, match="variant 'v3' does not apply"):
        protocols.of(LIKABILITY).render(STORY, LIKABILITY, {"story": "s", "prompt": "p"}, "v3")


def test_votes_not_means_for_nominal_answers():
    pairwise = protocols.of(PREFERENCE)
    assert pairwise.aggregate([0, 0, 1, 2, 0]) == 0.0
    assert pairwise.aggregate([0, 1]) is None  # no majority: undefined, not 0.5
    assert protocols.of(LIKABILITY).aggregate([3, 4, 5]) == 4.0


def test_decoding_defaults_are_the_papers():
    base = protocols.Decoding()
    assert protocols.of(OVERALL).decoding("v1", base) == protocols.Decoding(1, 0.0, 0.9, 128)
    v5 = protocols.of(OVERALL).decoding("v5", base)
    assert (v5.samples, v5.temperature, v5.max_tokens) == (5, 1.0, 512)
    v4 = protocols.of(PREFERENCE).decoding("v4", base)
    assert (v4.samples, v4.max_tokens) == (5, 512)
    assert protocols.of(LIKABILITY).decoding("explain", base).max_tokens == 512


def test_human_keys_come_from_the_protocol():
    assert protocols.of(PREFERENCE).human_input(PREFERENCE).keys == ("a", "b", "t")
    assert protocols.of(LIKABILITY).human_input(LIKABILITY).keys == ("1", "2", "3", "4", "5")
    assert protocols.of(OVERALL).human_input(OVERALL).kind == "number"
    assert protocols.of(PREFERENCE).value_from_text(PREFERENCE, " b ") == 1.0


def _custom(attribute: dict) -> dict:
    return {"name": "custom", "fields": ["a", "b"], "attributes": [{"name": "q", "question": "Q?", **attribute}]}


def test_custom_tasks_name_their_protocol_and_are_checked_when_read():
    choice = task_from_definition(_custom({"scale": {"kind": "choice", "choices": ["x", "y"]}}))
    assert protocols.of(choice.attributes[0]).name == "choice"
    pair = task_from_definition(
        _custom(
            {
                "scale": {"kind": "choice", "choices": ["a", "b", "tie"]},
                "protocol": "pairwise",
                "params": {"first": "a", "second": "b"},
            }
        )
    )
    assert protocols.of(pair.attributes[0]).compared_fields(pair.attributes[0]) == ("a", "b")
    with pytest.raises(UserError, match="params first and second"):
        task_from_definition(_custom({"scale": {"kind": "choice", "choices": ["a", "b", "c"]}, "protocol": "pairwise"}))
    with pytest.raises(UserError, match="does not ask on a likert scale"):
        task_from_definition(_custom({"scale": {"kind": "likert"}, "protocol": "explicit"}))
    with pytest.raises(UserError, match="unknown protocol"):
        task_from_definition(_custom({"protocol": "astrology"}))


def test_a_continuous_scale_has_no_distribution():
    attribute = task_from_definition(_custom({"scale": {"kind": "continuous"}})).attributes[0]
    assert protocols.of(attribute).options(attribute, "plain") is None
    assert attribute.scale == Scale("continuous", 0, 100)


@pytest.mark.parametrize(
    ("task", "values", "margin", "spread", "disagrees", "share"),
    [
        (STORY, [1, 5, 3], 0, 4, True, 1.0),  # Likert 1-5: the range
        (STORY, [2, 3], 1, 1, False, 0.25),  # a range of 1 is not beyond a margin of 1
        (STORY, [2, 4], 1, 2, True, 0.5),
        (STORY, [3, 3, 3], 0, 0, False, 0.0),
        (STORY_EXPLICIT, [10, 35], 20, 25, True, 0.25),  # 0-100
        (STORY_EXPLICIT, [10, 35], 25, 25, False, 0.25),
        (STORY_PAIRWISE, [0, 2], 100, 1, True, 0.5),  # A and tie: a category has no distance, any two disagree
        (STORY_PAIRWISE, [1, 1, 0], 0, 1, True, 1 / 3),
        (STORY_PAIRWISE, [1, 1], 5, 0, False, 0.0),
    ],
)
def test_disagreement_is_the_protocols(task, values, margin, spread, disagrees, share):
    attribute = task.attributes[0]
    protocol = protocols.of(attribute)
    assert protocol.spread(attribute, values) == spread
    assert protocol.disagrees(attribute, values, margin) is disagrees
    assert protocol.spread_share(attribute, values) == pytest.approx(share)


def test_a_reply_cut_before_its_answer_is_complete_is_truncated():
    """Issue 26, item 6: "1" with room for one token may have been "10", "1.5" or "1-5 ...": never a valid 1."""
    likert, explicit = protocols.of(LIKABILITY), protocols.of(OVERALL)
    assert likert.read_reply("1", LIKABILITY, "plain", truncated=True).status == "truncated"
    assert likert.read_reply("I'd rate it 3", LIKABILITY, "plain", truncated=True).status == "truncated"  # "3 or 4"
    assert likert.read_reply("1", LIKABILITY, "plain").value == 1.0  # the same reply ended by the model: read
    assert likert.read_reply("Rating: 3. The plot", LIKABILITY, "plain", truncated=True).value == 3.0
    # a grammar's reply is complete when the grammar allows nothing longer
    assert likert.read_reply("3", LIKABILITY, "plain", truncated=True, constrained=True).value == 3.0
    assert explicit.read_reply("1", OVERALL, "v1", truncated=True, constrained=True).status == "truncated"
    assert explicit.read_reply("100", OVERALL, "v1", truncated=True, constrained=True).value == 100.0
    # a JSON reply is complete when it parses
    assert likert.read_reply('{"score": 4}', LIKABILITY, "plain", structured=True, truncated=True).value == 4.0
    assert likert.read_reply('{"score": 4', LIKABILITY, "plain", structured=True, truncated=True).status == "truncated"
    pairwise = protocols.of(PREFERENCE)
    assert pairwise.read_reply(" A", PREFERENCE, "v1", ORIGINAL, truncated=True).status == "truncated"


def test_the_mean_of_a_few_samples_is_numpys_to_the_last_bit():
    """The aggregate sums fewer than 8 samples in plain Python (the report aggregates every judge's samples of
    every item): the same bits as ``np.mean``, -0.0 and integers included, and numpy's own sum from 8 on."""
    import random
    import struct

    protocol = protocols.of(LIKABILITY)
    rng = random.Random(35)
    pool = (-0.0, 0.0, 0.5, 3, 1e16, 1e-300, 2 / 3, 7 / 3)
    for _ in range(20_000):
        values = [rng.choice(pool) if rng.random() < 0.5 else rng.uniform(-10, 10) for _ in range(rng.randint(1, 12))]
        found = protocol.aggregate(values)
        assert found is not None
        assert struct.pack("<d", found) == struct.pack("<d", float(np.mean(values))), values
    assert protocol.aggregate([float("nan"), None]) is None  # type: ignore[list-item]
