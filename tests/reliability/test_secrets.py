"""A planted API key never reaches the study file, exports, reports, logs or error messages."""

from __future__ import annotations

import json
import os
import sqlite3
import stat

import pytest

from tests import zoo
from tests.support import ERR, SAMPLE, Script, free_port, ok_body, run_cli_process

KEY = "sk-PLANTED-7f3a9c1e5b2d4a6c8e0f"
# $OPENAI_API_KEY goes to api.openai.com only: these loopback servers get it because the tests name it
NAMED = ("--api-key-env", "OPENAI_API_KEY")


@pytest.mark.slow  # the unreachable server is retried with back-off (about 30 s)
def test_planted_key_appears_nowhere(tmp_path, fake_server):
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    db = tmp_path / "s.db"
    outputs = []

    def run(*args):
        result = run_cli_process(*args, env=env)
        outputs.extend([result.stdout, result.stderr])
        return result

    run("import", SAMPLE / "stories.csv", "--task", "story", "--db", db)
    answered = Script([(200, {}, ok_body(), 0)])
    good = fake_server(answered)
    assert (
        run(
            "judge", "--db", db, "--model", "api:m", "--base-url", good, *NAMED, "--limit", "2", "--samples", "1"
        ).returncode
        == 0
    )
    assert answered.headers[0].get("authorization") == f"Bearer {KEY}"  # the planted key is the one in use
    refusing = fake_server(Script([(401, {}, ERR, 0)]))
    failed = run(
        "judge", "--db", db, "--model", "api:other", "--base-url", refusing, *NAMED, "--limit", "1", "--samples", "1"
    )
    assert failed.returncode == 2 and "refused the request (401); check $OPENAI_API_KEY" in failed.stderr
    dead = f"http://127.0.0.1:{free_port()}/v1"
    run(
        "judge",
        "--db",
        db,
        "--model",
        "api:third",
        "--base-url",
        dead,
        *NAMED,
        "--limit",
        "1",
        "--samples",
        "1",
        "--timeout",
        "1",
        "--max-retries",
        "0",
    )
    run("queue", "--db", db)
    run("info", "--db", db, "--json")
    for what in ("items", "ratings", "wide"):
        run("export", "--db", db, "--what", what, "--out", tmp_path / f"{what}.csv")
    run("report", "--db", db, "--format", "json", "--out", tmp_path / "report.json")
    run("report", "--db", db)
    files = [p for p in tmp_path.iterdir() if p.is_file()]
    assert any(p.name.startswith("s.db") for p in files)
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path.name
    for text in outputs:
        assert KEY not in text


def test_key_from_config_file_and_permission_warning(tmp_path, fake_server):
    script = Script([(200, {}, ok_body(), 0)])
    url = fake_server(script)
    config = tmp_path / "config.toml"
    config.write_text(f'[judge]\napi_key = "{KEY}"\nbase_url = "{url}"\n')  # the key of that server
    os.chmod(config, 0o644)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["TUI_RATER_CONFIG"] = str(config)
    db = tmp_path / "s.db"
    run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db, env=env)
    result = run_cli_process(
        "judge", "--db", db, "--model", "api:m", "--base-url", url, "--limit", "1", "--samples", "1", env=env
    )
    assert result.returncode == 0
    assert script.headers and all(h.get("authorization") == f"Bearer {KEY}" for h in script.headers)  # it was used
    assert "readable by other users" in result.stderr and KEY not in result.stderr + result.stdout
    os.chmod(config, 0o600)
    quiet = run_cli_process("info", "--db", db, env=env)
    assert "readable by other users" not in quiet.stderr
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600


PASSWORD = "pw-IN-THE-URL-93c1d7"
QUERY_KEY = "qk-IN-THE-QUERY-5e2a8f"


