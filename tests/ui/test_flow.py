"""The rating flow through Textual's Pilot, against a real SQLite file."""

from __future__ import annotations

import json
import re

from tests.support import ratings_of, settle, wait_until


async def test_rate_advance_undo_navigate(app_for, study):
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4", "3", "2", "5")  # all four questions of item 1
        await settle(app, pilot)
        assert app.index == 1 and app.focus_attr == 0
        assert ratings_of(study, "alice") == [
            ("s0", "grammaticality", 4),
            ("s0", "cohesiveness", 3),
            ("s0", "likability", 2),
            ("s0", "relevance", 5),
        ]
        await pilot.press("1", "u")  # rate then undo
        await settle(app, pilot)
        assert len(ratings_of(study, "alice")) == 4 and app.value(1, "grammaticality") is None
        await pilot.press("9")  # off the scale: nothing happens
        await pilot.press("down", "down", "3", "up", "left")
        await settle(app, pilot)
        assert app.index == 0
        assert ratings_of(study, "alice")[-1] == ("s1", "likability", 3)
        await pilot.press("right", "right", "right")
        assert app.index == 3
        await pilot.press("right")
        assert app.index == 3  # stays on the last item


async def test_changing_a_rating_keeps_history(app_for, study):
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4", "up", "2")  # re-rate grammaticality
        await settle(app, pilot)
    rows = study._db.conn.execute("SELECT value FROM ratings WHERE attribute='grammaticality' ORDER BY id").fetchall()
    assert [r[0] for r in rows] == [4, 2]
    from tui_rater.store.io import ratings_frame

    assert ratings_frame(study, "story")["value"].to_list() == [2.0]  # the latest is in force


async def test_skip_flag_comment_goto(app_for, study):
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f", "c")
        await pilot.press(*"too short", "enter")
        await pilot.press("s")
        await settle(app, pilot)
        assert app.index == 1
        await pilot.press("g", "4", "enter")
        assert app.index == 3
        await pilot.press("g", *"s1", "enter")
        assert app.index == 1
        await pilot.press("g", *"nope", "enter")
        assert app.index == 1
        await settle(app, pilot)
    notes = study._db.conn.execute("SELECT kind, text FROM notes ORDER BY id").fetchall()
    assert notes == [("flag", None), ("comment", "too short"), ("skip", None)]


async def test_resume_after_restart_and_seconds_recorded(app_for, study):
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4", "3", "2")
        await pilot.pause(0.4)  # the person thinks before the fourth question
        await pilot.press("5", "1", "1")
        await settle(app, pilot)
    again = app_for()
    async with again.run_test(size=(80, 24)) as pilot:
        assert again.index == 1 and again.focus_attr == 2  # item 2, first unrated question
    seconds = [r[0] for r in study._db.conn.execute("SELECT seconds FROM ratings ORDER BY id")]
    assert all(s is not None and s >= 0 for s in seconds)
    # the seconds follow the time spent: the pause is on the fourth rating (a constant 0 would fail)
    assert seconds[3] >= 0.35


async def test_two_annotators_one_file(app_for, study):
    alice, bob = app_for("alice"), app_for("bob")
    async with alice.run_test(size=(80, 24)) as pa, bob.run_test(size=(80, 24)) as pb:
        await pa.press("5", "5")
        await pb.press("1")
        await settle(alice, pa)
        await settle(bob, pb)
        assert bob.value(0, "grammaticality") == 1 and bob.value(0, "cohesiveness") is None  # own ratings only
    assert ratings_of(study, "alice") == [("s0", "grammaticality", 5), ("s0", "cohesiveness", 5)]
    assert ratings_of(study, "bob") == [("s0", "grammaticality", 1)]


async def test_orders(app_for):
    random_a = app_for("alice", order="random")
    random_b = app_for("alice", order="random")
    assert [i.id for i in random_a.session.items] == [i.id for i in random_b.session.items]  # stable
    imported = [i.id for i in app_for("dave").session.items]
    shuffles = {tuple(i.id for i in app_for(name, order="random").session.items) for name in "abcdefgh"}
    assert len(shuffles) > 1 and any(list(order) != imported for order in shuffles)  # shuffled, per annotator
    assert sorted(shuffles.pop()) == sorted(imported)  # the same items
    grouped = app_for("carol", order="grouped")
    assert [i.system for i in grouped.session.items] == ["gpt2", "gpt2", "human", "human"]


async def test_blind_hides_the_writer(app_for):
    for blind in (True, False):
        app = app_for(blind=blind)
        async with app.run_test(size=(80, 24)):
            text = str(app.query_one("#item-text").render())
            assert ("written by: gpt2" in text) is not blind


async def test_relevance_shows_the_prompt_only_with_its_question(app_for):
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        assert "dragon learns to knit" not in str(app.query_one("#item-text").render())
        await pilot.press("up")  # wraps to relevance
        assert "dragon learns to knit" in str(app.query_one("#item-text").render())
    always = app_for(prompt_always=True)
    async with always.run_test(size=(80, 24)):
        assert "dragon learns to knit" in str(always.query_one("#item-text").render())


