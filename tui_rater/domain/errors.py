"""Errors a user can cause. The CLI prints their message as one sentence and exits 2."""


class UserError(Exception):
    """Bad input from the user: a file, a flag, a task definition, a config value."""

    exit_code = 2


class StudyMoved(UserError):
    """The study's path no longer names the file a connection holds: what it writes goes into a journal
    nobody reads again (SQLite keeps the ``-wal`` by name)."""


class StudyLocked(Exception):
    """Another process still holds the study file's write lock after the wait asked for (no user's error: the app
    waits and tries again)."""
