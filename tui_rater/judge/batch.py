"""OpenAI's Batch API (``judge --batch``): the queue's requests sent as one file, answered within 24 hours at half
the price, read back by a later run.

Nothing here builds a request or reads a reply: a job is run by the live worker (``Worker._process``) with the
live API backend, whose one network call (``ApiBackend._post``) is answered from the batch's output instead:

- a request the batch has not answered yet stops the job (``Deferred``): its body, exactly as the live judge
  would POST it, becomes a line of the next batch file, and the job waits as 'batched' under that batch's id;
- a request it has answered gets the line's body, read by the live path (``api_reply``: strict, scrubbed of
  secrets); the ratings, typed failures and cached replies are stored by ``queue.complete`` as a live reply's;
- a line the server answered with an error is that error, as live: a transient one (429, 5xx) queues the job
  again, a rejected request fails it; a job without a line (the batch expired or failed) is queued again.

A job needing several requests (a regeneration of a reply that does not read, the next turn of a
``--conversation``, a constraint the server refused) runs over several batches: each round asks the next
request, the replies so far are kept in the store's reply cache. Modes reading next-token probabilities
(distribution, implicit) are refused: their follow-up requests (a token asked for by logit bias, a sampled
retry with a random seed) cannot be known before the first reply.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from tui_rater.judge import queue, sources
from tui_rater.judge.backends import api_reply, http_limits
from tui_rater.judge.backends.api import ApiBackend, _split_query
from tui_rater.judge.backends.api_reply import MAX_BODY_BYTES
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.queue import Job
from tui_rater.judge.spec import NO_KEY, JudgeSpec, strip_credentials, url_secrets
from tui_rater.judge.worker import Deferred, Progress, Worker
from tui_rater.store.study import Study

ENDPOINT: Final = "/v1/chat/completions"
WINDOW: Final = "24h"
_T = TypeVar("_T")
MAX_REQUESTS = 50_000  # OpenAI's limit of requests in one batch
# a batch upload can take a while: the submitting process holds its jobs this long (a crash on this host frees
# them at once: ``queue.reclaim_dead``)
SUBMIT_LEASE_S = 3600.0
# the server's states of a batch that has not ended yet
RUNNING = frozenset({"validating", "in_progress", "finalizing", "cancelling"})
BATCH_MODES = ("text", "constrained")
# a result file is read a line at a time: a line is one reply (capped as a live reply is, MAX_BODY_BYTES) and the
# file as a whole may hold 50,000 of them, so the download has its own cap and a deadline no shorter than this
MAX_LINE_BYTES = MAX_BODY_BYTES
MAX_FILE_BYTES = 8 << 30
DOWNLOAD_MIN_S = 900.0
_HEAD_BYTES = 512  # of a line that cannot be read: where its custom_id is looked for
_CUSTOM_ID = re.compile(r'"custom_id"\s*:\s*"(job-\d+-[0-9a-f]{32})"')
API_ONLY = "--batch sends the requests to an API's Batch endpoint: it needs an API judge (--model api:MODEL)"


def refusal(spec: JudgeSpec) -> str | None:
    """Why this judge cannot be batched (one sentence), or None."""
    if not spec.kind.can_batch:
        return API_ONLY
    if spec.mode not in BATCH_MODES:
        return (
            f"--batch asks for replies (--mode text or constrained); --mode {spec.mode} reads next-token "
            "probabilities, whose follow-up requests cannot be known before the first reply: run it without --batch"
        )
    return None


def request_key(body: dict[str, Any]) -> str:
    """A request body's identity: how a line of the output finds the request the job's run makes again."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]


def custom_id(job_id: int, body: dict[str, Any]) -> str:
    return f"job-{job_id}-{request_key(body)}"


def parse_custom_id(text: object) -> tuple[int, str] | None:
    parts = text.split("-") if isinstance(text, str) else []
    if len(parts) != 3 or parts[0] != "job" or not parts[1].isdigit() or len(parts[2]) != 32:
        return None
    return int(parts[1]), parts[2]