async def test_continuous_scale_typed_then_enter(app_for, study):
    app = app_for(task="story-explicit")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("1", "0", "7", "enter")  # 107 > 100: refused
        await pilot.press("8", "5", "backspace", "2", "enter")
        await settle(app, pilot)
    assert ratings_of(study, "alice") == [("e1", "overall", 82)]


async def test_title_pair_changed_words_in_bold(app_for):
    app = app_for(task="title-meaning")
    async with app.run_test(size=(80, 24)):
        text = app.query_one("#item-text").render()
        bold = {
            text.plain[s.start : s.end]
            for s in text.spans
            if getattr(s.style, "bold", False) and getattr(s.style, "reverse", False)
        }
        assert bold == {"dip", "frail"}


async def test_help_lists_keys(app_for):
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        shown = str(app.screen.query_one("Static").render())
        for word in ("undo", "skip", "flag", "comment", "go to an item", "quit"):
            assert word in shown
        await pilot.press("escape")
        assert app.screen.id == "_default"


async def test_keymap_from_config(app_for, study):
    app = app_for(keymap={"undo": "z", "skip": "k"})
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3", "z")
        await settle(app, pilot)
        assert ratings_of(study, "alice") == []
        await pilot.press("k")
        assert app.index == 1


async def test_reveal_mode_records_reviews_and_revisions(app_for, study):
    judge = study.judge("gpt-judge", {"model": "x"})
    item = study.items("story")[0]
    study.add_rating(
        item.key, "likability", judge.id, 2, raw="I would rate the story fragment as a 2 in terms of enjoyment."
    )
    app = app_for(reveal=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4", "3", "5", "5")
        await settle(app, pilot)
        from tui_rater.ui.screens import RevealScreen

        assert isinstance(app.screen, RevealScreen)
        shown = str(app.screen.query_one("#reveal-text").render())
        assert "gpt-judge" in shown and "in terms of enjoyment" in shown
        await pilot.press("down", "down", "x", "c", *"fair point", "enter")  # likability: disagree + comment
        await pilot.press("r", "3", "enter")  # revise likability to 3
        await settle(app, pilot)
        assert "you: 3" in str(app.screen.query_one("#reveal-text").render())
        await pilot.press("enter")
        assert app.index == 1
    first, revision = study._db.conn.execute(
        "SELECT id, value, revises FROM ratings WHERE attribute = 'likability' AND rater_id != ? ORDER BY id",
        [judge.id],
    ).fetchall()
    assert first[1] == 5 and revision[1] == 3 and revision[2] == first[0]  # the first stays, linked
    reviews = [json.loads(t) for (t,) in study._db.conn.execute("SELECT text FROM notes WHERE kind = 'review'")]
    assert {"verdict": "disagree", "comment": ""} in reviews and {
        "verdict": "disagree",
        "comment": "fair point",
    } in reviews


async def test_hostile_text_is_shown_literally(app_for, study):
    hostile = (
        "[bold red]not bold[/] [link=http://x]no link[/link] \x1b]0;owned\x07 \x1b[2J \x1b]52;c;Zm9v\x07 "
        "\u202eevil\u202c nul\x00 end"
    )
    study.add_items(study.task("title-fluency"), [{"id": "h", "system": None, "title": hostile}])
    app = app_for(task="title-fluency")
    async with app.run_test(size=(80, 24)):
        text = app.query_one("#item-text").render()
        assert "[bold red]not bold[/]" in text.plain and "[link=http://x]" in text.plain
        assert "\x1b" not in text.plain and "\u202e" not in text.plain and "\x00" not in text.plain
        assert "⟨ESC⟩]0;owned⟨BEL⟩" in text.plain and "⟨U+202E⟩" in text.plain
        assert not any(getattr(s.style, "link", None) for s in text.spans)
    stored = study.items("title-fluency")[0].fields["title"]
    assert stored == hostile  # the data itself is untouched


async def test_a_huge_item_is_shown_cut_with_a_notice(app_for, study):
    from tui_rater.ui.render import MAX_SHOWN_LINES

    story = "\n".join(f"line {i}" for i in range(50_000))
    study.add_items(study.task("story"), [{"id": "huge", "system": "x", "prompt": "P", "story": story}])
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("g", *"huge", "enter")
        await pilot.pause()
        text = app.query_one("#item-text").render().plain
        assert f"line {MAX_SHOWN_LINES - 1}\n" in text and f"line {MAX_SHOWN_LINES}\n" not in text
        assert f"⟨… {50_000 - MAX_SHOWN_LINES:,} more lines not shown" in text
        assert "export --what items` has all of it⟩" in text
        shown = app.query_one("#item-text")
        await pilot.press("3")  # the next question shows the same fields: the item is not laid out again
        await pilot.pause()
        assert app.query_one("#item-text") is shown and app.query_one("#item-text").render().plain == text
    assert study.item_by_id("story", "huge")[0].fields["story"] == story  # stored whole


async def test_agreement_pane_updates_and_jumps(app_for, study):
    from tui_rater.ui.agreement import AgreementScreen

    judge = study.judge("judge-x", {"m": 1})
    items = study.items("story")
    for item, value in zip(items, (1, 5, 3, 4)):
        for sample in range(2):
            study.add_rating(item.key, "grammaticality", judge.id, value, sample=sample)
    other = study.human("bob")
    for item, value in zip(items, (2, 1, 3, 4)):
        study.add_rating(item.key, "grammaticality", other.id, value)
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("a")
        assert isinstance(app.screen, AgreementScreen)
        await wait_until(pilot, lambda: app.screen.data is not None, "the agreement figures")
        shown = str(app.screen.query_one("#agreement-text").render())
        assert "judge-x" in shown and "grammaticality" in shown and "largest human–LLM gaps" in shown
        first = app.screen.data.attributes[0]
        assert first.rows[0].tau.n == 4 and first.gaps[0].item_id == "s1"  # human 1 vs llm 5
        # a new rating arrives from elsewhere: the pane recomputes on its own
        study.add_rating(items[0].key, "cohesiveness", judge.id, 2)
        before = app.screen.data.n_ratings
        await wait_until(pilot, lambda: app.screen.data.n_ratings > before, "the pane recomputed")
        assert app.screen.data.n_ratings == before + 1
        await pilot.press("enter")
        assert app.screen is app.screen_stack[0] and app.index == 1


ARROWS = {"←": "left", "→": "right", "↑": "up", "↓": "down"}


async def test_the_agreement_pane_changes_the_question_with_the_keys_its_header_names(app_for, study):
    """At 80x24 the header said "↑↓ to change" while ↑/↓ scrolled the (taller than the screen) pane and ←/→
    did nothing: the keys the header names change the question, and ↑/↓ still scroll."""
    from textual.containers import VerticalScroll

    from tui_rater.ui.agreement import AgreementScreen

    items = study.items("story")
    for n, name in enumerate(("judge-x", "judge-y", "judge-z")):
        judge = study.judge(name, {"m": n})
        for item, value in zip(items, (1, 5, 3, 4)):
            for attribute in ("grammaticality", "cohesiveness", "likability", "relevance"):
                study.add_rating(item.key, attribute, judge.id, (value + n) % 5 + 1)
    for name, values in (("bob", (2, 1, 3, 4)), ("carol", (3, 3, 2, 5))):
        other = study.human(name)
        for item, value in zip(items, values):
            for attribute in ("grammaticality", "cohesiveness", "likability", "relevance"):
                study.add_rating(item.key, attribute, other.id, value)
    header = re.compile(r"◀ (\w+) ▶ +\((\d)/4, (\S)(\S) to change\)")
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("a")
        assert isinstance(app.screen, AgreementScreen)
        await wait_until(pilot, lambda: app.screen.data is not None, "the agreement figures")

        def shown() -> re.Match:
            found = header.search(str(app.screen.query_one("#agreement-text").render()))
            assert found is not None
            return found

        pane = app.screen.query_one("#agreement", VerticalScroll)
        await wait_until(pilot, lambda: pane.max_scroll_y > 0, "a pane taller than the screen (↑/↓ scroll it)")
        first = shown()
        assert first[1] == "grammaticality" and first[2] == "1"
        previous, following = ARROWS[first[3]], ARROWS[first[4]]
        await pilot.press(following)
        await pilot.pause()
        assert (shown()[1], shown()[2]) == ("cohesiveness", "2")
        await pilot.press(following, following, following)  # round to the first again
        await pilot.pause()
        assert (shown()[1], shown()[2]) == ("grammaticality", "1")
        await pilot.press(previous)
        await pilot.pause()
        assert (shown()[1], shown()[2]) == ("relevance", "4")
        await pilot.press("down", "down")  # the other arrows scroll the pane, the question stays
        await pilot.pause()
        assert pane.scroll_y > 0 and (shown()[1], shown()[2]) == ("relevance", "4")


async def test_cancel_and_retry_jobs_from_the_app(app_for, study):
    from tui_rater.judge import queue

    judge = study.judge("judge-q", {"m": 2})
    queue.enqueue(study, judge.id, [i.key for i in study.items("story")], [("likability", "", 0)])
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("a")
        await pilot.press("x")  # asks first, naming how many jobs (tests/ui/test_terminal_team.py)
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", "the question")
        assert queue.counts(study, judge.id)["queued"] == 4
        await pilot.press("y")
        await wait_until(pilot, lambda: queue.counts(study, judge.id)["cancelled"] == 4, "4 jobs cancelled")
        await pilot.press("r")
        await wait_until(pilot, lambda: queue.counts(study, judge.id)["queued"] == 4, "4 jobs queued again")
