"""`tui-rater certify` and `verify` (issue 34): a study with local judges on a generated GGUF around Qwen2's real
tokenizer, certified; verify passes untouched, and names the rating, the job, the number or the model file after one
of them is changed; hostile certificates are refused in one sentence and never opened as paths or printed as markup.
"""

from __future__ import annotations

import hashlib
import html.parser
import json
import os
import random
import shutil
import sqlite3

import numpy as np
import pytest

from tests.support import DATA, digest, run_cli_process, spec_of
from tests.support import judge as run_judge
from tui_rater.domain import certificate
from tui_rater.judge.tiny_gguf import write_tiny_gguf
from tui_rater.store.study import Study

MARKUP_NAME = "<script>alert(1)</script>[bold red]x[/]"
ITEMS = 32  # the alt-test needs 30 items per human for a verdict


@pytest.fixture(scope="module")
def certified(tmp_path_factory):
    """(folder, study path, certificate path, model path): three people and a fourth named in markup, a text-mode
    and a distribution-mode local judge on every item, and the certificate `certify` wrote."""
    folder = tmp_path_factory.mktemp("certify")
    model = write_tiny_gguf(
        folder / "qwen.gguf", vocab=DATA / "vocab" / "ggml-vocab-qwen2.gguf", n_embd=32, n_head=4, n_ff=64, f16=True,
        output_scale=0.6, seed=5,
    )  # fmt: skip
    db = folder / "study.db"
    study = Study.open(db)
    task = study.task("story")
    stories = [
        {"id": f"s{i}", "system": "human" if i % 2 else "gpt2", "prompt": f"Prompt {i}.", "story": f"Story {i}. A cat."}
        for i in range(ITEMS)
    ]
    study.add_items(task, stories)
    rng = random.Random(1)
    keys = [item.key for item in study.items("story")]
    for name in ("ann", "bob", "cat", MARKUP_NAME):
        person = study.human(name)
        for key in keys[: 8 if name == MARKUP_NAME else None]:
            for attribute in task.attributes:
                study.add_rating(key, attribute.name, person.id, float(rng.randint(1, 5)))
    run_judge(study, spec_of(str(model), mode="text", samples=1, max_tokens=6, max_retries=0, min_mass=0.0))
    run_judge(study, spec_of(str(model), mode="distribution", samples=1, min_mass=0.0))
    study.close()
    cert = folder / "study.cert.json"
    done = run_cli_process("certify", "--db", db, "--out", cert)
    assert done.returncode == 0, done.stderr
    return folder, db, cert, model


def _copy(certified, tmp_path):
    """The study copied (its model stays where the study recorded it)."""
    _, db, cert, _ = certified
    shutil.copy(db, tmp_path / "study.db")
    return tmp_path / "study.db", cert


def _sql(db, statement, *args):
    with sqlite3.connect(db) as conn:
        rows = conn.execute(statement, args).fetchall()
    conn.close()
    return rows


def test_verify_passes_on_the_untouched_study_and_changes_nothing(certified, cli):
    _, db, cert, _ = certified
    before = digest(db)
    code, out, err = cli("verify", cert, "--db", db)
    assert code == 0, out + err
    assert "matches" in out and "differs" not in out
    assert digest(db) == before
    document = json.loads(cert.read_text())
    assert (
        document["format"] == "tui-rater-certificate" and document["method_version"] == certificate.METHOD_VERSION == 2
    )
    tables = document["tasks"]["story"]["tables"]
    assert tables["ratings"]["rows"] == _sql(db, "SELECT count(*) FROM ratings")[0][0]
    judges = document["tasks"]["story"]["judges"]
    assert len(judges) == 2
    for judge in judges.values():  # the model's SHA-256 and the numerics bit-identity depends on
        assert judge["provenance"]["model_sha256"] == hashlib.sha256(certified[3].read_bytes()).hexdigest()
        assert "numerics" in judge["provenance"]
        assert judge["sources"][0]["source_name"] == "qwen.gguf"  # the file's name, not this machine's path
    story = document["tasks"]["story"]
    assert story["verdict"]["epsilon"] == 0.2 and "expert" in story["verdict"]["epsilon_why"]
    assert any("Benjamini-Yekutieli" in t["multiplicity"] for t in story["tests"].values())
    assert story["prompts"]  # each judge's templates by their SHA-256


