"""A planted API key never reaches the study file, exports, reports, logs or error messages."""

from __future__ import annotations

import os
import stat

import pytest

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
