"""The API judge against the real llama-cpp-python OpenAI-compatible server, and its error paths
against a small HTTP server on 127.0.0.1 that answers what we tell it to."""

from __future__ import annotations

import json
import re
from importlib import metadata

import pytest

from tests.judge.distributions import check_reading, question, server_truth
from tests.support import ERR, STORIES, Script, free_port, judge, ok_body, spec_of
from tui_rater.domain import protocols
from tui_rater.domain.decoding import Decoding
from tui_rater.judge import queue
from tui_rater.judge.spec import JudgeSpec, provenance, rater_name
from tui_rater.judge.worker import run_judge

PLANTED_KEY = "sk-test-PLANTED-0123456789abcdef"


def test_text_mode_through_the_real_server(story_study, llama_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED_KEY)
    rater, _progress, rows = judge(
        story_study,
        JudgeSpec(
            "api:tiny", decoding=Decoding(max_tokens=12, samples=1), api_key_env="OPENAI_API_KEY", base_url=llama_server
        ),
        workers=4,
    )
    assert len(rows) == 16 and len({r["raw"] for r in rows}) > 1  # the model's sampled replies, each its own
    task = story_study.task("story")
    for r in rows:  # each stored value is its stored reply as the protocol reads it
        attribute = task.attribute(r["attribute"])
        truncated = json.loads(r["details"])["finish_reason"] == "length"
        reading = protocols.of(attribute).read_reply(r["raw"], attribute, "plain", truncated=truncated)
        assert (r["value"], r["parse_status"]) == (reading.value, reading.status)
    assert rater.config == {  # the provenance, value by value
        "backend": "openai-compatible",
        "model": "api:tiny",
        "api_model": "tiny",
        "base_url": llama_server,
        "openai_version": metadata.version("openai"),
        "tui_rater_version": metadata.version("tui-rater"),
        "mode": "text",
        "variant": "plain",
        "samples": 1,
        "temperature": 1.0,
        "top_p": 0.9,
        "seed": 0,
        "conversation": False,
        "max_tokens": 12,
        "max_retries": 3,
        "min_mass": 0.5,
        "extra": {},
    }
    dump = "\n".join(story_study._db.iterdump())
    assert PLANTED_KEY not in dump  # the key is never stored


def test_constrained_mode_falls_back_to_a_grammar(story_study, llama_server):
    _, _, rows = judge(
        story_study,
        JudgeSpec(
            "api:tiny",
            decoding=Decoding(samples=1),
            api_key_env="OPENAI_API_KEY",
            base_url=llama_server,
            mode="constrained",
        ),
    )
    assert len(rows) == 16
    assert all(r["parse_status"] == "ok" and r["value"] in (1, 2, 3, 4, 5) for r in rows)
    assert all(r["value"] == float(r["raw"]) for r in rows)  # the digit the grammar let the model write


def test_distribution_mode_from_top_logprobs(story_study, llama_server):
    # the random model puts ~0.1 % of its mass on "1".."5" (low_mass at the default --min-mass): 0 reads it
    spec = JudgeSpec(
        "api:tiny",
        decoding=Decoding(samples=3),
        api_key_env="OPENAI_API_KEY",
        base_url=llama_server,
        mode="distribution",
        min_mass=0,
    )
    _rater, _progress, rows = judge(story_study, spec)
    # the random model's top-20 next tokens rarely include a digit: each is asked for on its own
    # (logit_bias), so every option is scored -- never a made-up number, never a renormalised guess
    assert len(rows) == 4 * 4 * 3
    task = story_study.task("story")
    for item in story_study.items("story"):
        for attribute in task.attribute_names:
            question_rows = [r for r in rows if (r["item_key"], r["attribute"]) == (item.key, attribute)]
            assert [r["sample"] for r in question_rows] == [0, 1, 2]
            assert "unscored" not in json.loads(question_rows[0]["details"])
            # the server's own numbers, read off its full vocabulary over plain HTTP (not zeros, not another's)
            truth = server_truth(llama_server, question(task, attribute, item.fields))
            check_reading(question_rows, truth, temperature=1.0, top_p=0.9, rel=1e-6)