def test_the_numbers_are_the_reports_to_the_bit(certified, cli, tmp_path):
    """Every record of `report --format json` is in the certificate with the same float64 bits."""
    _, db, cert, _ = certified
    code, _, err = cli("report", "--db", db, "--out", tmp_path / "r.json")
    assert code == 0, err
    records = json.loads((tmp_path / "r.json").read_text())["tasks"]["story"]
    numbers = json.loads(cert.read_text())["tasks"]["story"]["numbers"]
    assert len(numbers) == len(records)
    seen: dict[str, int] = {}
    for record in records:
        name = "|".join(
            str(record[k] or "") for k in ("table", "attribute", "system", "evaluator", "evaluator_b", "statistic")
        )
        seen[name] = seen.get(name, 0) + 1
        number = numbers[f"{name}#{seen[name]}"]
        for field in ("value", "p", "ci_low", "ci_high", "n"):
            mine, theirs = number[field], record[field]
            assert (mine is None and theirs is None) or np.float64(mine).tobytes() == np.float64(theirs).tobytes()


def test_one_rating_edited_with_sqlite_is_named(certified, cli, tmp_path):
    db, cert = _copy(certified, tmp_path)
    rid, item, attribute = _sql(
        db,
        "SELECT r.id, i.id, r.attribute FROM ratings r JOIN items i ON i.key = r.item_key JOIN raters ra "
        "ON ra.id = r.rater_id WHERE ra.name = 'bob' ORDER BY r.id LIMIT 1 OFFSET 17",
    )[0]
    _sql(db, "UPDATE ratings SET value = CASE WHEN value = 5 THEN 4 ELSE value + 1 END WHERE id = ?", rid)
    code, out, _ = cli("verify", cert, "--db", db)
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("differs: ")]
    named = [line for line in lines if f"rating {rid} (item '{item}', question '{attribute}', rater 'bob')" in line]
    assert len(named) == 1, out
    assert not any("rating " in line and f"rating {rid} " not in line for line in lines)  # no other rating named


def test_one_altered_reply_names_the_job(certified, cli, tmp_path):
    db, cert = _copy(certified, tmp_path)
    replies = _sql(db, "SELECT job_id, id FROM ratings WHERE raw IS NOT NULL AND job_id IS NOT NULL ORDER BY id")
    job, rid = replies[9]
    _sql(db, "UPDATE ratings SET raw = raw || ' 5' WHERE id = ?", rid)
    code, out, _ = cli("verify", cert, "--db", db)
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("differs: ")]
    assert len(lines) == 1, out  # the value and every number stand: only the reply changed
    assert f"job {job} (rating {rid}," in lines[0] and "stored reply" in lines[0]


def test_one_figure_edited_in_the_certificate_names_the_number(certified, cli, tmp_path):
    _, db, cert, _ = certified
    document = json.loads(cert.read_text())
    numbers = document["tasks"]["story"]["numbers"]
    key = next(
        k
        for k in numbers
        if k.startswith("verdict|") and isinstance(numbers[k]["value"], float) and abs(numbers[k]["value"]) > 0.01
    )
    # beyond verify's 1e-6 (one unit in the last place is a note, not a difference: tests/cli/test_verify_tolerance.py)
    numbers[key]["value"] *= 1 + 1e-3
    edited = tmp_path / "edited.cert.json"
    edited.write_text(json.dumps(document))
    code, out, _ = cli("verify", edited, "--db", db)
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("differs: ")]
    assert len(lines) == 1, out
    assert f"number {key!r}: value is" in lines[0]


def test_rerun_gives_the_same_bits_on_the_untouched_study(certified):
    _, db, cert, _ = certified
    before = digest(db)
    done = run_cli_process("verify", cert, "--db", db, "--rerun", "5", "--seed", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 of 256 local-judge jobs drawn with seed 3" in done.stdout
    assert "matches its provenance's SHA-256" in done.stdout
    assert "5 job(s) rerun, the same bits" in done.stdout
    assert digest(db) == before


def test_rerun_fails_on_a_model_file_with_one_changed_weight(certified, tmp_path):
    """The model file the study recorded, with one weight of the final norm changed: the SHA-256 check says the file
    changed, and the rerun itself finds replies / distributions that are not the same bits."""
    import gguf

    _, db, cert, model = certified
    changed = tmp_path / "qwen.gguf"  # the same file name, so the certificate's sources still match
    shutil.copy(model, changed)
    tensor = next(t for t in gguf.GGUFReader(changed).tensors if t.name == "output_norm.weight")
    weights = np.memmap(changed, dtype=np.float32, mode="r+", offset=tensor.data_offset, shape=(32,))
    weights[3] = weights[3] * 8
    weights.flush()
    del weights
    study = tmp_path / "study.db"
    shutil.copy(db, study)
    _sql(study, "UPDATE judge_sources SET source = ?", str(changed))  # where the study finds its model (not certified)
    done = run_cli_process("verify", cert, "--db", study, "--rerun", "5")
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("differs: ")]
    assert any("SHA-256" in line and "the file changed" in line for line in lines), done.stdout
    assert any(line.startswith("differs: job ") and "differ" in line for line in lines), done.stdout


