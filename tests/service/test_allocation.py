"""``assign --allocate M`` and ``annotate --order allocated``: the next M items people rate, drawn uniformly within
strata in the numbers of the Neyman allocation, stored with each frame item's stratum, and served in that order."""

from __future__ import annotations

import shutil
import sqlite3

import numpy as np
import pytest
from scipy import stats as sp

from tests.stats.simulated import likert_study
from tests.stats.test_neyman_plan import by_hand
from tests.support import digest
from tui_rater.domain.errors import UserError
from tui_rater.service.allocation import AllocateOptions, draw_allocation
from tui_rater.store.allocations import load_allocation
from tui_rater.store.session import AnnotationSession
from tui_rater.store.study import Study


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    path = tmp_path_factory.mktemp("allocate") / "s.db"
    return likert_study(path, humans=3, prompts=150, seed=11, rated_share=0.2, attributes=("likability",))


@pytest.fixture
def fresh(pilot, tmp_path):
    path = tmp_path / "s.db"
    shutil.copy(pilot.path, path)
    return path


def test_the_draw_is_the_neyman_allocation_uniform_within_strata_stored_with_every_items_stratum(cli, pilot, fresh):
    figures, _ = by_hand(pilot)
    code, out, err = cli("assign", "--db", fresh, "--task", "story", "--allocate", "40", "--judge", "close")
    assert code == 0, err
    assert "drew 40 new items" in out and "annotate --task story --order allocated" in out
    study = Study.open(fresh)
    stored = load_allocation(study, "story")
    assert stored is not None
    key = {item.id: item.key for item in study.items("story")}
    # the frame: every item the judge rated, each in its system's stratum; the pilot: the items people rated
    assert stored.stratum_of == {key[i]: pilot.system[i] for i in pilot.ids}
    assert stored.pilot == {key[i] for i in pilot.order}
    assert not set(stored.drawn) & stored.pilot and len(set(stored.drawn)) == 40
    # the numbers: Cochran's n_h ∝ N_h S_h on the totals, the new ones what is added to the pilot
    total = sum(n for _, n, _ in figures.values()) + 40
    weight = {s: big * sd for s, (big, _, sd) in figures.items()}
    for s, (_, rated, _) in figures.items():
        drawn = sum(stored.stratum_of[k] == s for k in stored.drawn)
        assert abs(rated + drawn - total * weight[s] / sum(weight.values())) < 1
    # interleaved: every prefix holds each stratum in its share of the draw, to within one item
    share = {s: sum(stored.stratum_of[k] == s for k in stored.drawn) / 40 for s in figures}
    for length in range(1, 41):
        prefix = stored.drawn[:length]
        for s in figures:
            assert abs(sum(stored.stratum_of[k] == s for k in prefix) - share[s] * length) <= 1
    # annotate --order allocated serves the drawn items only, in the drawn order, to everyone
    for who in ("ann", "bob"):
        session = AnnotationSession.open(study, "story", who, order="allocated")
        assert [item.key for item in session.items] == list(stored.drawn)


def test_within_a_stratum_every_unrated_item_is_equally_likely_to_be_drawn(pilot):
    study = Study.open(pilot.path)
    counts: dict[int, int] = {}
    drawn = None
    for seed in range(300):
        drawn = draw_allocation(study, AllocateOptions("story", 40, judge="close", seed=seed, dry_run=True))
        for k in drawn.drawn:
            counts[k] = counts.get(k, 0) + 1
    assert drawn is not None and load_allocation(study, "story") is None  # a dry run stores nothing
    for s in drawn.strata:
        unrated = [k for k, name in drawn.stratum_of.items() if name == s.name and k not in drawn.pilot]
        observed = np.array([counts.get(k, 0) for k in unrated])
        assert observed.sum() == 300 * s.new
        # uniform: a chi-square test of equal counts does not reject at 0.1 %
        assert sp.chisquare(observed).pvalue > 0.001, s.name


def test_a_second_draw_a_missing_draw_and_an_altered_file_are_one_sentence(cli, fresh):
    assert cli("assign", "--db", fresh, "--task", "story", "--allocate", "40", "--judge", "close")[0] == 0
    before = digest(fresh)
    code, _, err = cli("assign", "--db", fresh, "--task", "story", "--allocate", "10", "--judge", "close")
    assert code == 2 and "already has a stratified draw" in err and err.count("\n") == 1
    code, _, err = cli("assign", "--db", fresh, "--task", "story", "--allocate", "10", "--annotators", "a,b")
    assert code == 2 and "give it without --annotators" in err
    assert digest(fresh) == before
    # a row moved to another stratum by hand: refused, not weighted
    conn = sqlite3.connect(fresh)
    conn.execute(
        "UPDATE allocation_items SET stratum = 'human' WHERE rowid = "
        "(SELECT rowid FROM allocation_items WHERE stratum = 'gpt2' LIMIT 1)"
    )
    conn.commit()
    conn.close()
    with pytest.raises(UserError, match=r"inconsistent .*the file was altered"):
        load_allocation(Study.open(fresh), "story")


def test_without_a_draw_the_allocated_order_is_refused_before_anything_is_written(pilot, fresh):
    before = digest(fresh)
    with pytest.raises(UserError, match="no stratified draw is stored for task 'story'"):
        AnnotationSession.open(Study.open(fresh), "story", "newcomer", order="allocated")
    assert digest(fresh) == before
    with pytest.raises(UserError, match="only 228 items"):
        draw_allocation(Study.open(fresh), AllocateOptions("story", 1000, judge="close"))
