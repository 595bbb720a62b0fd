"""The report's per-item bookkeeping is columns (issue 35 item 2): the items' keys and systems that every section
asks for are arrays, not a Python int, str and dict entry per item (at a million items those were most of the
report's memory beside the ratings, and a pass of Python per item for each system asked for)."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import polars as pl

from tests.stats.test_load_columns import _study
from tui_rater.service.reports import build_reports
from tui_rater.stats.records import ALL
from tui_rater.stats.sections import bias_card
from tui_rater.stats.sections.bias_card import word_counts
from tui_rater.stats.sections.bias_corrected import paired_units
from tui_rater.stats.sections.calibration import distributions
from tui_rater.stats.sections.data import ReportData, load_all
from tui_rater.store.readings import implicit_jumps


def _built(study) -> tuple[ReportData, int]:
    frame, readings = load_all(study, "story")
    tracemalloc.start()
    try:
        data = ReportData(study, study.task("story"), frame=frame, readings=readings)
        for system in data.systems_and_pooled():
            data.keys(system)
        return data, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_keys_and_systems_are_the_items_table(tmp_path):
    study = _study(tmp_path, 1_000)
    data, _ = _built(study)
    # independently: the items table itself, through SQL
    rows = study._db.conn.execute("SELECT key, system FROM items WHERE task = 'story' ORDER BY key").fetchall()
    assert data.systems == ["gpt2", "human"]
    assert data.keys(ALL).tolist() == [k for k, _ in rows]
    for system in ("gpt2", "human"):
        assert data.keys(system).tolist() == [k for k, s in rows if s == system]
        assert data.keys(system).dtype == np.int64
    assert data.keys("no such system").tolist() == []
    every = np.array([k for k, _ in rows], dtype=np.int64)
    assert data.systems_of(every[::-7]).tolist() == [s for _, s in rows][::-7]
    assert data.system_of == dict(rows)
    assert data.item_keys == [k for k, _ in rows]


def test_item_bookkeeping_holds_no_python_object_per_item(tmp_path):
    _, small = _built(_study(tmp_path, 1_000))
    _, large = _built(_study(tmp_path, 16_000))
    # 15,000 more items: two int64 columns are 16 bytes an item; a list of keys and a dict key -> system (a Python
    # int, a str and a dict entry each) were ~170 bytes an item
    per_item = (large - small) / 15_000
    assert per_item < 48, per_item


def _groupings(study) -> list[str]:
    """The statements ``report`` runs that group the whole ratings table into the ratings in force."""
    seen: list[str] = []
    study._db.conn.set_trace_callback(seen.append)
    try:
        build_reports(study, None)
    finally:
        study._db.conn.set_trace_callback(None)
    return [s for s in seen if "GROUP BY item_key, attribute, rater_id, presentation, sample" in s]


def test_details_nobody_stored_are_not_looked_for_in_every_rating(tmp_path):
    # the people's and an imported judge's ratings carry no next-token details: the report does not group the
    # table three times to find none (implicit scores' p(no), distributions, expected scores)
    study = _study(tmp_path, 200)
    assert len(_groupings(study)) == 0
    # and where one rating has them, they are read (the statements still run)
    conn = study._db.conn
    details = '{"p_yes": 0.4, "p_no": 0}'
    conn.execute("UPDATE ratings SET details = ? WHERE id = (SELECT max(id) FROM ratings)", [details])
    conn.commit()
    assert implicit_jumps(study, "story") == [("j", "relevance", 1, 0.4)]
    assert len(_groupings(study)) >= 1


def _counted(study) -> tuple[np.ndarray, int]:
    frame, readings = load_all(study, "story")
    data = ReportData(study, study.task("story"), frame=frame, readings=readings)
    tracemalloc.start()
    try:
        found = word_counts(data, ("story",))["story"]
        return found, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_word_counts_read_the_texts_a_chunk_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setattr(bias_card, "_CHUNK", 500, raising=False)  # (raising: the code before had none)
    counts, peak = {}, {}
    for items in (1_000, 8_000):
        study = _study(tmp_path, items)
        # each story k % 7 + 300 words of 3 letters; one item without the field
        study._db.conn.execute(
            "UPDATE items SET fields = json_object('story', trim(replace(hex(zeroblob(key % 7 + 300)), '00', 'ab ')))"
        )
        study._db.conn.execute("UPDATE items SET fields = '{}' WHERE key = 5")
        study._db.conn.commit()
        counts[items], peak[items] = _counted(study)
        keys = [k for (k,) in study._db.conn.execute("SELECT key FROM items ORDER BY key")]
        expected = [np.nan if k == 5 else float(k % 7 + 300) for k in keys]
        np.testing.assert_array_equal(counts[items], expected)
    # 8x the items (~1 kB of text each): the texts held at once stay a chunk's, not the study's
    assert peak[8_000] < 3 * peak[1_000], peak


def test_annotators_are_np_unique_of_the_names(tmp_path):
    # names whose UTF-8 bytes and whose code points could sort apart if either were mishandled
    study = _study(tmp_path, 300)
    conn = study._db.conn
    for old, new in (("h0", "Zoë"), ("h1", "Åsa"), ("h2", "bob")):
        conn.execute("UPDATE raters SET label = ?, name = ? WHERE label = ?", [new, new, old])
    conn.commit()
    frame, readings = load_all(study, "story")
    data = ReportData(study, study.task("story"), frame=frame, readings=readings)
    humans = frame.filter((pl.col("kind") == "human") & (pl.col("attribute") == "relevance"))
    index, keys, _values, names, _ = data._arrays("humans", "relevance")
    expected_names, expected_index = np.unique(np.array(humans["rater"].to_list(), dtype=object), return_inverse=True)
    assert names.tolist() == expected_names.tolist() == ["Zoë", "bob", "Åsa"]
    np.testing.assert_array_equal(index, expected_index)
    np.testing.assert_array_equal(keys, humans["item_key"].to_numpy())
    judged = frame.filter((pl.col("rater") == "j") & (pl.col("attribute") == "relevance"))
    index, _, _, names, _shown = data._arrays("j", "relevance")
    who = [f"{p}/{s}" for p, s in zip(judged["presentation"].to_list(), judged["sample"].to_list())]
    expected_names, expected_index = np.unique(np.array(who, dtype=object), return_inverse=True)
    assert names.tolist() == expected_names.tolist()
    np.testing.assert_array_equal(index, expected_index)


def test_word_counts_of_fields_with_a_path_s_characters_in_their_names(tmp_path):
    study = _study(tmp_path, 50)
    fields = {"a.b": "one two", 'q"t': "x  y\tz", "s[0]": "é à\u2003b", "$": ""}
    study._db.conn.execute("UPDATE items SET fields = ?", [json.dumps(fields)])
    study._db.conn.commit()
    frame, readings = load_all(study, "story")
    data = ReportData(study, study.task("story"), frame=frame, readings=readings)
    found = word_counts(data, (*fields, "missing"))
    for name, text in fields.items():
        assert found[name].tolist() == [float(len(text.split()))] * 50, name
    assert np.isnan(found["missing"]).all()


def test_systems_are_paired_by_prompt_as_sorted_strings(tmp_path):
    study = _study(tmp_path, 40)
    conn = study._db.conn
    # items 2j and 2j+1 (one of each system) wrote for prompt j; prompts whose bytes and code points are mixed
    conn.execute(
        "UPDATE items SET fields = json_object('prompt', char(65 + (position / 2) % 3 * 150) || (position / 2))"
    )
    conn.commit()
    frame, readings = load_all(study, "story")
    data = ReportData(study, study.task("story"), frame=frame, readings=readings)
    rows = conn.execute("SELECT key, system, json_extract(fields, '$.prompt') FROM items").fetchall()
    by = {s: {p: k for k, system, p in rows if system == s} for s in ("gpt2", "human")}
    shared = sorted(by["gpt2"])
    assert paired_units(data, "gpt2", "human") == ([by["gpt2"][p] for p in shared], [by["human"][p] for p in shared])
    # a prompt twice in one system, or one missing: no pairing
    for change in ("json_object('prompt', 'same')", "'{}'"):
        conn.execute(f"UPDATE items SET fields = {change} WHERE position IN (0, 2)")
        conn.commit()
        fresh = ReportData(study, study.task("story"), frame=frame, readings=readings)
        assert paired_units(fresh, "gpt2", "human") is None


def _shares_peak(study) -> tuple[object, int]:
    frame, readings = load_all(study, "story")
    data = ReportData(study, study.task("story"), frame=frame, readings=readings)
    attribute = study.task("story").attribute("relevance")
    data.matrix("j", "relevance", ALL)  # (the judge's matrix, which any section builds, is cached first)
    tracemalloc.start()
    try:
        return distributions(data, attribute, "j"), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_judge_of_one_sample_an_item_has_no_sample_shares_at_no_cost_per_item(tmp_path):
    # the judge rated each item once and stored no distribution: it has no distribution to calibrate; finding so
    # builds no dict of every item's position and counts no sample shares over every item
    small_found, small = _shares_peak(_study(tmp_path, 1_000))
    large_found, large = _shares_peak(_study(tmp_path, 16_000))
    assert small_found is None and large_found is None
    per_item = (large - small) / 15_000
    assert per_item < 64, per_item
