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
        run("judge", "--db", db, "--model", "api:m", "--base-url", good, "--limit", "2", "--samples", "1").returncode
        == 0
    )
    assert answered.headers[0].get("authorization") == f"Bearer {KEY}"  # the planted key is the one in use
    refusing = fake_server(Script([(401, {}, ERR, 0)]))
    failed = run("judge", "--db", db, "--model", "api:other", "--base-url", refusing, "--limit", "1", "--samples", "1")
    assert failed.returncode == 2 and "refused the API key" in failed.stderr
    dead = f"http://127.0.0.1:{free_port()}/v1"
    run(
        "judge",
        "--db",
        db,
        "--model",
        "api:third",
        "--base-url",
        dead,
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
    config = tmp_path / "config.toml"
    config.write_text(f'[judge]\napi_key = "{KEY}"\n')
    os.chmod(config, 0o644)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["TUI_RATER_CONFIG"] = str(config)
    db = tmp_path / "s.db"
    run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db, env=env)
    script = Script([(200, {}, ok_body(), 0)])
    url = fake_server(script)
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
    judged = run("judge", "--db", db, "--model", "api:zoo", "--base-url", secret_url, "--samples", "1")
    assert judged.returncode == 0, judged.stderr
    # the query reached the server (the client does not lose it) ...
    assert behaviour.queries and all(q.get("api_key") == [QUERY_KEY] for q in behaviour.queries)
    # ... and the judge's provenance keeps the URL without the user, the password and the key
    config = json.loads(sqlite3.connect(db).execute("SELECT config FROM raters WHERE kind = 'llm'").fetchone()[0])
    assert config["base_url"] == f"http://{host}?api_key=[redacted]&api-version=2024-06-01"
    refusing = fake_server(Script([(401, {}, ERR, 0)]))
    refused_url = f"http://alice:{PASSWORD}@{refusing.removeprefix('http://')}?api_key={QUERY_KEY}"
    refused = run("judge", "--db", db, "--model", "api:other", "--base-url", refused_url, "--samples", "1")
    assert refused.returncode == 2 and "refused the API key" in refused.stderr
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