def test_a_certificate_of_another_method_version_says_what_differs(certified, cli, tmp_path):
    _, db, cert, _ = certified
    document = json.loads(cert.read_text())
    newer = certificate.METHOD_VERSION + 1
    document["method_version"] = newer
    document["tasks"]["story"]["numbers"] = {}  # would be a mismatch of every number under this method
    other = tmp_path / "newer.cert.json"
    other.write_text(json.dumps(document))
    code, out, _ = cli("verify", other, "--db", db)
    assert code == 3
    assert f"method version {newer}" in out and "not compared" in out
    assert "differs:" not in out


def test_a_certificate_from_before_the_draw_by_pattern_says_its_intervals_were_drawn_otherwise(
    certified, cli, tmp_path
):
    """Method version 1 drew every interval from one draw of item counts: its interval ends differ from this
    method's by Monte-Carlo error, which verify must not call a mismatch of the study."""
    _, db, cert, _ = certified
    document = json.loads(cert.read_text())
    document["method_version"] = 1
    older = tmp_path / "older.cert.json"
    older.write_text(json.dumps(document))
    code, out, _ = cli("verify", older, "--db", db)
    assert code == 3, out
    assert "method version 1" in out and "by rating pattern" in out and "not compared" in out
    assert "differs:" not in out


FIFO_PATHS = ("study_file", "model_file")


def _hostile(document, fifo):
    """The certificate with a FIFO's path wherever a path could be, and markup and escapes in names."""
    found = json.loads(json.dumps(document))
    found["study_file"] = str(fifo)
    story = found["tasks"]["story"]
    for judge in story["judges"].values():
        judge["provenance"]["model_file"] = str(fifo)
        judge["sources"][0]["source_name"] = str(fifo)
    found["tasks"]["\x1b]52;c;cHduZWQ=\x07[bold]x[/]<b>"] = story
    return found


def test_a_hostile_certificate_is_data_never_opened_or_printed_as_markup(certified, tmp_path):
    """Paths in the certificate name a FIFO: opening one for reading blocks, so a verify that opened any of them would
    time out. Names with an OSC 52 escape and markup are printed literally."""
    _, db, cert, _ = certified
    fifo = tmp_path / "trap.fifo"
    os.mkfifo(fifo)
    hostile = tmp_path / "hostile.cert.json"
    hostile.write_text(json.dumps(_hostile(json.loads(cert.read_text()), fifo)))
    before = digest(db)
    done = run_cli_process("verify", hostile, "--db", db, "--rerun", "2", timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout + done.stderr
    assert "'\\x1b]52;c;cHduZWQ=\\x07[bold]x[/]<b>'" in done.stdout  # quoted literally, the escape spelled out
    assert "2 job(s)" not in done.stdout and "the same bits" not in done.stdout
    assert digest(db) == before


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"{not json", "is not JSON"),
        (b"[1, 2]", "must be an object"),
        (b'{"format": "something else"}', "is not a tui-rater certificate"),
        (b"\xff\xfe", "is not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"format": "tui-rater-certificate", "format": "tui-rater-certificate"}', "appears twice"),
    ],
)
def test_bad_files_are_one_sentence(certified, cli, tmp_path, content, said):
    _, db, _, _ = certified
    bad = tmp_path / "bad.cert.json"
    bad.write_bytes(content)
    before = digest(db)
    code, out, err = cli("verify", bad, "--db", db)
    assert code == 2
    assert said in err and len(err.strip().splitlines()) == 1 and not out
    assert digest(db) == before


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d: d.update(method_version="1"), "'method_version' must be a whole number"),
        (lambda d: d.update(method_version=10**30), "'method_version' must be a whole number from 1"),
        (lambda d: d["settings"].update(epsilon=10**400), "'settings.epsilon' must be null or a number"),
        (lambda d: d["settings"].update(epsilon=float("inf")), "it holds Infinity"),
        (lambda d: d["settings"].update(epsilon="0.2; rm -rf /"), "'settings.epsilon' must be null or a number"),
        (lambda d: d["settings"].update(excluded_annotators=[{"a": 1}]), "excluded_annotators"),
        (lambda d: d["tasks"]["story"]["tables"]["ratings"].update(rows=10**40), "says 10000000000"),
        (lambda d: d["tasks"]["story"]["tables"]["ratings"].update(root="../../etc/passwd"), "not a SHA-256"),
        (lambda d: d["tasks"]["story"].update(numbers=[]), "'numbers' must be an object"),
        (lambda d: d.update(tasks={}), "names no task"),
        (lambda d: d["tasks"]["story"]["tables"]["items"]["keys"].__setitem__(0, {"x": [1]}), "'keys' must be"),
        (lambda d: d.update(extra=json.loads("[" * 900 + "]" * 900)), "nests values more than 32 deep"),
    ],
)
def test_wrong_shapes_and_huge_numbers_are_one_sentence(certified, cli, tmp_path, change, said):
    _, db, cert, _ = certified
    document = json.loads(cert.read_text())
    change(document)
    bad = tmp_path / "bad.cert.json"
    bad.write_text(json.dumps(document))
    code, out, err = cli("verify", bad, "--db", db)
    assert code == 2, out + err
    assert said in err and len(err.strip().splitlines()) == 1


