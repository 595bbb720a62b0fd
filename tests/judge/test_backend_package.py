"""A third judge backend in the user's own package (CONTRIBUTING.md, "Add a backend"), used by a separate process.

The module and the ``pyproject.toml`` are read from CONTRIBUTING.md's walk-through, installed by pip into a folder
of its own (the test environment is left as it was), and asked by the real CLI: ``tui-rater judge --model
echo:parrot --base-url URL`` judges a study against a loopback server that speaks no OpenAI (``POST /say``,
``{"said": [...]}``). Nothing in tui_rater names the backend. The built-ins are found the same way, and without
any package metadata (this checkout is on ``PYTHONPATH``; the venv's installed metadata predates their entry points).
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.judge.test_fourth_protocol_package import cli, install, one_sentence
from tests.support import ROOT, STORIES, story_study


def _walk_through(fence: str, marker: str) -> str:
    """The ``fence`` block of CONTRIBUTING.md's backend walk-through that holds ``marker``."""
    blocks = re.findall(rf"```{fence}\n(.*?)```", (ROOT / "CONTRIBUTING.md").read_text(), flags=re.DOTALL)
    [block] = [b for b in blocks if marker in b]
    return block


MODULE = _walk_through("python", "class Echo(JudgeBackend)")
PYPROJECT = _walk_through("toml", '[project.entry-points."tui_rater.backends"]')


def install_backend(tmp_path, module: str = MODULE, pyproject: str = PYPROJECT) -> dict[str, str]:
    return install(tmp_path, module, pyproject, module_name="echo_backend")


