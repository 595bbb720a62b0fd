"""A local judge's KV cache is sized from the run's prompts plus the reply budget, not 16 x --n-ctx (issues 22.6,
25.5). Each sequence has a KV stream of its own (readings do not depend on the batch: issue 26.1), so a prompt
longer than a stream was sized for is a typed failure that says what to do, never a llama.cpp error."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support import STORIES
from tui_rater.domain.decoding import Decoding
from tui_rater.judge.backends.local import LocalBackend
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.spec import JudgeSpec
from tui_rater.service.judging import longest_prompts
from tui_rater.store.study import Study


def test_the_cache_is_sized_from_the_longest_prompts_and_longer_ones_are_a_typed_failure(tmp_path, qwen_bos_gguf):
    study = Study.open(tmp_path / "s.db")
    task = study.task("story")
    study.add_items(task, STORIES)
    spec = JudgeSpec(str(qwen_bos_gguf), decoding=Decoding(max_tokens=32), mode="text").validate()
    prompts = longest_prompts(task, study.items("story"), spec)
    assert len(prompts) == len(task.attributes) * min(8, len(STORIES))
    backend = LocalBackend(spec, parallel=16, prompts=prompts)
    try:
        longest = max(len(backend.prompt_tokens(m)) for m in prompts)
        engine = backend.engine
        per_seq = engine.n_cells // 16
        assert longest + 32 < per_seq <= (longest + 33) * 1.25 + 256  # the prompt, the reply budget, a quarter more
        assert engine.n_cells < 16 * spec.n_ctx / 4  # was 16 x 4,096 cells
        # 16 different prompts as long as a stream holds, at once: every one is answered
        story = " ".join(s["story"] for s in STORIES)

        def prompt_of(seed: int, repeats: int) -> list[dict]:  # each its own text from the first token
            return [{"role": "user", "content": f"Judge {seed}. Rate this story from 1 to 5.\n\n" + story * repeats}]

        repeats = 1
        while len(backend.prompt_tokens(prompt_of(99, repeats + 1))) + 8 <= per_seq:
            repeats += 1

        def ask(seed: int, repeats: int = repeats):
            return backend.complete(
                prompt_of(seed, repeats), Decoding(temperature=1.0, top_p=0.9, max_tokens=8, seed=seed)
            )

        with ThreadPoolExecutor(16) as pool:
            replies = list(pool.map(ask, range(16)))
        assert len(replies) == 16 and all(r.finish_reason in ("stop", "length") for r in replies)
        # one three times longer than a stream: a typed failure naming the way out (not "llama_decode returned 1")
        too_long = 3 * repeats + 3
        assert len(backend.prompt_tokens(prompt_of(7, too_long))) < spec.n_ctx - 8
        with pytest.raises(JudgeError) as failed:
            ask(7, too_long)
        assert failed.value.kind == "context_overflow" and "--workers 1" in failed.value.message
    finally:
        backend.close()
        study.close()
