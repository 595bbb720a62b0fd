"""The dynamic mode's leases and the study's leads, on a real study file."""

from __future__ import annotations

import pytest

from tui_rater.domain.errors import UserError
from tui_rater.store.roles import leads, require_lead, set_leads
from tui_rater.store.study import Study
from tui_rater.store.team import claim, live_leases, save_team_plan


@pytest.fixture
def study(tmp_path):
    study = Study.open(tmp_path / "t.db")
    study.add_items(study.task("title-fluency"), [{"id": f"t{i}", "title": f"Title {i}"} for i in range(3)])
    yield study
    study.close()


def test_an_item_goes_to_k_people_and_an_expired_lease_frees_it(study):
    key = study.items("title-fluency")[0].key
    a, b, c = (study.human(name).id for name in ("a", "b", "c"))
    assert claim(study, key, a, per_item=2, lease_s=10, now=100.0)
    assert claim(study, key, b, per_item=2, lease_s=10, now=101.0)
    assert not claim(study, key, c, per_item=2, lease_s=10, now=102.0)  # two are on it
    assert claim(study, key, a, per_item=2, lease_s=10, now=105.0)  # renewing one's own lease is fine
    assert claim(study, key, c, per_item=2, lease_s=10, now=112.0)  # b's lease ran out at 111
    assert sorted(live_leases(study, "title-fluency", now=112.0)) == sorted([a, c])


def test_a_rating_keeps_the_item_after_the_lease_ran_out(study):
    key = study.items("title-fluency")[0].key
    a, b = study.human("a").id, study.human("b").id
    assert claim(study, key, a, per_item=1, lease_s=1, now=0.0)
    study.add_rating(key, "fluency", a, 3.0, parse_status="human")
    assert not claim(study, key, b, per_item=1, lease_s=1, now=1e12)  # a's saved work counts, lease or not
    assert claim(study, key, a, per_item=1, lease_s=1, now=1e12)  # and a may go on


def test_require_lead_refuses_others_only_once_a_list_is_set(study):
    require_lead(study, "anyone", "assign annotators")  # no list: everyone may
    set_leads(study, ["lena", "max"])
    assert leads(study) == ["lena", "max"]
    require_lead(study, "max", "assign annotators")
    with pytest.raises(UserError, match=r"only the study's leads \(lena, max\) may adjudicate; 'bob' is not one"):
        require_lead(study, "bob", "adjudicate")
    with pytest.raises(UserError, match="someone unnamed is not one"):
        require_lead(study, None, "adjudicate")
    set_leads(study, [])
    require_lead(study, "bob", "adjudicate")


def test_the_whole_task_count_matches_the_per_item_count(study):
    from tui_rater.store.team import others_per_item, raters_of

    keys = [item.key for item in study.items("title-fluency")]
    a, b, c = (study.human(name).id for name in ("a", "b", "c"))
    claim(study, keys[0], b, per_item=3, lease_s=10, now=100.0)
    claim(study, keys[1], c, per_item=3, lease_s=10, now=50.0)  # ran out at 60
    study.add_rating(keys[1], "fluency", b, 2.0, parse_status="human")
    study.add_rating(keys[2], "fluency", a, 2.0, parse_status="human")  # a's own: not counted for a
    whole = others_per_item(study, "title-fluency", a, now=100.0)
    assert whole == {k: n for k in keys if (n := raters_of(study, k, a, now=100.0))} == {keys[0]: 1, keys[1]: 1}


@pytest.mark.parametrize("lease_s", [float("nan"), float("inf"), 0.0, -5.0, 1e12])
def test_the_store_refuses_an_unusable_lease_whoever_asks(study, lease_s):
    """A NaN lease was written as NULL (every later save failed on "NOT NULL constraint failed: leases.until")
    and an infinite one held the item forever: refused with the reason, nothing written."""
    key = study.items("title-fluency")[0].key
    a = study.human("a").id
    with pytest.raises(UserError, match="a lease must"):
        claim(study, key, a, per_item=1, lease_s=lease_s, now=100.0)
    with pytest.raises(UserError, match="a lease must"):
        save_team_plan(study, "title-fluency", "dynamic", {"per_item": 1, "lease_s": lease_s}, [])
    assert study._db.conn.execute("SELECT count(*) FROM leases").fetchone() == (0,)
    assert study._db.conn.execute("SELECT count(*) FROM team_plans").fetchone() == (0,)
