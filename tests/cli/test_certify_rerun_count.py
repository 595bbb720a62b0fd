"""`verify --rerun N` says how many local-judge jobs could be rerun: all of them, when the study holds fewer than N,
and exit 1 in one sentence when it holds none (a rerun asked for and not done verifies no bits)."""

from __future__ import annotations

import random

from tests.support import judge as run_judge
from tests.support import run_cli_process, spec_of
from tui_rater.store.study import Study

ITEMS = 3


def _study(db, model=None) -> None:
    study = Study.open(db)
    task = study.task("story")
    stories = [
        {"id": f"s{i}", "system": "gpt2", "prompt": f"Prompt {i}.", "story": f"Story {i}."} for i in range(ITEMS)
    ]
    study.add_items(task, stories)
    rng = random.Random(1)
    for name in ("ann", "bob"):
        person = study.human(name)
        for item in study.items("story"):
            for attribute in task.attributes:
                study.add_rating(item.key, attribute.name, person.id, float(rng.randint(1, 5)))
    if model is not None:
        run_judge(study, spec_of(str(model), mode="distribution", samples=1, min_mass=0.0))
    study.close()


def _certify(tmp_path, db):
    cert = tmp_path / "study.cert.json"
    done = run_cli_process("certify", "--db", db, "--out", cert)
    assert done.returncode == 0, done.stderr
    return cert


def test_rerun_of_a_study_without_local_judge_jobs_exits_1_in_one_sentence(tmp_path):
    db = tmp_path / "people.db"
    _study(db)
    cert = _certify(tmp_path, db)
    before = db.read_bytes()
    done = run_cli_process("verify", cert, "--db", db, "--rerun", "3")
    assert done.returncode == 1, done.stdout + done.stderr
    said = [line for line in done.stderr.splitlines() if line.strip()]
    assert said == [f"verify: --rerun 3 asked, but {db} holds no local-judge (llama.cpp) job of the certificate's "
                    "tasks: none could be rerun"], done.stderr  # fmt: skip
    assert "0 job(s) rerun" not in done.stdout
    assert db.read_bytes() == before
    # without --rerun the same study verifies
    assert run_cli_process("verify", cert, "--db", db).returncode == 0


def test_rerun_of_more_jobs_than_the_study_holds_says_how_many_were(tmp_path, tiny_gguf):
    db = tmp_path / "judged.db"
    _study(db, tiny_gguf)
    study = Study.open(db, create=False)
    jobs = study._db.conn.execute("SELECT count(*) FROM jobs WHERE status = 'done'").fetchone()[0]
    study.close()
    assert 0 < jobs < 1000
    cert = _certify(tmp_path, db)
    done = run_cli_process("verify", cert, "--db", db, "--rerun", "1000", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        f"{jobs} job(s) rerun, the same bits (1000 asked; the study holds {jobs} local-judge job(s): all of them "
        "rerun)" in " ".join(done.stdout.split())
    ), done.stdout