class BatchBackend(ApiBackend):
    """The live API backend whose chat requests are answered from a batch's output (``answers``: request key ->
    the reply body, or the error the server gave that line); one not answered is ``Deferred`` with its body."""

    def __init__(self, spec: JudgeSpec, answers: dict[str, dict[str, Any] | JudgeError]):
        super().__init__(spec)
        self.answers = answers

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path != "/chat/completions":  # e.g. /tokenize: not reached in text or constrained mode
            raise JudgeError("unsupported", f"a batch cannot ask {path}")
        found = self.answers.get(request_key(body))
        if found is None:
            raise Deferred(body)
        if isinstance(found, JudgeError):
            raise found
        return found

    def describe_server(self) -> dict[str, Any]:
        return {}  # nothing is asked of the server but the batch


@dataclass
class Round:
    """What one pass over jobs came to: the requests for the next batch, and the jobs that ended."""

    requests: list[tuple[Job, dict[str, Any]]] = field(default_factory=list)
    done: int = 0
    queued: int = 0
    failed: int = 0


class BatchJudge:
    """Runs a judge's jobs against the replies of a batch, through the live worker's code."""

    def __init__(self, study: Study, rater_id: int, spec: JudgeSpec, rater_config: dict[str, Any], progress: Progress):
        self.study, self.rater_id, self.spec, self.progress = study, rater_id, spec, progress
        self.worker = Worker(
            study.path, rater_id, spec, rater_config, progress=progress, stop=threading.Event(), drain=True
        )
        self.worker.study = study
        self.worker.replies = {}
        self.owner = self.worker.owner

    def run(self, jobs: Iterable[Job], answers: dict[str, dict[str, Any] | JudgeError], found: Round) -> None:
        """Run each job with these answers: it ends (done, failed or queued again, stored as live) or asks its
        next request, which ``found`` collects (the job stays leased by this process until it is batched)."""
        backend = BatchBackend(self.spec, answers)
        self.worker.backend = backend
        for job in jobs:
            self.worker.replies = {}
            before = dict(_statuses(self.progress))
            try:
                self.worker.process(self.study, job)
            except Deferred as waiting:
                queue.keep_replies(self.study, self.rater_id, self.worker.replies)  # the turns answered so far
                found.requests.append((job, waiting.body))
                continue
            finally:
                sources.note(self.study, self.rater_id, self.spec, backend)  # the model id the replies named
            after = _statuses(self.progress)
            found.done += after["done"] - before["done"]
            found.failed += after["failed"] - before["failed"]
            found.queued += after["retried"] - before["retried"]


def _statuses(progress: Progress) -> dict[str, int]:
    return {"done": progress.done, "failed": progress.failed, "retried": progress.retried}


def jsonl(requests: list[tuple[Job, dict[str, Any]]]) -> bytes:
    """The batch input file: one line per request, the body as the live judge POSTs it to /chat/completions."""
    lines = [
        json.dumps({"custom_id": custom_id(job.id, body), "method": "POST", "url": ENDPOINT, "body": body})
        for job, body in requests
    ]
    return ("\n".join(lines) + "\n").encode()


# --- reading the output and error files -------------------------------------------------------------------------


def _line_error(response: object, error: object, secrets: list[str]) -> JudgeError:
    """A line the server did not answer with a reply: the error the live request would have raised."""
    status = response.get("status_code") if isinstance(response, dict) else None
    body = response.get("body") if isinstance(response, dict) else None
    detail = ""
    for source in (body.get("error") if isinstance(body, dict) else None, error):
        if isinstance(source, dict) and isinstance(source.get("message"), str):
            detail = source["message"][:300]
            break
    detail = api_reply.scrub(detail, secrets)
    if not isinstance(status, int) or isinstance(status, bool):
        return JudgeError("server_error", f"the batch did not answer this request: {detail or 'no reason given'}")
    if status == 429:
        return JudgeError("rate_limited", f"rate limited (429) in the batch: {detail}")
    if status >= 500:
        return JudgeError("server_error", f"server error {status} in the batch: {detail}")
    if status in (401, 403):
        return JudgeError("auth", f"the batch's request was refused ({status}): {detail}")
    if status == 404:
        return JudgeError("unknown_model", f"the server has no such model (404 in the batch): {detail}")
    return JudgeError("bad_request", f"the server rejected the request ({status}): {detail}")


@dataclass(frozen=True)
class Unreadable:
    """A line of a result file that was not read: longer than MAX_LINE_BYTES (skipped, never held whole), or cut
    short (the file's last line without its end). ``head``: its first bytes, where its custom_id is looked for."""

    head: str
    why: str