def test_credentials_in_the_base_url_are_sent_but_never_stored_or_shown(tmp_path, fake_server, serve_zoo):
    items = tmp_path / "items.csv"
    items.write_text("id,system,prompt,story\ngood,h,P,CASE=good. A story.\nkey_echo,h,P,CASE=key_echo. A story.\n")
    db = tmp_path / "s.db"
    env = {**os.environ, "OPENAI_API_KEY": zoo.KEY}
    outputs = []

    def run(*args):
        result = run_cli_process(*args, env=env)
        outputs.extend([result.stdout, result.stderr])
        return result

    assert run("import", items, "--task", "story", "--db", db).returncode == 0
    behaviour, url = serve_zoo()
    host = url.removeprefix("http://")
    secret_url = f"http://alice:{PASSWORD}@{host}?api_key={QUERY_KEY}&api-version=2024-06-01"
    judged = run("judge", "--db", db, "--model", "api:zoo", "--base-url", secret_url, *NAMED, "--samples", "1")
    assert judged.returncode == 0, judged.stderr
    # the query reached the server (the client does not lose it) ...
    assert behaviour.queries and all(q.get("api_key") == [QUERY_KEY] for q in behaviour.queries)
    # ... and the judge's provenance keeps the URL without the user, the password and the key
    config = json.loads(sqlite3.connect(db).execute("SELECT config FROM raters WHERE kind = 'llm'").fetchone()[0])
    assert config["base_url"] == f"http://{host}?api_key=[redacted]&api-version=2024-06-01"
    refusing = fake_server(Script([(401, {}, ERR, 0)]))
    refused_url = f"http://alice:{PASSWORD}@{refusing.removeprefix('http://')}?api_key={QUERY_KEY}"
    refused = run("judge", "--db", db, "--model", "api:other", "--base-url", refused_url, *NAMED, "--samples", "1")
    assert refused.returncode == 2 and "refused the request (401)" in refused.stderr
    run("queue", "--db", db)
    run("info", "--db", db, "--json")
    run("export", "--db", db, "--what", "ratings", "--out", tmp_path / "ratings.csv")
    run("report", "--db", db, "--format", "json", "--out", tmp_path / "report.json")
    raws = [r[0] for r in sqlite3.connect(db).execute("SELECT raw FROM ratings WHERE raw IS NOT NULL")]
    assert any("Your key [key] works" in raw for raw in raws)  # the server echoed the key: replaced
    for path in tmp_path.iterdir():
        if path.is_file():
            data = path.read_bytes()
            for secret in (PASSWORD, QUERY_KEY, zoo.KEY):
                assert secret.encode() not in data, (path.name, secret)
    for text in outputs:
        for secret in (PASSWORD, QUERY_KEY, zoo.KEY):
            assert secret not in text


def test_a_base_url_that_is_not_one_is_one_sentence(tmp_path):
    db = tmp_path / "s.db"
    run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db)
    for url in ("127.0.0.1:8080/v1", "ftp://host/v1", "http://[::1/v1", "http://host:port/v1"):
        result = run_cli_process("judge", "--db", db, "--model", "api:m", "--base-url", url)
        assert result.returncode == 2 and "--base-url" in result.stderr and "Traceback" not in result.stderr, url


ENCODED_SIG = "Zm9v%2BYmFy%2F4xQ"  # a signature as a URL carries it; decoded "Zm9v+YmFy/4xQ"
SHORT_TOKEN = "TOK777"


@pytest.fixture
def echo_server():
    """A loopback server that answers every completion with the raw request line it got (the query
    percent-encoded as sent, as a proxy's error page or a debug echo would), and records the headers."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            seen.append({k.lower(): v for k, v in self.headers.items()})
            echo = f"Rating: 4. You called {self.path} with {self.headers.get('authorization')}"
            body = json.loads(ok_body())
            body["choices"][0]["message"]["content"] = echo
            payload = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()


def test_echoed_secrets_are_never_stored_in_any_encoding(tmp_path, echo_server):
    url, _ = echo_server
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    secret_url = f"{url}?sig={ENCODED_SIG}&token={SHORT_TOKEN}&api-version=2024-06-01"
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    judged = run_cli_process(
        "judge", "--db", db, "--model", "api:echo", "--base-url", secret_url, *NAMED, "--limit", "2", "--samples",
        "1", env=env,
    )  # fmt: skip
    assert judged.returncode == 0, judged.stderr
    raws = [r[0] for r in sqlite3.connect(db).execute("SELECT raw FROM ratings WHERE raw IS NOT NULL")]
    assert raws and all("You called /v1/chat/completions?sig=[key]&token=[key]&api-version=" in r for r in raws), raws
    out = tmp_path / "judgements.jsonl"
    assert run_cli_process("export", "--db", db, "--what", "judgements", "--out", out).returncode == 0
    for path in (db, out):
        data = path.read_bytes()
        for secret in (ENCODED_SIG, "Zm9v+YmFy/4xQ", SHORT_TOKEN, KEY, "Zm9v%2bYmFy%2f4xQ"):
            assert secret.encode() not in data, (path.name, secret)


def test_the_openai_key_is_not_sent_to_another_server_unless_named(tmp_path, echo_server):
    url, seen = echo_server
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    judged = run_cli_process(
        "judge", "--db", db, "--model", "api:echo", "--base-url", url, "--limit", "1", "--samples", "1", env=env
    )
    assert judged.returncode == 0, judged.stderr
    assert seen and all(KEY not in h.get("authorization", "") for h in seen)
    env["OTHER_KEY"] = "sk-OTHER-for-this-server-0042"
    named = run_cli_process(
        "judge", "--db", db, "--model", "api:echo2", "--base-url", url, "--api-key-env", "OTHER_KEY", "--limit", "1",
        "--samples", "1", env=env,
    )  # fmt: skip
    assert named.returncode == 0, named.stderr
    assert seen[-1]["authorization"] == "Bearer sk-OTHER-for-this-server-0042"


def test_annotate_gives_each_api_judge_its_own_server(tmp_path):
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    result = run_cli_process(
        "annotate", "--db", db, "--annotator", "amy", "--judge", "api:a", "--judge", "api:b", "--base-url",
        "http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert result.returncode == 2 and "give one --base-url per API judge (2)" in result.stderr, result.stderr