def test_a_huge_number_in_a_figure_is_a_named_difference(certified, cli, tmp_path):
    _, db, cert, _ = certified
    document = json.loads(cert.read_text())
    key = next(iter(document["tasks"]["story"]["numbers"]))
    document["tasks"]["story"]["numbers"][key]["value"] = "HUGE"
    text = json.dumps(document).replace('"HUGE"', "1e999999", 1)  # JSON allows it; it reads as an infinite float
    bad = tmp_path / "huge.cert.json"
    bad.write_text(text)
    code, out, _ = cli("verify", bad, "--db", db)
    assert code == 1
    assert f"number {key!r}: value is inf in the certificate" in out


def test_the_certificates_settings_are_the_ones_recomputed(certified, cli, tmp_path):
    """A certificate made with --epsilon and --exclude-annotator verifies with them (verify takes them from the
    certificate, checked); the same certificate with ε edited names ε and the verdict's numbers that move."""
    _, db, _, _ = certified
    cert = tmp_path / "eps.cert.json"
    code, _, err = cli("certify", "--db", db, "--out", cert, "--epsilon", "0.1", "--exclude-annotator", "cat")
    assert code == 0, err
    document = json.loads(cert.read_text())
    assert document["settings"]["epsilon"] == 0.1 and document["settings"]["excluded_annotators"] == ["cat"]
    assert not any("|cat|" in key or key.endswith("|cat") for key in document["tasks"]["story"]["numbers"])
    code, out, err = cli("verify", cert, "--db", db)
    assert code == 0, out + err
    document["settings"]["epsilon"] = 0.15
    cert.write_text(json.dumps(document))
    code, out, _ = cli("verify", cert, "--db", db)
    assert code == 1
    assert "'verdict.epsilon': 0.1 in the certificate, 0.15 from the study" in out
    assert "differs: task 'story': number 'verdict|" in out


def test_a_plans_seed_is_certified_and_a_changed_one_named(certified, cli, tmp_path):
    """An annotator's stored plan (a retest plan here) is in the certificate with its seed; editing the seed in the
    study names the plan."""
    from tui_rater.store.plans import Showing, save_plan

    db, _ = _copy(certified, tmp_path)
    study = Study.open(db, create=False)
    try:
        keys = [item.key for item in study.items("story")]
        ann = study.human("ann")
        save_plan(study, ann.id, "story", "retest", {"share": 0.25, "seed": 11}, [Showing(k) for k in keys[:3]])
    finally:
        study.close()
    cert = tmp_path / "plan.cert.json"
    code, _, err = cli("certify", "--db", db, "--out", cert)
    assert code == 0, err
    document = json.loads(cert.read_text())
    assert document["tasks"]["story"]["plans"]["annotators"] == {"ann/retest": {"seed": 11, "share": 0.25}}
    _sql(db, "UPDATE plans SET settings = ? WHERE kind = 'retest'", json.dumps({"share": 0.25, "seed": 12}))
    code, out, err = cli("verify", cert, "--db", db)
    assert code == 1, out + err
    assert """differs: task 'story': plans row '["ann","retest"]'""" in out
    assert "'plans.annotators.ann/retest.seed': 11 in the certificate, 12 from the study" in out


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--out", "{tmp}/c.txt"], "name the certificate NAME.json"),
        (["--out", "{tmp}/c.json", "--task", "nope"], "nope"),
        (["--out", "{tmp}/c.json", "--exclude-annotator", "nobody"], "no annotator of that name"),
        (["--out", "{tmp}/c.json", "--epsilon", "1.5"], "--epsilon must be at least 0 and below 1"),
        (["--out", "{tmp}/missing/c.json"], "does not exist"),
    ],
)
def test_certify_refuses_bad_flags_in_one_sentence(certified, cli, tmp_path, flags, said):
    _, db, _, _ = certified
    before = digest(db)
    code, out, err = cli("certify", "--db", db, *[f.format(tmp=tmp_path) for f in flags])
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, out + err
    assert digest(db) == before and not (tmp_path / "c.json").exists()


