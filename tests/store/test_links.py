"""Personal browser links (`serve`): the study keeps only the SHA-256 of each token."""

from __future__ import annotations

import hashlib

from tests.support import story_study
from tui_rater.store.links import LinkBook, new_link, stored_links
from tui_rater.store.study import Study


def study_bytes(db) -> bytes:
    """The study file and its WAL / shared-memory files, as they are on disk."""
    return b"".join(path.read_bytes() for path in sorted(db.parent.glob(db.name + "*")))


def test_only_the_hash_of_a_token_is_in_the_file(tmp_path):
    db = story_study(tmp_path / "s.db")
    study = Study.open(db)
    alice, bob = new_link(study, "alice"), new_link(study, "bob")
    on_disk = study_bytes(db)  # the connection still open: the WAL holds the latest pages
    study.close()
    on_disk += study_bytes(db)
    for link in (alice, bob):
        assert link.token and len(link.token) >= 43  # 256 bits, URL-safe
        assert link.token.encode() not in on_disk
        assert hashlib.sha256(link.token.encode()).hexdigest().encode() in on_disk
    study = Study.open(db)
    book = LinkBook(study, "story", ["alice", "bob"])
    assert (book.annotator(alice.token), book.annotator(bob.token)) == ("alice", "bob")
    assert all(link.token is None for link in stored_links(study).values())  # nothing to read a token back from
    study.close()


def test_a_new_link_replaces_the_old_one_and_only_named_annotators_open(tmp_path):
    db = story_study(tmp_path / "s.db")
    study = Study.open(db)
    old = new_link(study, "alice")
    bob = new_link(study, "bob")
    new = new_link(study, "alice")
    assert new.token != old.token
    both, alone = LinkBook(study, "story", ["alice", "bob"]), LinkBook(study, "story", ["alice"])
    assert [both.annotator(t) for t in (old.token, new.token, bob.token)] == [None, "alice", "bob"]
    assert [alone.annotator(t) for t in (new.token, bob.token, "")] == ["alice", None, None]  # bob's link not served
    assert sorted(stored_links(study)) == ["alice", "bob"]
    study.close()
