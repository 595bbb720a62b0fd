"""A batched llama.cpp engine for local judges: one model, one context, many sequences decoded together.

- ``native``: llama.cpp's low-level API (model, context with a unified KV cache, numpy-backed ``llama_batch``);
- ``sampling``: each sequence's sampler (grammar, nucleus top-p without top-k, temperature, seeded draw);
- ``slots``: the sequences and how a new prompt shares the prefix another sequence holds or is evaluating;
- ``engine``: the thread that admits prompts, builds one batch per step, decodes, samples and answers.

``tui_rater.judge.backends.local`` is the judge-facing side (chat templates, BOS rule, options).
"""

from tui_rater.judge.engine.engine import Engine
from tui_rater.judge.engine.slots import Generated

__all__ = ["Engine", "Generated"]
