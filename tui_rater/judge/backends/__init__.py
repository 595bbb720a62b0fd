"""Judge backends: what a third party's backend subclasses (CONTRIBUTING.md, "Add a backend").

``JudgeBackend`` is a kind of backend (its abilities and the run's policy for it, registered by name in
``registry.py``); ``Backend`` is the client it makes for each worker. Nothing here imports a model library or a
network client: the built-ins import theirs when they make a client. ``BackendOption`` declares a setting a
backend takes (``options.py``); ``BASE_URL``, ``API_KEY_ENV`` and ``TIMEOUT`` are the server flags it may take.
"""

from tui_rater.judge.backends.base import Backend, Completion, Message, OptionProbabilities, TokenCounts
from tui_rater.judge.backends.kind import JudgeBackend
from tui_rater.judge.backends.options import API_KEY_ENV, BASE_URL, TIMEOUT, BackendOption
from tui_rater.judge.errors import JudgeError

__all__ = [
    "API_KEY_ENV",
    "BASE_URL",
    "TIMEOUT",
    "Backend",
    "BackendOption",
    "Completion",
    "JudgeBackend",
    "JudgeError",
    "Message",
    "OptionProbabilities",
    "TokenCounts",
]
