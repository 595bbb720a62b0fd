"""Another process holding the study file's write lock (``BEGIN IMMEDIATE``), as a colleague's
import would: prints LOCKED once it holds it, releases it (ROLLBACK) when a line arrives on stdin
or stdin closes, prints RELEASED and exits."""

import sqlite3
import sys

conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
conn.execute("BEGIN IMMEDIATE")
print("LOCKED", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
print("RELEASED", flush=True)
