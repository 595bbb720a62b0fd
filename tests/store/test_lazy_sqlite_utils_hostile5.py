"""Hostile cases of the lazy sqlite-utils import (``store.sqlite_utils_module``): two threads making their first
query at once. Each case in a fresh process: the test process imported sqlite-utils long ago."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import story_study

# Thread A's import of sqlite-utils is held half done (its `db` submodule, which defines `Database`, not yet
# loaded) while thread B makes its own first query: B must wait for A's import, not take the half-made module
# (which has no `Database` yet: an AttributeError in the `database` property, which `__getattr__` turned into a
# RecursionError). A study is opened once per thread, as ``Study`` says.
_RACE = """
import json, sys, threading
from tui_rater.store.study import Study

started, release = threading.Event(), threading.Event()

class HoldSqliteUtilsDb:
    def find_spec(self, name, path=None, target=None):
        if name == "sqlite_utils.db" and not started.is_set():
            started.set()
            release.wait(5)
        return None

first, second = Study.open(sys.argv[1], create=False), Study.open(sys.argv[1], create=False)
said = {}

def ask(study, key):
    try:
        said[key] = [r["name"] for r in study._db.query("SELECT name FROM raters ORDER BY name")]
    except BaseException as exc:
        said[key] = type(exc).__name__

sys.meta_path.insert(0, HoldSqliteUtilsDb())
a = threading.Thread(target=ask, args=(first, "a"))
a.start()
assert started.wait(30)
b = threading.Thread(target=ask, args=(second, "b"))
b.start()
b.join(1.0)  # with the defect B has failed by now; waiting for A's import it is still running
release.set()
a.join(30)
b.join(30)
print(json.dumps(said))
"""


def test_a_second_thread_waits_for_the_first_threads_import_of_sqlite_utils(tmp_path):
    db = story_study(tmp_path / "s.db")
    done = subprocess.run([sys.executable, "-c", _RACE, str(db)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said == {"a": [], "b": []}
