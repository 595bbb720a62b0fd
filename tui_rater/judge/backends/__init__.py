"""Judge backends: what a third party's backend subclasses (CONTRIBUTING.md, "Add a backend").

``JudgeBackend`` is a kind of backend (its abilities and the run's policy for it, registered by name in
``registry.py``); ``Backend`` is the client it makes for each worker. Nothing here imports a model library or a
network client: the built-ins import theirs when they make a client.
"""

from tui_rater.judge.backends.base import Backend, Completion, Message, OptionProbabilities, TokenCounts
from tui_rater.judge.backends.kind import BackendOption, JudgeBackend
from tui_rater.judge.errors import JudgeError

__all__ = [
    "Backend",
    "BackendOption",
    "Completion",
    "JudgeBackend",
    "JudgeError",
    "Message",
    "OptionProbabilities",
    "TokenCounts",
]
