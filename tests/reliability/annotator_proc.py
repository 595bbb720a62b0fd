"""A scripted annotator for the crash and concurrency tests: rates through AnnotationSession (the
code path the app's store thread runs) and prints ACK after each rating is committed."""

import random
import sys
import time

from tui_rater.store.session import AnnotationSession
from tui_rater.store.study import Study

db, annotator, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
session = AnnotationSession.open(Study.open(db, create=False), "story", annotator)
rng = random.Random(annotator)
deadline = time.monotonic() + seconds
n = 0
while time.monotonic() < deadline:
    index = rng.randrange(len(session.items))
    attribute = rng.choice(session.task.attribute_names)
    value = float(rng.randint(1, 5))
    rating_id = session.rate(index, attribute, value, seconds=0.1)
    print(f"ACK {rating_id} {session.items[index].key} {attribute} {value}", flush=True)
    n += 1
print(f"DONE {n}", flush=True)