def split_lines(chunks: Iterable[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[str | Unreadable]:
    """A result file's lines as its bytes arrive; no more than ``limit`` bytes of one line are ever held."""
    buffer, skipped = bytearray(), None  # skipped: the head of a line over the limit, whose rest is dropped
    for chunk in chunks:
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if skipped is None:
                buffer += piece
                if len(buffer) > limit:
                    skipped = buffer[:_HEAD_BYTES].decode("utf-8", "replace")
                    buffer.clear()
            if end < 0:
                break
            if skipped is not None:
                yield Unreadable(skipped, f"its line in the batch's results is larger than {limit >> 20} MB")
            elif buffer:
                yield buffer.decode("utf-8", "replace")
            buffer, skipped, start = bytearray(), None, end + 1
    if skipped is not None:
        yield Unreadable(skipped, f"its line in the batch's results is larger than {limit >> 20} MB")
    elif buffer.strip():
        try:
            json.loads(buffer)
            yield buffer.decode("utf-8", "replace")
        except ValueError:
            yield Unreadable(
                buffer[:_HEAD_BYTES].decode("utf-8", "replace"), "its line in the batch's results was cut short"
            )


def read_lines(
    lines: Iterable[str | Unreadable], secrets: list[str]
) -> Iterator[tuple[int, str, dict[str, Any] | JudgeError]]:
    """(job id, request key, the reply body (a JSON object, unread) or the line's error), a line at a time. A line
    that cannot be read is a malformed reply of its job (queued again, as a live reply that does not read), when
    its custom_id can be found; a line that cannot be routed back to a job is skipped (its job, if any, has no
    line and is queued again)."""
    for line in lines:
        if isinstance(line, Unreadable):
            match = _CUSTOM_ID.search(line.head)
            routed = parse_custom_id(match.group(1)) if match else None
            if routed is not None:
                yield (*routed, JudgeError("malformed", line.why))
            continue
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            match = _CUSTOM_ID.search(line[:_HEAD_BYTES])
            routed = parse_custom_id(match.group(1)) if match else None
            if routed is not None:
                yield (*routed, JudgeError("malformed", "its line in the batch's results is not JSON"))
            continue
        routed = parse_custom_id(entry.get("custom_id")) if isinstance(entry, dict) else None
        if routed is None:
            continue
        job_id, key = routed
        response, error = entry.get("response"), entry.get("error")
        answer: dict[str, Any] | JudgeError
        if isinstance(response, dict) and response.get("status_code") == 200 and not error:
            try:  # the live path's first check of a reply: a JSON object, else a typed failure
                answer = api_reply.parse_body(json.dumps(response.get("body")))
            except JudgeError as exc:
                answer = exc
        else:
            answer = _line_error(response, error, secrets)
        yield job_id, key, answer


# --- the server's batch endpoints -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchState:
    id: str
    status: str
    total: int
    completed: int
    failed: int
    output_file_id: str | None
    error_file_id: str | None
    errors: str  # why a batch failed as a whole ('' when it did not)

    @property
    def running(self) -> bool:
        return self.status in RUNNING


class BatchServer:
    """The files and batches endpoints of the judge's server, each failure one typed ``JudgeError``."""

    def __init__(self, spec: JudgeSpec):
        import openai

        self.spec = spec
        self._openai = openai
        key = spec.api_key()
        self.secrets = [k for k in (key, *url_secrets(spec.base_url)) if k != NO_KEY]
        url, query = _split_query(spec.base_url)
        self.download_s = max(spec.timeout_s, DOWNLOAD_MIN_S)

        def client(timeout_s: float, max_bytes: int) -> Any:
            # the live judge's limits (http_limits): a total deadline a server dripping bytes cannot stretch, and a
            # cap on what an answer decodes to. The client's own retries are off: creating a batch twice would pay
            # for it twice
            http = http_limits.http_client(openai, timeout_s, max_bytes)
            return openai.OpenAI(
                base_url=url,
                api_key=key,
                max_retries=0,
                timeout=spec.timeout_s,
                default_query=query or None,
                http_client=http,
            )

        self.client = client(spec.timeout_s, MAX_BODY_BYTES)
        self.files = client(self.download_s, MAX_FILE_BYTES)  # a result file: read a line at a time
        self.where = strip_credentials(spec.base_url) if spec.base_url else "api.openai.com"

    @contextmanager
    def _failing(self, what: str, seconds: float, max_bytes: int = MAX_BODY_BYTES) -> Iterator[None]:
        """Every failure of a request made inside as one typed ``JudgeError``; each read within ``seconds`` in all."""
        openai = self._openai
        httpx = http_limits.httpx_of(openai)  # a streamed file's reads raise the client's httpx errors, unwrapped
        try:
            with http_limits.deadline(seconds):
                yield
        except (openai.APITimeoutError, httpx.TimeoutException):
            raise JudgeError("timeout", f"{what} at {self.where}: no answer within {self.spec.timeout_s:g} s") from None
        except http_limits.BodyTooSlow:
            raise JudgeError("timeout", f"{what} at {self.where}: its answer took longer than {seconds:g} s") from None
        except httpx.HTTPError:
            raise JudgeError("connection", f"{what}: the connection to {self.where} broke") from None
        except openai.APIStatusError as exc:
            detail = api_reply.scrub(str(exc.message)[:300], self.secrets)
            kind = "auth" if exc.status_code in (401, 403) else "server_error"
            raise JudgeError(kind, f"{what} at {self.where} failed ({exc.status_code}): {detail}") from None
        except openai.APIConnectionError as exc:
            if isinstance(exc.__cause__, http_limits.BodyTooLarge):  # the client wraps what a hook raised
                raise JudgeError(
                    "malformed", f"{what} at {self.where}: its answer is larger than {max_bytes >> 20} MB"
                ) from None
            if isinstance(exc.__cause__, http_limits.BodyTooSlow):
                raise JudgeError(
                    "timeout", f"{what} at {self.where}: its answer took longer than {seconds:g} s"
                ) from None
            raise JudgeError("connection", f"{what}: cannot reach {self.where}") from None
        except http_limits.BodyTooLarge:
            raise JudgeError(
                "malformed", f"{what} at {self.where}: its answer is larger than {max_bytes >> 20} MB"
            ) from None
        except http_limits.BadEncoding as exc:
            raise JudgeError("malformed", f"{what} at {self.where}: the answer could not be read ({exc})") from None
        except openai.OpenAIError as exc:
            raise JudgeError("malformed", f"{what} at {self.where}: the answer could not be read ({exc})") from None

    def _call(self, what: str, call: Callable[[], Any]) -> Any:
        with self._failing(what, self.spec.timeout_s):
            return call()

    def submit(self, content: bytes) -> str:
        """Upload the input file and create the batch; its id."""
        upload = self._call(
            "uploading the batch file",
            lambda: self.client.files.create(file=("judge-batch.jsonl", io.BytesIO(content)), purpose="batch"),
        )
        created = self._call(
            "creating the batch",
            lambda: self.client.batches.create(
                input_file_id=upload.id,
                endpoint=ENDPOINT,
                completion_window=WINDOW,
            ),
        )
        return str(created.id)

    def state(self, batch_id: str) -> BatchState:
        found = self._call(f"asking for batch {batch_id}", lambda: self.client.batches.retrieve(batch_id))
        counts = getattr(found, "request_counts", None)
        listed = getattr(getattr(found, "errors", None), "data", None) or []
        errors = "; ".join(str(getattr(e, "message", "") or "") for e in listed)[:300]
        return BatchState(
            str(found.id),
            str(found.status),
            int(getattr(counts, "total", 0) or 0),
            int(getattr(counts, "completed", 0) or 0),
            int(getattr(counts, "failed", 0) or 0),
            getattr(found, "output_file_id", None),
            getattr(found, "error_file_id", None),
            api_reply.scrub(errors, self.secrets),
        )

    def lines(self, file_id: str) -> Iterator[str | Unreadable]:
        """A result file's lines as they arrive (an output file may hold 50,000 replies: never held whole); a
        failure midway is a ``JudgeError`` raised by the iteration."""
        with (
            self._failing(f"downloading file {file_id}", self.download_s, MAX_FILE_BYTES),
            self.files.files.with_streaming_response.content(file_id) as response,
        ):
            yield from split_lines(response.iter_bytes())

    def cancel(self, batch_id: str) -> None:
        self._call(f"cancelling batch {batch_id}", lambda: self.client.batches.cancel(batch_id))