class _Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_the_html_certificate_shows_names_as_text(certified, cli, tmp_path):
    _, db, _, _ = certified
    page = tmp_path / "study.cert.html"
    code, _, err = cli("certify", "--db", db, "--out", page)
    assert code == 0, err
    parsed = _Page()
    parsed.feed(page.read_text())
    assert "script" not in parsed.tags and "b" not in parsed.tags  # the rater's name made no element
    text = "".join(parsed.text)
    assert MARKUP_NAME in text  # shown as the literal text it is
    assert "Merkle root" in text and "model_sha256" in text
    code, _, err = cli("verify", page, "--db", db)  # the page is for people; verify reads the JSON
    assert code == 2 and "is not JSON" in err


def test_merkle_root_is_rfc_6962s(tmp_path):
    """The tables' root against RFC 6962's definition (§2.1), written here: MTH splits at the largest power of two
    below n."""
    from tui_rater.domain.certificate import merkle_root

    def leaf(data: bytes) -> bytes:
        return hashlib.sha256(b"\x00" + data).digest()

    def mth(leaves: list[bytes]) -> bytes:
        if len(leaves) == 1:
            return leaves[0]
        k = 1
        while k * 2 < len(leaves):
            k *= 2
        return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()

    for n in range(1, 70):
        leaves = [leaf(bytes([i % 256]) * (i % 7)) for i in range(n)]
        assert merkle_root(leaves) == mth(leaves).hex(), n
    assert merkle_root([]) == hashlib.sha256(b"").hexdigest()


def test_a_reviewer_recomputes_a_tables_root_from_the_study_alone(certified):
    """The items table's root as docs/VERDICT.md describes it, computed here from sqlite3 and hashlib only: rows as
    JSON with sorted keys and no spaces, ordered by their key's JSON, RFC 6962's tree over SHA-256(0x00 || row)."""
    _, db, cert, _ = certified
    rows = {
        item_id: {"id": item_id, "system": system, "fields": json.loads(fields), "position": position}
        for item_id, system, fields, position in _sql(db, "SELECT id, system, fields, position FROM items")
    }

    def text(value) -> bytes:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()

    leaves = [hashlib.sha256(b"\x00" + text(rows[key])).digest() for key in sorted(rows, key=text)]

    def mth(nodes: list[bytes]) -> bytes:
        if len(nodes) == 1:
            return nodes[0]
        k = 1 << ((len(nodes) - 1).bit_length() - 1)  # the largest power of two below n
        return hashlib.sha256(b"\x01" + mth(nodes[:k]) + mth(nodes[k:])).digest()

    digest_of_items = json.loads(cert.read_text())["tasks"]["story"]["tables"]["items"]
    assert digest_of_items["root"] == mth(leaves).hex()
    assert digest_of_items["leaves"][:16] == leaves[0].hex()[:16]


def test_an_api_judge_is_certified_by_the_model_the_server_reported_and_never_rerun(
    certified, cli, tmp_path, fake_server, monkeypatch
):
    """An API judge's provenance is its model id, base URL and the model the server said it ran (never the key);
    `--rerun` draws local-judge jobs only (a server cannot promise the same bits)."""
    from tests.support import Script, ok_body

    key = "sk-planted-certify-key-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    db, _ = _copy(certified, tmp_path)
    study = Study.open(db, create=False)
    try:
        url = fake_server(Script([(200, {}, ok_body("Rating: 4"), 0)]))
        run_judge(study, spec_of("api:m", samples=1, max_retries=0, api_key_env="OPENAI_API_KEY", base_url=url))
    finally:
        study.close()
    cert = tmp_path / "api.cert.json"
    code, _, err = cli("certify", "--db", db, "--out", cert)
    assert code == 0, err
    assert key not in cert.read_text()
    judges = json.loads(cert.read_text())["tasks"]["story"]["judges"]
    api = [j for j in judges.values() if j["provenance"]["backend"] == "openai-compatible"]
    assert len(api) == 1 and api[0]["provenance"]["api_model"] == "m"
    assert api[0]["sources"] == [{"source_name": url, "served_model": "m", "system_fingerprint": ""}]
    done = run_cli_process("verify", cert, "--db", db, "--rerun", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 of 256 local-judge jobs" in done.stdout  # the API judge's 128 jobs are not in the draw