def test_conversation_sends_each_question_after_the_earlier_turns(story_study, fake_server):
    """--conversation (the paper's ChatGPT setting): request k of an item's chat is question 1, reply 1,
    ..., question k, in the task's order, each reply the one the server gave to that turn."""
    said = [f"Rating: {1 + (3 * k) % 5}" for k in range(16)]  # the server's answers, in the order asked
    script = Script([(200, {}, ok_body(text), 0) for text in said])
    spec = JudgeSpec(
        "api:m",
        decoding=Decoding(samples=1),
        api_key_env="OPENAI_API_KEY",
        base_url=fake_server(script),
        conversation=True,
        max_retries=0,
    )
    _rater, _progress, rows = judge(story_study, spec)
    task, items = story_study.task("story"), story_study.items("story")
    sent = [body["messages"] for body in script.bodies]
    assert len(sent) == 16  # one worker: the items one after another, each chat's turns in order
    for n, item in enumerate(items):
        chat: list[dict] = []
        for turn, attribute in enumerate(task.attribute_names):
            chat += question(task, attribute, item.fields, mode="text")
            assert sent[4 * n + turn] == chat, (item.id, attribute)
            chat.append({"role": "assistant", "content": said[4 * n + turn]})
    values = {(r["item_key"], r["attribute"]): r["value"] for r in rows}
    assert values == {
        (item.key, attribute): float(said[4 * n + turn][-1])
        for n, item in enumerate(items)
        for turn, attribute in enumerate(task.attribute_names)
    }


def test_each_job_sends_its_own_seed_and_the_same_judge_the_same_seeds(tmp_path, serve_zoo):
    """The seed sent with each question is the one stored with its rating; each item, question and sample
    has its own; the same judge in another file sends the same seeds, another configuration (same --seed)
    other ones -- so two judges never share their draws."""
    from tui_rater.store.study import Study

    behaviour, url = serve_zoo()  # answers "I would rate it a 4.": one request per rating

    def run(name: str, **changes) -> dict[tuple[str, str, int], int]:
        study = Study.open(tmp_path / f"{name}.db")
        study.add_items(study.task("story"), STORIES[:2])
        behaviour.requests.clear()
        _, _, rows = judge(
            study,
            spec_of("api:zoo", api_key_env="OPENAI_API_KEY", base_url=url, **{"samples": 2, "seed": 3, **changes}),
        )
        task, items = study.task("story"), {item.key: item for item in study.items()}
        stored = {
            (items[r["item_key"]].id, r["attribute"], r["sample"]): json.loads(r["details"])["seed"] for r in rows
        }
        for item in items.values():
            for attribute in task.attribute_names:
                asked = question(task, attribute, item.fields, mode="text")
                sent = sorted(body["seed"] for _, body in behaviour.requests if body["messages"] == asked)
                assert sent == sorted(stored[item.id, attribute, s] for s in (0, 1)), (item.id, attribute)
        return stored

    seeds = run("first")
    assert len(seeds) == 2 * 4 * 2 and len(set(seeds.values())) == len(seeds)
    assert run("again") == seeds
    assert not set(run("other", top_p=0.95).values()) & set(seeds.values())


# --- error paths ---------------------------------------------------------------------------


def run_one(study, spec, n_items=1):
    spec = spec.validate()
    config = provenance(spec)
    rater = study.judge(rater_name(spec, config), config)
    keys = [i.key for i in study.items("story")][:n_items]
    queue.enqueue(study, rater.id, keys, [("likability", "", 0)])
    threads, progress, _ = run_judge(study.path, rater.id, spec, config)
    for t in threads:
        t.join(timeout=60)
    return rater, progress


@pytest.mark.parametrize("status,kind", [(401, "auth"), (404, "unknown_model"), (400, "bad_request")])
def test_final_errors_fail_fast_with_a_typed_failure(story_study, fake_server, status, kind, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED_KEY)
    url = fake_server(Script([(status, {}, ERR, 0)]))
    _rater, progress = run_one(
        story_study, JudgeSpec("api:m", decoding=Decoding(samples=1), api_key_env="OPENAI_API_KEY", base_url=url)
    )
    failed = queue.failures(story_study)
    assert [f["error_kind"] for f in failed] == [kind]
    assert failed[0]["attempts"] == 1  # not retried
    assert PLANTED_KEY not in failed[0]["last_error"]
    if kind in ("auth", "unknown_model"):
        assert progress.fatal is not None and progress.fatal.kind == kind


def test_429_with_retry_after_is_honoured(story_study, fake_server):
    script = Script([(429, {"retry-after": "1"}, ERR, 0), (200, {}, ok_body(), 0)])
    url = fake_server(script)
    rater, _progress = run_one(
        story_study, JudgeSpec("api:m", decoding=Decoding(samples=1), api_key_env="OPENAI_API_KEY", base_url=url)
    )
    assert queue.counts(story_study, rater.id)["done"] == 1
    assert script.times[1] - script.times[0] >= 0.95  # waited as asked
    value = story_study._db.conn.execute("SELECT value FROM ratings WHERE rater_id = ?", [rater.id]).fetchone()[0]
    assert value == 4


