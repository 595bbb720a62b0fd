"""One judge, several endpoints of the same model: vLLM, SGLang or llama-server replicas.

Each request goes to the endpoint with the fewest requests in flight (over all of the judge's workers; a tie
goes round). An endpoint that does not answer (connection refused, timeout, a 5xx) is left alone for
``DOWN_S`` and the request is asked again at another one at once: the job never sees that failure. Only a
request that no endpoint answered fails its job, and the worker's rule (``UNANSWERED_TO_STOP`` jobs in a row)
stops the run when all are down. Before any job, every endpoint is asked what it serves
(``api_server.describe``): endpoints naming different weights are refused in one sentence.

Each endpoint is an ``ApiBackend`` of its own (``JudgeSpec.at``): its client, its server facts, its key routing
(a key goes only where the user sent it). The endpoints a job's replies came from are stored with its ratings.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any, TypeVar

from tui_rater.domain.decoding import Decoding
from tui_rater.domain.errors import UserError
from tui_rater.judge.backends.api import ApiBackend
from tui_rater.judge.backends.base import Backend, Completion, Message, OptionProbabilities, TokenCounts
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.spec import JudgeSpec, strip_credentials

T = TypeVar("T")

# failures that say this endpoint, not the request, is the problem: another endpoint is asked (an answer that
# does not read, e.g. a proxy's HTML page sent with 200, is the endpoint's: the same request reads elsewhere)
FAILOVER = frozenset({"connection", "timeout", "server_error", "malformed"})
DOWN_S = 30.0  # an endpoint that did not answer is asked again after this (a restarted replica comes back)
_TURNS = itertools.count()  # ties between equally busy endpoints go round (over all workers)
_TURNS_LOCK = threading.Lock()


class ApiPool(Backend):
    """The ``ApiBackend`` interface over several endpoints; one per worker, the endpoints' state shared."""

    def __init__(self, spec: JudgeSpec):
        self.spec = spec
        self.counts = TokenCounts()
        self.members = [ApiBackend(spec.at(url)) for url in spec.endpoints]
        for member in self.members:
            member.counts = self.counts  # the run's token counts, wherever a request went
        self._used: list[str] = []  # endpoints that answered since ``take_endpoints``

    # --- choosing an endpoint ----------------------------------------------------------------

    def _choose(self, tried: list[ApiBackend]) -> ApiBackend | None:
        """The least busy endpoint not tried yet that is up; when all are down and none was tried, the one down
        longest (it may be back: each request still asks one)."""
        now = time.monotonic()
        left = [m for m in self.members if m not in tried]
        up = [m for m in left if m.server.down_until <= now]
        if not up:
            return min(left, key=lambda m: m.server.down_until) if left and not tried else None
        with _TURNS_LOCK:
            turn = next(_TURNS)
        order = {id(m): (i - turn) % len(self.members) for i, m in enumerate(self.members)}
        return min(up, key=lambda m: (m.server.in_flight, order[id(m)]))

    def _ask(self, request: Callable[[ApiBackend], T]) -> T:
        tried: list[ApiBackend] = []
        last: JudgeError | None = None
        while (member := self._choose(tried)) is not None:
            tried.append(member)
            server = member.server
            with server.lock:
                server.in_flight += 1
            try:
                found = request(member)
            except JudgeError as exc:
                if exc.kind not in FAILOVER:
                    raise
                with server.lock:
                    server.down_until = time.monotonic() + DOWN_S
                last = exc
                continue
            finally:
                with server.lock:
                    server.in_flight -= 1
            with server.lock:
                server.down_until = 0.0
            url = strip_credentials(member.spec.base_url or "")
            if url not in self._used:
                self._used.append(url)
            return found
        assert last is not None  # the first choice is never None: some endpoint is always asked
        # those not asked again were down already: none answers (the worker's rule stops a run of such jobs)
        raise JudgeError(last.kind, f"none of the {len(self.members)} endpoints answered, the last: {last.message}")

    # --- the backend interface -----------------------------------------------------------------

    def complete(
        self,
        messages: list[Message],
        decoding: Decoding,
        *,
        grammar: str | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        return self._ask(lambda member: member.complete(messages, decoding, grammar=grammar, json_schema=json_schema))

    def option_probabilities(self, messages: list[Message], options: list[str]) -> OptionProbabilities:
        return self._ask(lambda member: member.option_probabilities(messages, options))

    def top_tokens(self, messages: list[Message], k: int = 5) -> list[tuple[str, float]]:
        return self._ask(lambda member: member.top_tokens(messages, k))

    def take_endpoints(self) -> list[str]:
        """The endpoints (credential-free URLs) that answered since the last call: the worker stores them with
        the job's ratings."""
        found, self._used = self._used, []
        return found

    def take_sources(self) -> list[tuple[str, str, str]]:
        return [source for member in self.members for source in member.take_sources()]

    def describe_servers(self) -> list[tuple[str, dict[str, Any]]]:
        return [(strip_credentials(m.spec.base_url or ""), m.describe_server()) for m in self.members]

    def close(self) -> None:
        for member in self.members:
            member.close()


def served_weights(facts: dict[str, Any]) -> str | None:
    """What an endpoint says it serves, comparable between replicas: llama.cpp's model file (its name: replicas on
    other machines keep it at other paths), else vLLM's ``root`` (the weights behind the alias); None: it says
    nothing that identifies the weights."""
    path = facts.get("props", {}).get("model_path")
    if isinstance(path, str) and path:
        return PurePosixPath(path.replace("\\", "/")).name
    root = facts.get("model", {}).get("root")
    if isinstance(root, str) and root and root != facts.get("model", {}).get("id"):
        return PurePosixPath(root).name if root.startswith(("/", ".", "~")) else root
    return None


def check_endpoints(spec: JudgeSpec) -> list[tuple[str, dict[str, Any]]]:
    """Ask every endpoint what it serves, before any job; endpoints naming different weights are refused in one
    sentence (their ratings would be one judge's). An endpoint that says nothing is not compared."""
    described = ApiPool(spec).describe_servers()
    named = [(url, weights) for url, facts in described if (weights := served_weights(facts)) is not None]
    if len({weights for _, weights in named}) > 1:
        listed = ", ".join(f"{url} serves {weights!r}" for url, weights in named)
        raise UserError(
            f"the endpoints serve different models ({listed}); give --base-url only for replicas of one model"
        )
    return described
