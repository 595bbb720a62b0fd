"""Errors a user can cause. The CLI prints their message as one sentence and exits 2."""


class UserError(Exception):
    """Bad input from the user: a file, a flag, a task definition, a config value."""

    exit_code = 2
