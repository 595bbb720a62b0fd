"""A batched llama.cpp engine for local judges: one model, one context, many sequences decoded together.

- ``native``: llama.cpp's low-level API (model, context with a KV stream per sequence, numpy-backed ``llama_batch``)
  and ``NUMERICS``, what makes a reading independent of the batch it was computed in;
- ``sampling``: each sequence's sampler (grammar, nucleus top-p without top-k, temperature, seeded draw);
- ``slots``: the sequences and how a new prompt copies the prefix another sequence holds (or waits for it);
- ``engine``: the thread that admits prompts, builds one batch per step, decodes, samples and answers.

``tui_rater.judge.backends.local`` is the judge-facing side (chat templates, BOS rule, options).
"""

from tui_rater.judge.engine.engine import Engine
from tui_rater.judge.engine.slots import Generated

__all__ = ["Engine", "Generated"]