class EchoServer:
    """A loopback server of another shape than OpenAI's: ``POST /say {"voice", "prompt", "seed"}`` answers
    ``{"said": [...]}`` -- a 4 for every question, written as words."""

    def __init__(self) -> None:
        self.heard: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.heard.append(body | {"user-agent": self.headers.get("User-Agent")})
                reply = json.dumps({"said": ["I", "would", "say", "4"]}).encode() if self.path == "/say" else b"{}"
                self.send_response(200 if self.path == "/say" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def echo_server():
    server = EchoServer()
    yield server
    server.close()


def test_a_backend_from_the_users_own_package_judges_a_study_in_a_separate_process(tmp_path, echo_server):
    db = story_study(tmp_path / "study.db")
    judging = ("judge", "--db", db, "--model", "echo:parrot", "--base-url", echo_server.url, "--samples", "1")

    # not installed: echo:parrot is no backend's, so it is a model file that does not exist; nothing is asked
    assert "model file echo:parrot does not exist" in one_sentence(cli(*judging))
    assert echo_server.heard == []

    env = install_backend(tmp_path)
    done = cli(*judging, env=env)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(db) as conn:
        judged = conn.execute("SELECT value, parse_status FROM ratings WHERE job_id IS NOT NULL").fetchall()
        [(name, config)] = conn.execute("SELECT name, config FROM raters WHERE kind = 'llm'").fetchall()
        sources = conn.execute("SELECT source, served_model FROM judge_sources").fetchall()
    conn.close()
    attributes = 4  # the story task's four questions, one sample each
    assert judged == [(4.0, "ok")] * (len(STORIES) * attributes)
    # the server heard the papers' prompts in its own shape, each story in one of them
    assert len(echo_server.heard) == len(judged) and {body["voice"] for body in echo_server.heard} == {"parrot"}
    assert all(any(s["story"] in body["prompt"] for s in STORIES) for body in echo_server.heard)
    # the judge's identity is the backend's: its name, its model and its server; its sources are where replies came from
    identity = json.loads(config)
    assert (identity["backend"], identity["model_id"], identity["base_url"]) == ("echo", "parrot", echo_server.url)
    assert "n_ctx" not in identity and "api_model" not in identity
    assert name.startswith("echo:parrot/text/")
    assert set(sources) == {(echo_server.url + "/say", "parrot")}

    # judging again is the same judge: nothing left to ask
    asked = len(echo_server.heard)
    assert (done := cli(*judging, env=env)).returncode == 0, done.stderr
    assert len(echo_server.heard) == asked


def _judges(db) -> list[tuple[str, dict]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT name, config FROM raters WHERE kind = 'llm' ORDER BY id").fetchall()
    conn.close()
    return [(name, json.loads(config)) for name, config in rows]


def test_a_backends_own_options_reach_it_from_the_command_line_and_only_identity_ones_make_another_judge(
    tmp_path, echo_server
):
    """Issue 31 item 3: a third-party backend declares options of its own (``BackendOption``); a separate
    `tui-rater judge` process hands them over, parsed, with the defaults filled in; another `pitch` (declared part
    of the identity) is another judge, another `tag` (declared not) is the same judge."""
    db = story_study(tmp_path / "study.db")
    env = install_backend(tmp_path)
    judging = ("judge", "--db", db, "--model", "echo:parrot", "--base-url", echo_server.url, "--samples", "1")
    assert (done := cli(*judging, env=env)).returncode == 0, done.stderr
    assert {(b["pitch"], b["user-agent"]) for b in echo_server.heard} == {(0, "echo/tui-rater")}  # the defaults
    [(_first, identity)] = _judges(db)
    assert identity["extra"] == {"pitch": 0}  # the tag is no part of the identity
    asked = len(echo_server.heard)

    # another tag: the same judge, nothing left to ask
    assert (done := cli(*judging, "--backend-option", "tag=lab-7", env=env)).returncode == 0, done.stderr
    assert len(echo_server.heard) == asked and len(_judges(db)) == 1

    # another pitch: another judge, which asks every question again, with its pitch and tag
    done = cli(*judging, "--backend-option", "pitch=3", "--backend-option", "tag=lab-7", env=env)
    assert done.returncode == 0, done.stderr
    again = echo_server.heard[asked:]
    assert len(again) == asked and {(b["pitch"], b["user-agent"]) for b in again} == {(3, "echo/lab-7")}
    (_, first), (_, second) = _judges(db)
    assert second["extra"] == {"pitch": 3} and first["extra"] == {"pitch": 0}


@pytest.mark.parametrize(
    ("flag", "sentence"),
    [
        ("pitch=high", "--backend-option pitch=high: the echo backend's option 'pitch' is a whole number"),
        ("volume=11", "the echo backend has no option 'volume' (its options: pitch, tag)"),
        ("pitch", "--backend-option takes NAME=VALUE, not 'pitch'"),
    ],
)
def test_a_backend_option_the_backend_cannot_take_is_one_sentence_and_nothing_is_stored(
    tmp_path, echo_server, flag, sentence
):
    db = story_study(tmp_path / "study.db")
    env = install_backend(tmp_path)
    before = db.read_bytes()
    judging = ("judge", "--db", db, "--model", "echo:parrot", "--base-url", echo_server.url, "--backend-option", flag)
    assert sentence in one_sentence(cli(*judging, env=env))
    assert db.read_bytes() == before and echo_server.heard == []


def _config(tmp_path, text: str, env: dict[str, str]) -> tuple[str, dict[str, str]]:
    path = tmp_path / "config.toml"
    path.write_text(text)
    path.chmod(0o600)
    return str(path), {**env, "TUI_RATER_CONFIG": str(path)}


def test_a_backends_own_options_come_from_the_config_file_and_its_flags_win(tmp_path, echo_server):
    """Issue 31 item 3: the config file's [judge.options.echo] table reaches the backend in a separate process; the
    same pitch from the file or from a flag is the same judge; a flag wins over the file, option by option."""
    db = story_study(tmp_path / "study.db")
    env = install_backend(tmp_path)
    _, configured = _config(tmp_path, '[judge.options.echo]\npitch = 3\ntag = "from-file"\n', env)
    judging = ("judge", "--db", db, "--model", "echo:parrot", "--base-url", echo_server.url, "--samples", "1")
    assert (done := cli(*judging, env=configured)).returncode == 0, done.stderr
    assert {(b["pitch"], b["user-agent"]) for b in echo_server.heard} == {(3, "echo/from-file")}
    [(name, identity)] = _judges(db)
    assert identity["extra"] == {"pitch": 3}
    asked = len(echo_server.heard)

    # pitch 3 from a flag, no config file: the same judge, nothing left to ask
    assert (done := cli(*judging, "--backend-option", "pitch=3", env=env)).returncode == 0, done.stderr
    assert len(echo_server.heard) == asked and [n for n, _ in _judges(db)] == [name]

    # the flag's pitch over the file's, the file's tag kept: another judge
    assert (done := cli(*judging, "--backend-option", "pitch=5", env=configured)).returncode == 0, done.stderr
    again = echo_server.heard[asked:]
    assert len(again) == asked and {(b["pitch"], b["user-agent"]) for b in again} == {(5, "echo/from-file")}
    assert [identity["extra"] for _, identity in _judges(db)] == [{"pitch": 3}, {"pitch": 5}]


CONFIG_REFUSED = {
    "unknown option": (
        "[judge.options.echo]\nvolume = 11\n",
        "echo:parrot",
        "{path}: [judge.options.echo]: the echo backend has no option 'volume' (its options: pitch, tag)",
    ),
    "bad value": (
        '[judge.options.echo]\npitch = "high"\n',
        "echo:parrot",
        "{path}: [judge.options.echo] pitch = \"high\": the echo backend's option 'pitch' is a whole number",
    ),
    "misspelt backend": (
        "[judge.options.ecco]\npitch = 3\n",
        "echo:parrot",
        "{path}: [judge.options.ecco] names no installed judge backend (the installed ones are echo, llama.cpp, "
        "openai-compatible)",
    ),
    "no backend's table": (
        "[judge.options]\npitch = 3\n",
        "echo:parrot",
        "{path}: [judge.options] holds one table per backend, e.g. [judge.options.echo] with pitch = 3",
    ),
    "a built-in's table": (
        "[judge.options.openai-compatible]\ntimeout_s = 5\n",
        "api:m",
        "{path}: [judge.options.openai-compatible]: the openai-compatible backend takes no options there (its "
        "settings are flags of their own: --base-url, --api-key-env, --timeout)",
    ),
}


@pytest.mark.parametrize("case", list(CONFIG_REFUSED))
def test_a_config_file_option_the_backend_cannot_take_is_one_sentence_and_nothing_is_stored(
    tmp_path, echo_server, case
):
    text, model, sentence = CONFIG_REFUSED[case]
    db = story_study(tmp_path / "study.db")
    path, env = _config(tmp_path, text, install_backend(tmp_path))
    before = db.read_bytes()
    said = one_sentence(cli("judge", "--db", db, "--model", model, "--base-url", echo_server.url, env=env))
    assert said == f"tui-rater: error: {sentence.format(path='config file ' + path)}\n"
    assert db.read_bytes() == before and echo_server.heard == []


def test_a_built_in_backend_takes_no_backend_option(tmp_path):
    db = story_study(tmp_path / "study.db")
    before = db.read_bytes()
    said = one_sentence(cli("judge", "--db", db, "--model", "api:m", "--base-url", "http://127.0.0.1:9",
                            "--backend-option", "x=1"))  # fmt: skip
    assert "the openai-compatible backend takes no --backend-option" in said
    assert db.read_bytes() == before


def test_a_backend_that_reads_no_probabilities_stops_a_distribution_judge_in_one_sentence(tmp_path, echo_server):
    db = story_study(tmp_path / "study.db")
    env = install_backend(tmp_path)
    done = cli(
        "judge", "--db", db, "--model", "echo:parrot", "--base-url", echo_server.url, "--mode", "distribution", env=env
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "EchoClient reads no next-token probabilities; use --mode text" in done.stderr
    assert echo_server.heard == []


BROKEN = {
    "takes a built-in name": (
        MODULE,
        PYPROJECT + '"openai-compatible" = "echo_backend:Echo"\n',
        "the package 'echo-backend' registers a backend named 'openai-compatible' (entry points "
        "'tui_rater.backends'), which is a built-in backend's name",
    ),
    "names no backend": (
        "Echo = 7\n",
        PYPROJECT,
        "the package 'echo-backend' registers the backend 'echo' as 'echo_backend:Echo', but it is not a backend",
    ),
    "calls itself by another name": (
        MODULE.replace('name: ClassVar[str] = "echo"', 'name: ClassVar[str] = "parrot"'),
        PYPROJECT,
        "but its class calls itself 'parrot' with the prefix 'echo'",
    ),
    "fails to import": (
        MODULE + "\nraise ImportError('no module named echo_helpers')\n",
        PYPROJECT,
        "which cannot be loaded (ImportError: no module named echo_helpers)",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_package_whose_backend_cannot_be_used_is_one_sentence(tmp_path, case, echo_server):
    module, pyproject, sentence = BROKEN[case]
    db = story_study(tmp_path / "study.db")
    env = install_backend(tmp_path, module, pyproject)
    before = db.read_bytes()
    judging = ("judge", "--db", db, "--model", "echo:parrot", "--base-url", echo_server.url, "--samples", "1")
    assert sentence in one_sentence(cli(*judging, env=env))
    assert db.read_bytes() == before and echo_server.heard == []


def test_the_builtins_are_registered_by_name_as_pyproject_declares_them():
    """The registry's built-ins are tui-rater's own entry points (they cannot drift apart), and they are found
    without the package's metadata: no entry point is read for a built-in model spec."""
    from tui_rater.judge.backends import registry

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][registry.GROUP]
    assert declared == registry.BUILTIN
    assert registry.backend_name("api:gpt-4o-mini") == "openai-compatible"
    assert registry.backend_name("/models/x.gguf") == "llama.cpp"
    for name in declared:
        kind = registry.backend(name)
        assert kind.name == name
