"""`tui-rater serve` over HTTP (no browser): the links, the 403 page, the loopback rule, restarts and --new-links.

The browser test (a real Chromium rating through the link) is tests/ui/test_browser.py."""

from __future__ import annotations

import http.client
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from tests.serving import ServeProcess, children
from tests.support import digest, run_cli_process, story_study


def status(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def websocket_status(url: str) -> int:
    """The answer to a websocket handshake on ``url`` (101: accepted, an app is started)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request(
        "GET",
        parts.path,
        headers={
            "Connection": "Upgrade",
            "Upgrade": "websocket",
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        },
    )
    code = conn.getresponse().status
    conn.close()
    return code


def test_the_app_command_rates_under_the_name_exactly_whatever_it_holds(tmp_path):
    """The command runs in a shell (textual-serve starts it so): a name is one quoted word, read back by the
    real parser as it was given, even when it looks like a flag or holds shell syntax."""
    import shlex

    from tui_rater.cli import _parser
    from tui_rater.cli.serving import annotate_command

    for name in ("alice", "-x", "o'brien; touch pwned", "$(id) `id` && |", "zoë smith"):
        words = shlex.split(annotate_command(tmp_path / "s.db", "story", name, ["tasks.toml"]))
        assert words[0] == "exec" and words[2:5] == ["-m", "tui_rater.cli", "annotate"]
        args = _parser().parse_args(words[4:])
        assert (args.annotator, args.task, args.db) == (name, "story", str(tmp_path / "s.db"))
        assert args.task_file == [str(Path("tasks.toml").resolve())]


def test_a_public_address_needs_public(tmp_path):
    db = story_study(tmp_path / "s.db")
    before = digest(db)
    result = run_cli_process("serve", "--db", db, "--task", "story", "--annotators", "alice", "--host", "0.0.0.0")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--public" in result.stderr and "SSH tunnel" in result.stderr
    assert result.stdout == ""
    assert digest(db) == before  # no link made


def test_a_busy_port_is_one_sentence_and_makes_no_link(tmp_path):
    import socket

    db = story_study(tmp_path / "s.db")
    before = digest(db)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run_cli_process("serve", "--db", db, "--task", "story", "--annotators", "alice", "--port", port)
    assert result.returncode == 2
    assert result.stderr == f"tui-rater: error: cannot listen on 127.0.0.1 port {port}: Address already in use\n"
    assert digest(db) == before


def test_bad_annotators_and_tasks_are_one_sentence(tmp_path):
    db = story_study(tmp_path / "s.db")
    before = digest(db)
    for args, words in (
        (["--task", "story", "--annotators", "alice,,bob"], "comma-separated"),
        (["--task", "hanna", "--annotators", "alice"], "no items of task"),
    ):
        result = run_cli_process("serve", "--db", db, *args)
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and words in result.stderr
    assert digest(db) == before


def test_wrong_or_missing_tokens_get_the_403_page_and_start_nothing(tmp_path):
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice,bob")
    try:
        links = server.links()
        assert sorted(links) == ["alice", "bob"] and links["alice"] != links["bob"]
        assert "ssh -N -L" in server.output()
        alice = links["alice"]
        wrong = alice[:-4] + ("AAAA" if not alice.endswith("AAAA") else "BBBB")
        for url in (server.base + "/", server.base + "/a/", wrong, server.base + "/a/" + "x" * 43, wrong + "/x"):
            code, page = status(url)
            assert code == 403, url
            assert "This link does not open the study" in page and "--new-links" in page
        for url in (wrong + "/ws", server.base + "/a//ws", server.base + "/ws"):
            assert websocket_status(url) == 403, url
        assert children(server.process.pid) == []  # no app process for any of them
        assert "session started" not in server.output()
        code, page = status(alice)  # the good link: the page only; the app starts with its websocket
        assert code == 200 and "/a/" in page and "ws://" in page
        assert children(server.process.pid) == []
    finally:
        assert server.stop() == 0, server.output()


def test_links_survive_a_restart_and_new_links_replaces_them(tmp_path):
    db = story_study(tmp_path / "s.db")
    first = ServeProcess(db, "--task", "story", "--annotators", "alice")
    alice = first.links()["alice"]
    assert first.stop() == 0
    token = alice.rsplit("/", 1)[1]

    second = ServeProcess(db, "--task", "story", "--annotators", "alice,bob")  # bob is new; alice's link stays
    try:
        assert list(second.links()) == ["bob"]
        assert token not in second.output() and "alice: link made" in second.output()
        assert status(second.base + "/a/" + token)[0] == 200  # the same token opens alice's page again
    finally:
        assert second.stop() == 0

    third = ServeProcess(db, "--task", "story", "--annotators", "alice", "--new-links")
    try:
        assert list(third.links()) == ["alice"] and token not in third.links()["alice"]
        assert status(third.base + "/a/" + token)[0] == 403  # the old link no longer opens
        assert status(third.links()["alice"])[0] == 200
    finally:
        assert third.stop() == 0
    conn = sqlite3.connect(db)
    assert sorted(conn.execute("SELECT annotator FROM web_links")) == [("alice",), ("bob",)]
    conn.close()