@pytest.mark.parametrize(
    "answer",
    [
        (500, {}, ERR, 0),
        (200, {}, "{this is not json", 0),
        (200, {}, ok_body(), 3.0),  # slower than the timeout
    ],
)
def test_transient_errors_are_retried_then_succeed(story_study, fake_server, answer):
    script = Script([answer, (200, {}, ok_body("5"), 0)])
    url = fake_server(script)
    rater, progress = run_one(
        story_study,
        JudgeSpec("api:m", decoding=Decoding(samples=1), api_key_env="OPENAI_API_KEY", base_url=url, timeout_s=1.0),
    )
    assert queue.counts(story_study, rater.id)["done"] == 1
    assert progress.retried == 1
    assert story_study._db.conn.execute("SELECT value FROM ratings").fetchone()[0] == 5


def test_connection_refused_ends_as_failed_after_retries(story_study, monkeypatch):
    monkeypatch.setattr(queue, "BACKOFF_BASE_S", 0.01)
    monkeypatch.setattr(queue, "MAX_ATTEMPTS", 3)
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens here
    _rater, _progress = run_one(
        story_study,
        JudgeSpec("api:m", decoding=Decoding(samples=1), api_key_env="OPENAI_API_KEY", base_url=url, timeout_s=2),
    )
    failed = queue.failures(story_study)
    assert [(f["error_kind"], f["attempts"]) for f in failed] == [("connection", 3)]


def test_refusals_are_regenerated_then_recorded(story_study, fake_server):
    refusal = ok_body("I am an AI and I do not have the ability to experience enjoyment.")
    url = fake_server(Script([(200, {}, refusal, 0)]))
    _rater, _ = run_one(
        story_study,
        JudgeSpec("api:m", decoding=Decoding(samples=1), api_key_env="OPENAI_API_KEY", base_url=url, max_retries=2),
    )
    row = story_study._db.conn.execute("SELECT value, parse_status, details FROM ratings").fetchone()
    assert row[0] is None and row[1] == "refusal"
    assert json.loads(row[2])["attempts"] == 3


def test_credentials_are_stripped_from_urls():
    import base64

    from tui_rater.judge.spec import strip_credentials, url_secrets

    url = "http://alice:pw-0123456789@h.example:8080/v1?api_key=qk-0123456789&api-version=2024-06-01#x"
    assert strip_credentials(url) == "http://h.example:8080/v1?api_key=[redacted]&api-version=2024-06-01"
    # the password and the key are replaced in replies; "alice" is a word a story may hold
    # (and the Basic authorization they are sent as: base64 of "user:password", with and without its padding)
    basic = base64.b64encode(b"alice:pw-0123456789").decode()
    assert url_secrets(url) == sorted(["pw-0123456789", "qk-0123456789", basic, basic.rstrip("=")])
    token = base64.b64encode(b"tok-0123456789:").decode()
    assert url_secrets("https://tok-0123456789@h/v1") == sorted({"tok-0123456789", token, token.rstrip("=")})
    assert strip_credentials("https://api.openai.com/v1") == "https://api.openai.com/v1"


def test_a_reply_cut_by_the_length_limit_is_truncated_not_read(story_study, fake_server):
    """Issue 26, item 6: "1" that stopped on the length limit may have been "10" or "1.5": a typed failure, with
    the finish reason stored; the same "1" ended by the model is read (and reparse reads both the same way)."""
    cut = json.loads(ok_body("1"))
    cut["choices"][0]["finish_reason"] = "length"
    url = fake_server(Script([(200, {}, json.dumps(cut), 0), (200, {}, ok_body("1"), 0)]))
    _rater, _ = run_one(
        story_study, JudgeSpec("api:m", decoding=Decoding(samples=1, max_tokens=1), base_url=url, max_retries=1)
    )
    row = story_study._db.conn.execute("SELECT value, parse_status, raw, details FROM ratings").fetchone()
    details = json.loads(row[3])
    assert (row[0], row[1], row[2]) == (1.0, "ok", "1")  # the retry ended on its own
    assert details["finish_reason"] == "stop" and details["earlier_replies"] == ["1"]
    url = fake_server(Script([(200, {}, json.dumps(cut), 0)]))
    story_study._db.conn.execute("DELETE FROM ratings")
    _rater, _ = run_one(
        story_study, JudgeSpec("api:n", decoding=Decoding(samples=1, max_tokens=1), base_url=url, max_retries=0)
    )
    row = story_study._db.conn.execute("SELECT value, parse_status, raw, details FROM ratings").fetchone()
    assert (row[0], row[1], row[2]) == (None, "truncated", "1")
    assert json.loads(row[3])["finish_reason"] == "length"


