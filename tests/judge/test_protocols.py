"""Chen et al.'s protocols and SPA through the judge: generated GGUF, real server, loopback scripts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.judge.distributions import LlamaTruth, question
from tests.support import Script, judge, ok_body
from tui_rater.domain.decoding import Decoding
from tui_rater.judge.spec import JudgeSpec
from tui_rater.stats.report import ReportSettings, SpaSettings, build_report
from tui_rater.store import spa
from tui_rater.store.study import Study

PAIRS = [
    {
        "id": f"p{i}",
        "system": "gpt2 vs human",
        "prompt": f"Prompt {i}: a dragon learns to knit.",
        "story_a": f"A{i}. The dragon knitted a scarf.",
        "story_b": f"B{i}. The scarf caught fire.",
    }
    for i in range(3)
]
EXPLICIT = [
    {"id": f"e{i}", "system": s, "prompt": f"Prompt {i % 2}", "story": f"{s} storyline {i}."}
    for i, s in enumerate(["gpt2", "human", "gpt2", "human"])
]


@pytest.fixture
def pair_study(tmp_path):
    study = Study.open(tmp_path / "pairs.db")
    study.add_items(study.task("story-pairwise"), PAIRS)
    return study


def canonical(raw: str, presentation: str) -> float:
    """Chen et al.'s V1 answer (A: the first text shown, B: the second, C: a tie) in the item's terms:
    0 story_a, 1 story_b, 2 tie -- the swapped order shows story_b first."""
    first, second = (0.0, 1.0) if presentation == "original" else (1.0, 0.0)
    return {"A": first, "B": second, "C": 2.0}[raw.strip()]


def test_pairwise_both_orders_on_gguf(pair_study, tiny_gguf):
    _rater, _, rows = judge(
        pair_study,
        JudgeSpec(str(tiny_gguf), decoding=Decoding(samples=1, temperature=0.0), variant="v1", mode="constrained"),
        task="story-pairwise",
    )
    assert len(rows) == 3 * 2  # each pair in both orders
    orders = sorted(r["presentation"] for r in rows)
    assert orders == ["original"] * 3 + ["swapped"] * 3
    assert all(r["value"] == canonical(r["raw"], r["presentation"]) for r in rows)
    records = {r.statistic: r for r in build_report(pair_study, "story-pairwise") if r.table == "position"}
    verdicts = {}
    for r in rows:
        verdicts.setdefault(r["item_key"], {})[r["presentation"]] = r["value"]
    consistent = [v["original"] == v["swapped"] for v in verdicts.values()]
    assert records["order_consistency"].n == 3
    assert records["order_consistency"].value == pytest.approx(sum(consistent) / 3)
    decisive = [r["raw"] for r in rows if r["raw"] != "C"]
    assert records["first_position_rate"].value == pytest.approx(decisive.count("A") / len(decisive))


def test_position_bias_and_v3_inversion(pair_study, fake_server):
    url = fake_server(Script([(200, {}, ok_body(" (A)"), 0)]))  # a judge that always picks the first text
    rater, _, rows = judge(
        pair_study,
        JudgeSpec("api:m", decoding=Decoding(samples=1, temperature=0.0), base_url=url, variant="v1"),
        task="story-pairwise",
    )
    by_order = {r["presentation"]: r["value"] for r in rows if r["item_key"] == rows[0]["item_key"]}
    assert by_order == {"original": 0, "swapped": 1}  # canonical: story_a, then story_b
    records = {
        (r.statistic, r.evaluator): r.value for r in build_report(pair_study, "story-pairwise") if r.table == "position"
    }
    assert rater.label == "J1 m text"  # reports name a judge by its short label (`tui-rater judges`)
    assert records[("first_position_rate", rater.label)] == 1.0
    assert records[("order_consistency", rater.label)] == 0.0
    assert records[("final_tie", rater.label)] == 3  # inconsistent orders count as ties
    v3 = JudgeSpec("api:m", decoding=Decoding(samples=1, temperature=0.0), base_url=url, variant="v3")
    _rater3, _, rows3 = judge(pair_study, v3, task="story-pairwise")
    first = {r["presentation"]: r["value"] for r in rows3 if r["item_key"] == rows3[0]["item_key"]}
    assert first == {"original": 1, "swapped": 0}  # "(A) is worse" means the other is better


def test_explicit_v4_stars_normalised(tmp_path, fake_server):
    study = Study.open(tmp_path / "e.db")
    study.add_items(study.task("story-explicit"), EXPLICIT)
    url = fake_server(Script([(200, {}, ok_body("4 stars"), 0)]))
    _, _, rows = judge(
        study,
        JudgeSpec("api:m", decoding=Decoding(samples=1, temperature=0.0), base_url=url, variant="v4"),
        task="story-explicit",
    )
    assert {r["value"] for r in rows} == {75.0}
    assert json.loads(rows[0]["details"])["stars"] == 4


def logprob_body(top: dict[str, float]) -> str:
    entries = [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in top.items()]
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Yes"},
                    "finish_reason": "length",
                    "logprobs": {
                        "content": [{"token": "Yes", "logprob": math.log(0.6), "bytes": None, "top_logprobs": entries}]
                    },
                }
            ],
        }
    )


def test_implicit_score_over_api_and_gguf(tmp_path, fake_server, tiny_gguf):
    study = Study.open(tmp_path / "i.db")
    study.add_items(study.task("story-explicit"), EXPLICIT)
    url = fake_server(
        Script([(200, {}, logprob_body({"Yes": 0.5, " yes": 0.1, "No": 0.25, "NO": 0.05, "Maybe": 0.1}), 0)])
    )
    _, _, rows = judge(
        study, JudgeSpec("api:m", decoding=Decoding(samples=1), base_url=url, mode="implicit"), task="story-explicit"
    )
    details = json.loads(rows[0]["details"])
    assert details["p_yes"] == pytest.approx(0.6) and details["p_no"] == pytest.approx(0.3)
    assert rows[0]["value"] == pytest.approx(100 * max(0.6, 1 - 0.3))
    _, _, local = judge(
        study, JudgeSpec(str(tiny_gguf), decoding=Decoding(samples=1), mode="implicit"), task="story-explicit"
    )
    # the byte-level test model has no "Yes" / "No" token: a typed failure, never 1 - p(no) = 100
    assert len(local) == 4 and {r["parse_status"] for r in local} == {"no_answer_token"}
    assert all(r["value"] is None for r in local)
    # what was read: the model's own five most probable next tokens (llama.cpp, the whole prompt afresh)
    task, items, truth = study.task("story-explicit"), {i.key: i for i in study.items()}, LlamaTruth(tiny_gguf)
    try:
        for r in local:
            text = question(task, "overall", items[r["item_key"]].fields, mode="implicit")[0]["content"]
            expected = truth.top(text, 5)
            top5 = json.loads(r["details"])["top5"]
            assert [token for token, _ in top5] == [token for token, _ in expected]
            assert [p for _, p in top5] == pytest.approx([p for _, p in expected], rel=1e-3)
    finally:
        truth.close()


def test_meta_evaluation_in_report(tmp_path, fake_server):
    from scipy import stats as sp

    study = Study.open(tmp_path / "m.db")
    study.add_items(study.task("story-explicit"), EXPLICIT)
    human = study.human("h")
    items = study.items("story-explicit")
    for item, value in zip(items, (20, 80, 30, 70)):
        study.add_rating(item.key, "overall", human.id, value)
    url = fake_server(Script([(200, {}, ok_body(f"Score: {score}"), 0) for score in (10, 90, 60, 40)]))
    rater, _, rows = judge(
        study,
        JudgeSpec("api:m", decoding=Decoding(samples=1, temperature=0.0), base_url=url, variant="v1"),
        task="story-explicit",
    )
    judged = {r["item_key"]: r["value"] for r in rows}
    humans = [20, 80, 30, 70]
    scores = [judged[item.key] for item in items]
    assert sorted(scores) == [10, 40, 60, 90]
    meta = {r.statistic: r for r in build_report(study, "story-explicit") if r.table == "meta"}
    assert {r.evaluator_b for r in meta.values()} == {rater.label}
    # dataset level: the four texts, by scipy
    assert meta["dataset_spearman"].n == 4
    assert meta["dataset_spearman"].value == pytest.approx(sp.spearmanr(humans, scores).statistic, abs=1e-12)
    assert meta["dataset_pearson"].value == pytest.approx(sp.pearsonr(humans, scores).statistic, abs=1e-12)
    # sample level: two texts per prompt are too few for a correlation: none, never a made-up one
    assert (meta["sample_spearman"].value, meta["sample_pearson"].value) == (None, None)
    # App. C's tau-b over the pairs of texts for one prompt (e0/e2 and e1/e3): (P - Q) / sqrt((P+Q+T)(P+Q+U))
    signs = [(np.sign(humans[i] - humans[j]), np.sign(scores[i] - scores[j])) for i, j in ((0, 2), (1, 3))]
    concordant = sum(h * m > 0 for h, m in signs)
    discordant = sum(h * m < 0 for h, m in signs)
    ties_h = sum(h == 0 != m for h, m in signs)
    ties_m = sum(m == 0 != h for h, m in signs)
    tau = (concordant - discordant) / math.sqrt((concordant + discordant + ties_h) * (concordant + discordant + ties_m))
    assert meta["pair_tau_b_all"].n == 2 and meta["pair_tau_b_all"].value == pytest.approx(tau, abs=1e-12)


def test_spa_with_a_judge_and_the_tau_filter(tmp_path, fake_server, tiny_gguf):
    study = Study.open(tmp_path / "s.db")
    study.add_items(
        study.task("story"),
        [
            {"id": f"{s}{i}", "system": s, "prompt": f"P{i}", "story": f"{s} {i}."}
            for i in range(5)
            for s in ("human", "gpt2")
        ],
    )
    spa.setup(study, ["human", "gpt2"], m=4, packets=2, seed=1)
    url = fake_server(Script([(200, {}, ok_body("I would say 70"), 0)]))  # 70% both ways: 1.4 > 1.1
    rater, _, rows = judge(
        study, JudgeSpec("api:m", decoding=Decoding(samples=2, temperature=1.0), base_url=url), task="spa"
    )
    assert len(rows) == 2 * 4 * 2  # packets x questions x samples
    filtered = [r for r in build_report(study, "spa") if r.table == "spa" and r.evaluator == rater.label]
    kept = next(r for r in filtered if r.statistic == "annotators_kept")
    assert kept.value == 0 and kept.n == 4  # every (sample, packet) annotator excluded
    unfiltered = {
        r.statistic: r
        for r in build_report(study, "spa", ReportSettings(spa=SpaSettings(tau=None)))
        if r.table == "spa" and r.evaluator == rater.label and r.attribute != "*"
    }
    assert unfiltered["p_x_over_y"].value == pytest.approx(0.7) and unfiltered["p_x_over_y"].n == 4
    _, _, local = judge(
        study, JudgeSpec(str(tiny_gguf), decoding=Decoding(samples=1, max_tokens=8), max_retries=0), task="spa"
    )
    assert len(local) == 2 * 4


def test_bradley_terry_from_human_pairwise(pair_study):
    human = pair_study.human("h")
    for item, verdict in zip(pair_study.items("story-pairwise"), (1, 1, 2)):  # human's story wins twice, one tie
        pair_study.add_rating(item.key, "preference", human.id, verdict)
    bt = {
        r.system: (r.value, r.n)
        for r in build_report(pair_study, "story-pairwise")
        if r.table == "bt" and r.evaluator == "humans"
    }
    # two systems: the likelihood w log s(d) + l log s(-d) peaks where s(d) = w / (w + l), i.e. d = log(w / l);
    # the tie counts half a win to each: 2.5 wins of "human" against 0.5 of "gpt2"
    assert bt["gpt2"] == (0, 3)  # abilities relative to the first system by name
    assert bt["human"][0] == pytest.approx(math.log(2.5 / 0.5), abs=1e-8) and bt["human"][1] == 3


def test_pairwise_and_spa_through_the_real_server(pair_study, llama_server, tmp_path):
    _, _, rows = judge(
        pair_study,
        JudgeSpec(
            "api:tiny",
            decoding=Decoding(samples=1, temperature=0.0),
            base_url=llama_server,
            mode="constrained",
            variant="v1",
        ),
        task="story-pairwise",
    )
    assert len(rows) == 6 and all(r["value"] == canonical(r["raw"], r["presentation"]) for r in rows)
    study = Study.open(tmp_path / "spa-real.db")
    study.add_items(
        study.task("story"),
        [
            {"id": f"{s}{i}", "system": s, "prompt": f"P{i}", "story": f"{s} {i}."}
            for i in range(4)
            for s in ("human", "gpt2")
        ],
    )
    spa.setup(study, ["human", "gpt2"], m=4, packets=1, likert=False)
    _, _, spa_rows = judge(
        study,
        JudgeSpec("api:tiny", decoding=Decoding(samples=2, temperature=1.0), base_url=llama_server, mode="constrained"),
        task="spa",
    )
    assert len(spa_rows) == 2 * 2 and all(0 <= r["value"] == float(r["raw"]) <= 100 for r in spa_rows)


def test_a_job_error_fails_the_job_and_the_worker_goes_on(pair_study, tiny_gguf):
    from tui_rater.judge import queue

    _rater, _progress, _rows = judge(
        pair_study, JudgeSpec(str(tiny_gguf), decoding=Decoding(samples=1, max_tokens=4)), task="story-pairwise"
    )
    failures = queue.failures(pair_study)
    assert len(failures) == 6 and {f["error_kind"] for f in failures} == {"bad_request"}
    assert "does not apply to task" in failures[0]["last_error"]
