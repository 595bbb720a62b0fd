"""A local judge's stored readings depend on the model, the prompt and the recorded settings only (issue 26 item 1).

Bit for bit: two runs with 16 concurrent sequences and one with a single sequence store the same values, raw replies
and details -- however the jobs arrive, however many sequences decode together and whichever prompts share a batch.
On a random-weight model around Qwen2's real 152k-token vocabulary (~300-token story prompts), through the queue and
the workers the CLI runs (``judge_study``).
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from tests.support import STORIES
from tui_rater.domain.decoding import Decoding
from tui_rater.judge.spec import JudgeSpec, provenance
from tui_rater.service.judging import judge_study
from tui_rater.store.study import Study


def _stored(path, spec: JudgeSpec, workers: int) -> list[tuple]:
    """Judge every item into a new study file; its ratings as stored, by job (the details JSON as its bytes)."""
    study = Study.open(path)
    try:
        study.add_items(study.task("story"), STORIES)
        run = judge_study(study, spec.validate(), ["story"], workers=workers)
        assert run.progress.fatal is None, run.progress.fatal
        rows = study._db.conn.execute(
            "SELECT item_key, attribute, sample, value, raw, parse_status, details FROM ratings "
            "WHERE rater_id = ? ORDER BY item_key, attribute, sample",
            [run.plan.rater.id],
        ).fetchall()
    finally:
        study.close()
    return [tuple(r) for r in rows]


@pytest.mark.parametrize("mode", ["distribution", "text"])
def test_readings_are_bit_identical_across_runs_and_worker_counts(tmp_path, qwen_gguf, mode):
    # min_mass 0: the random model puts little mass on the digits; every reading is then stored with a value
    spec = JudgeSpec(str(qwen_gguf), decoding=Decoding(max_tokens=12), mode=mode, max_retries=0, min_mass=0.0)
    first = _stored(tmp_path / "first.db", spec, workers=16)
    again = _stored(tmp_path / "again.db", spec, workers=16)
    alone = _stored(tmp_path / "alone.db", spec, workers=1)
    one_thread = _stored(tmp_path / "one-thread.db", replace(spec, n_threads=1), workers=16)  # --threads 1
    assert len(first) == len(STORIES) * 4 * 3
    if mode == "distribution":  # the readings carry the probabilities themselves (not a few rounded digits)
        probabilities = [json.loads(r[6])["raw"] for r in first if r[2] == 0]  # samples 1, 2 draw from sample 0's
        assert len({json.dumps(p) for p in probabilities}) > len(STORIES)  # they differ by item and question
        assert all(r[3] is not None for r in first)
    else:
        assert len({r[4] for r in first}) > len(first) / 2  # real, different replies
    assert again == first
    assert alone == first
    assert one_thread == first  # llama.cpp's thread count is not part of the judge: it must not change a reading
    assert provenance(replace(spec, n_threads=1)) == provenance(spec)


def test_the_numerics_that_change_readings_are_in_the_provenance(qwen_gguf):
    """What the engine runs with is what the judge records (flash attention, KV cache layout and types)."""
    from tui_rater.judge.backends.local import LocalBackend

    spec = JudgeSpec(str(qwen_gguf))
    backend = LocalBackend(spec, parallel=2)
    try:
        numerics = backend.engine.ctx.numerics
    finally:
        backend.close()
    assert provenance(spec)["numerics"] == numerics
    assert numerics["flash_attn"] is False and numerics["kv_unified"] is False


def test_a_prompt_in_any_company_gives_the_same_logits(qwen_gguf):
    """One probe's logits, bit for bit: alone, among 15 other prompts arriving at once in any order, and after its
    prefix was computed by another sequence (a copied prefix) or by the same one (a conversation's earlier turn)."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.judge.test_engine import story_prompts
    from tui_rater.judge.backends.local import LocalBackend

    prompts = story_prompts(4)  # 16 questions: 4 stories x 4 questions, sharing instructions and stories
    one = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=1)
    try:
        tokens = [one.prompt_tokens(m) for m in prompts]
        reference = [one.engine.probe(t) for t in tokens]  # one at a time, in one sequence
    finally:
        one.close()
    many = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=16)
    try:
        for order in (
            list(range(16)),
            list(reversed(range(16))),
            [5, 0, 11, 3, 15, 8, 1, 12, 6, 9, 2, 14, 4, 10, 7, 13],
        ):
            with ThreadPoolExecutor(16) as pool:
                got = list(pool.map(lambda i: (i, many.engine.probe(tokens[i])), order))
            for i, logits in got:
                assert np.array_equal(logits, reference[i]), (order, i)
        assert many.counts.cached > many.counts.evaluated  # prefixes really were shared
        # a longer prompt continuing one the engine holds (its prefix is reused, not evaluated again)
        longer = tokens[0] + tokens[1][-7:]
        cached = many.engine.probe(longer)
    finally:
        many.close()
    fresh = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=1)
    try:
        assert np.array_equal(fresh.engine.probe(longer), cached)
    finally:
        fresh.close()


def _outputs_after_pairing(pieces: list[tuple[int, int, bool]], streams: bool = True) -> list[int]:
    from tui_rater.judge.engine.native import Batch

    batch = Batch(64, 8)
    for seq, rows, output in pieces:
        batch.add(np.arange(rows, dtype=np.int32), 0, seq, output)
    batch.pair_lone_outputs(streams=streams)
    return [int(i) for i in np.flatnonzero(batch.output[: batch.n])]


def test_no_ubatch_computes_a_single_row_of_logits():
    """llama.cpp splits a batch of several KV streams into ubatches of consecutive sequence ids with equal rows
    each (split_equal); one whose only output is one row gets the row before it as a second output."""
    # sequences 0 and 1 share a ubatch of 2 + 2 rows (one output: sequence 0's), then 1's last 2 rows alone
    assert _outputs_after_pairing([(0, 2, True), (1, 4, True)]) == [0, 1, 4, 5]
    # 3 and 5 are not consecutive: two ubatches, one output each
    assert _outputs_after_pairing([(3, 2, True), (5, 2, True)]) == [0, 1, 2, 3]
    # 1 and 2 are: one ubatch, two outputs, nothing added; a piece without outputs is left alone
    assert _outputs_after_pairing([(1, 2, True), (2, 2, True), (4, 6, False)]) == [1, 3]
    # in the batch's order, not the ids': 2 then 1 are two runs
    assert _outputs_after_pairing([(2, 2, True), (1, 2, True)]) == [0, 1, 2, 3]
    # one stream (--workers 1): the batch is one ubatch
    assert _outputs_after_pairing([(0, 4, True)], streams=False) == [2, 3]