def _server_with_props(props: dict | None, models: dict | None):
    """A loopback OpenAI-compatible server that also answers GET /props (llama.cpp) and GET /v1/models (vLLM)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status, body):
            payload = body.encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self):
            found = {"/props": props, "/v1/models": models}.get(self.path.split("?")[0])
            self._send(200, json.dumps(found)) if found is not None else self._send(404, ERR)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self._send(200, ok_body("4"))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


def test_what_the_server_says_of_the_weights_is_recorded_and_shown(story_study, cli):
    """Issue 26, item 10: llama-server's /props (model file, the chat template it applied, n_ctx) and vLLM's
    /v1/models (root, max_model_len) are recorded with the judge; a server that names only its alias is said to."""
    props = {"model_path": "/models/gemma-3-270m.gguf", "chat_template": CHATML, "build_info": "b6000",
             "default_generation_settings": {"n_ctx": 8192}}  # fmt: skip
    started = [
        _server_with_props(props, {"data": [{"id": "m", "object": "model", "owned_by": "llamacpp"}]}),
        _server_with_props(None, {"data": [{"id": "v", "root": "Qwen/Qwen2.5-0.5B-Instruct", "max_model_len": 32768}]}),
        _server_with_props(None, {"data": [{"id": "a", "owned_by": "me"}]}),
    ]
    url, vllm_url, alias_url = (u for _, u in started)
    try:
        rater, _ = run_one(story_study, JudgeSpec("api:m", decoding=Decoding(samples=1), base_url=url))
        other, _ = run_one(story_study, JudgeSpec("api:v", decoding=Decoding(samples=1), base_url=vllm_url))
        bare, _ = run_one(story_study, JudgeSpec("api:a", decoding=Decoding(samples=1), base_url=alias_url))
    finally:
        for server, _ in started:
            server.shutdown()
    from tui_rater.store.judges import servers

    [(source, facts)] = servers(story_study, rater.id)
    assert source == url and facts["identifies_weights"] is True
    assert facts["props"]["model_path"] == "/models/gemma-3-270m.gguf" and facts["props"]["n_ctx"] == 8192
    assert facts["props"]["chat_template"] == CHATML  # the prompt the server built, reproducible from the record
    [(_, facts)] = servers(story_study, other.id)
    assert facts["model"] == {"id": "v", "root": "Qwen/Qwen2.5-0.5B-Instruct", "max_model_len": 32768}
    assert facts["identifies_weights"] is True
    [(_, facts)] = servers(story_study, bare.id)
    assert facts["identifies_weights"] is False and "props" not in facts
    code, out, _err = cli("judges", "--db", story_study.path, "--format", "json")
    assert code == 0 and "/models/gemma-3-270m.gguf" in out
    code, out, _err = cli("judges", "--db", story_study.path)
    shown = re.sub(r"[│\s]+", " ", out)  # the table's cells, unwrapped
    assert code == 0
    assert "model file /models/gemma-3-270m.gguf; chat template sha256" in shown
    assert "root Qwen/Qwen2.5-0.5B-Instruct; max_model_len 32768" in shown
    assert "nothing the server reported identifies the weights behind 'a'" in shown
    assert "wrapped every prompt in its chat template" in shown


def test_a_corrected_reply_stored_by_the_old_parser_changes_only_through_reparse(story_study, fake_server, cli):
    """Issue 26, item 5: the judge reads "4/5 -- wait, on reflection, 3/5." as 3. A reading the old parser stored (4)
    stays 4 until `tui-rater reparse`, which re-reads the stored reply and says what changed."""
    url = fake_server(Script([(200, {}, ok_body("Score: 4/5 -- wait, on reflection, 3/5."), 0)]))
    run_one(story_study, JudgeSpec("api:m", decoding=Decoding(samples=1), base_url=url))
    conn = story_study._db.conn
    assert conn.execute("SELECT value, parse_status FROM ratings").fetchone() == (3.0, "ok")
    with conn:
        conn.execute("UPDATE ratings SET value = 4.0")  # what 0.1's parser stored from the same reply
    assert conn.execute("SELECT value FROM ratings").fetchone() == (4.0,)
    code, out, _ = cli("reparse", "--db", story_study.path)
    assert code == 0 and " 1 changed" in out, out
    assert conn.execute("SELECT value, parse_status FROM ratings").fetchone() == (3.0, "ok")
