"""A local judge's KV cache is sized from the run's prompts plus the reply budget, not 16 x --n-ctx (issues 22.6,
25.5); a prompt longer than it was sized for still runs (the engine admits fewer sequences at once)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.support import STORIES
from tui_rater.judge.backends.local import LocalBackend
from tui_rater.judge.spec import JudgeSpec
from tui_rater.service.judging import longest_prompts
from tui_rater.store.study import Study


def test_the_cache_is_sized_from_the_longest_prompts_and_longer_ones_still_run(tmp_path, qwen_bos_gguf):
    study = Study.open(tmp_path / "s.db")
    task = study.task("story")
    study.add_items(task, STORIES)
    spec = JudgeSpec(str(qwen_bos_gguf), mode="text", max_tokens=32).validate()
    prompts = longest_prompts(task, study.items("story"), spec)
    assert len(prompts) == len(task.attributes) * min(8, len(STORIES))
    backend = LocalBackend(spec, parallel=16, prompts=prompts)
    try:
        longest = max(len(backend.prompt_tokens(m)) for m in prompts)
        engine = backend.engine
        per_seq = engine.n_cells // 16
        assert longest + 32 < per_seq <= (longest + 33) * 1.25 + 256  # the prompt, the reply budget, a quarter more
        assert engine.n_cells < 16 * spec.n_ctx / 4  # was 16 x 4,096 cells
        # 16 different prompts three times longer than any measured, at once: more than the cache holds together;
        # fewer run at a time, and every one is answered
        story = " ".join(s["story"] for s in STORIES)
        long_prompt = [{"role": "user", "content": "Rate this story from 1 to 5.\n\n" + story}]
        while len(backend.prompt_tokens(long_prompt)) < 3 * per_seq:
            long_prompt[0]["content"] += "\n\n" + story
        assert len(backend.prompt_tokens(long_prompt)) < spec.n_ctx - 8

        def ask(seed: int):  # each its own text from the first token: no prefix is shared
            prompt = [{"role": "user", "content": f"Judge {seed}. " + long_prompt[0]["content"]}]
            return backend.complete(prompt, temperature=1.0, top_p=0.9, max_tokens=8, seed=seed)

        with ThreadPoolExecutor(16) as pool:
            replies = list(pool.map(ask, range(16)))
        assert len(replies) == 16 and all(r.finish_reason in ("stop", "length") for r in replies)
    finally:
        backend.close()
        study.close()
