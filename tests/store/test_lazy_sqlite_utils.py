"""sqlite-utils is imported at the study's first write or query (issue 35 item 4), not when the store is: a command
that only reads through the connection (`info`) never waits for it, and every write still goes through sqlite-utils'
``Database``. Each case in a fresh process: the test process has imported everything long ago."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import story_study

_PROBE = """
import json, sys
from tui_rater.store.study import Study
study = Study.open(sys.argv[1], create=False)
said = {"after_open": "sqlite_utils" in sys.modules}
study.info()
study.item(1)
said["after_reads"] = "sqlite_utils" in sys.modules
rater = study.human("ann")
said["after_write"] = "sqlite_utils" in sys.modules
import sqlite_utils
said["database"] = isinstance(study._db.database, sqlite_utils.Database)
said["same_connection"] = study._db.database.conn is study._db.conn
said["numpy"] = "numpy" in sys.modules  # hidden from sqlite-utils' import: nothing here uses it
said["recursive_triggers"] = study._db.conn.execute("PRAGMA recursive_triggers").fetchone()[0]
fresh = Study.open(sys.argv[1], create=False)
said["fresh_recursive_triggers"] = fresh._db.conn.execute("PRAGMA recursive_triggers").fetchone()[0]
said["query"] = [r["name"] for r in fresh._db.query("SELECT name FROM raters")]
print(json.dumps(said))
"""


def _probe(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_reads_leave_sqlite_utils_unimported_and_the_first_write_imports_it(tmp_path):
    db = story_study(tmp_path / "s.db")
    said = _probe(_PROBE, str(db))
    assert said == {
        "after_open": False,
        "after_reads": False,
        "after_write": True,
        "database": True,
        "same_connection": True,
        "numpy": False,
        # what sqlite-utils' Database sets on its connection, set at open: the same before and after it is made
        "recursive_triggers": 1,
        "fresh_recursive_triggers": 1,
        "query": ["ann"],
    }


_THREADS = """
import json, sys, threading
from tui_rater.store import _HiddenFromThisThread
finder = _HiddenFromThisThread()
sys.meta_path.insert(0, finder)
try:
    import numpy
    hidden_here = False
except ImportError:
    hidden_here = True
found = []
other = threading.Thread(target=lambda: found.append(__import__("numpy").__name__))
other.start()
other.join()
sys.meta_path.remove(finder)
print(json.dumps({"hidden_here": hidden_here, "other_thread": found}))
"""


def test_numpy_is_hidden_from_the_importing_thread_only():
    """The import is lazy, so another thread may import numpy meanwhile (the app's agreement pane): hiding numpy
    process-wide (``sys.modules["numpy"] = None``, as when it ran at the store's import) would fail that import."""
    assert _probe(_THREADS) == {"hidden_here": True, "other_thread": ["numpy"]}
