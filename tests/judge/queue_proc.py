"""A judge worker reduced to its queue calls, in its own process, driven line by line from stdin.

Each line is a JSON command; the answer is one JSON line on stdout. The owner id is the real
one (host:pid:random), so ``reclaim_dead`` in another process can tell whether this one lives.
"""

import json
import sys

from tui_rater.judge import queue
from tui_rater.judge.queue import Job, RatingResult
from tui_rater.store.study import Study

study = Study.open(sys.argv[1], create=False, durable=False)
owner = queue.new_owner()
held: list[Job] = []
print(json.dumps({"owner": owner}), flush=True)
for line in sys.stdin:
    command = json.loads(line)
    op = command["op"]
    if op == "lease":
        held = queue.lease(
            study, command["rater"], owner, max_jobs=command.get("max_jobs", 64), lease_s=command["lease_s"]
        )
        answer: object = [job.id for job in held]
    elif op == "complete":
        results = [[RatingResult(j.attribute, j.sample, 4.0, f"by {owner}", "ok")] for j in held]
        answer = [queue.complete(study, job, owner, result) for job, result in zip(held, results)]
    elif op == "renew":
        queue.renew(study, held, owner, lease_s=command["lease_s"])
        answer = "renewed"
    elif op == "fail":
        answer = [queue.fail(study, job, owner, "test", "boom", retryable=True) for job in held]
    else:
        raise SystemExit(f"unknown op {op!r}")
    print(json.dumps(answer), flush=True)
