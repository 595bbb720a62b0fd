"""`annotate --retest` / `--order uncertain`: bad requests are one sentence, exit 2, and the file untouched."""

from __future__ import annotations

import pytest

from tests.support import digest
from tui_rater.store.study import Study


@pytest.fixture
def titles(tmp_path, cli):
    items = tmp_path / "titles.csv"
    items.write_text("id,title\nt1,Stocks fall\nt2,Oil climbs\n")
    db = tmp_path / "t.db"
    assert cli("import", items, "--task", "title-fluency", "--db", db)[0] == 0
    return db


def judged_twice(db):
    study = Study.open(db)
    for name in ("judge-a", "judge-b"):
        judge = study.judge(name, {"m": name})
        for item in study.items("title-fluency"):
            study.add_rating(item.key, "fluency", judge.id, 3.0, details={"distribution": {"1": 0.5, "2": 0.5}})
    study.close()


BAD = {
    "zero share": (["--retest", "0"], "--retest takes the share of your rated items to show again, in (0, 1], not 0"),
    "share above one": (["--retest", "1.5"], "in (0, 1], not 1.5"),
    "retest with reveal": (["--retest", "0.5", "--reveal"], "--retest asks for your rating blind"),
    "no spacing": (["--retest", "0.5", "--retest-spacing", "0"], "--retest-spacing must be at least 1 item"),
    "judge without the order": (["--uncertain-judge", "x"], "--uncertain-judge goes with --order uncertain"),
    "no judge yet": (["--order", "uncertain"], "--order uncertain needs a judge's ratings of task 'title-fluency'"),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_plan_requests_are_one_sentence(titles, cli, name):
    flags, sentence = BAD[name]
    before = digest(titles)
    code, _out, err = cli("annotate", "--db", titles, "--annotator", "me", *flags)
    assert code == 2 and err.startswith("tui-rater: error: ") and err.count("\n") == 1, err
    assert sentence in err
    assert digest(titles) == before


def test_several_judges_ask_which_one(titles, cli):
    judged_twice(titles)
    before = digest(titles)
    code, _out, err = cli("annotate", "--db", titles, "--annotator", "me", "--order", "uncertain")
    assert code == 2 and "several judges rated task 'title-fluency' (judge-a, judge-b)" in err
    assert "--uncertain-judge" in err and err.count("\n") == 1
    code, _out, err = cli(
        "annotate", "--db", titles, "--annotator", "me", "--order", "uncertain", "--uncertain-judge", "judge-c"
    )
    assert code == 2 and "judge 'judge-c' has no ratings of task 'title-fluency'" in err
    assert digest(titles) == before


def test_the_help_says_what_the_uncertain_order_is_for_and_its_caveat(capsys):
    from tui_rater.cli import main

    with pytest.raises(SystemExit):
        main(["annotate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "active sampling" in text and "biases those estimates" in text
    assert "--retest P" in text and "blind" in text and "--retest-spacing N" in text
