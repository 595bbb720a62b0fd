"""The texts of a session's items, read when they are shown: a small cache filled ahead of the person.

A session holds every item's key, id and place (``ItemHead``), and the texts only of the items around the
one on screen: 20,000 stories are ~40 MB of text that a browser session (one process each, ``serve``) would
otherwise hold from its start. The app reads ahead from a worker after each move (``read_ahead``), so the
next and previous items are here before they are shown; a jump elsewhere (go to item 9,000) reads one row
by its key. Reads use a connection of their own: they never queue behind the session's saves, which may be
waiting for another process's write lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from tui_rater.domain.values import Item
from tui_rater.store.study import Study

# items kept: the read-ahead window (``AnnotationSession.read_ahead``) and a few the person went back to
CAPACITY = 32


class ItemTexts:
    def __init__(self, study: Study, capacity: int = CAPACITY):
        self.study = study  # its own connection (``Study.reopen``), for reads only
        self.capacity = capacity
        self.read = 0  # items read from the file so far, texts and all (what a session's start costs: tested)
        self._cache: OrderedDict[int, Item] = OrderedDict()
        self._lock = threading.Lock()  # the cache, between the UI thread and the read-ahead worker
        self._reading = threading.Lock()  # one read at a time on the connection

    def get(self, key: int) -> Item:
        with self._lock:
            item = self._cache.get(key)
            if item is not None:
                self._cache.move_to_end(key)
                return item
        found = self._read([key])
        if key not in found:
            raise KeyError(key)
        return found[key]

    def missing(self, keys: Sequence[int]) -> list[int]:
        with self._lock:
            return [key for key in keys if key not in self._cache]

    def read_ahead(self, keys: Sequence[int]) -> int:
        """Read the items of ``keys`` not held yet; returns how many were read."""
        missing = self.missing(keys)
        return len(self._read(missing)) if missing else 0

    def _read(self, keys: Sequence[int]) -> dict[int, Item]:
        with self._reading:
            found = self.study.items_of(keys)
        with self._lock:
            self.read += len(found)
            for key, item in found.items():
                self._cache[key] = item
                self._cache.move_to_end(key)
            while len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        return found

    def close(self) -> None:
        with self._reading:
            self.study.close()
