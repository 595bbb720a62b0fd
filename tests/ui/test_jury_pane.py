"""The app's agreement pane shows a jury beside its members, its name literally, and follows their new ratings."""

from __future__ import annotations

from tests.support import wait_until
from tui_rater.service.juries import JuryOptions, make_jury

NAME = "[bold]panel[/bold]"  # markup in a jury's name is shown as written


async def test_the_pane_has_a_row_per_member_and_one_for_the_jury_and_follows_new_ratings(app_for, study):
    from tui_rater.ui.agreement import AgreementScreen

    items = study.items("story")
    members = [study.judge(name, {"m": name}) for name in ("judge-x", "judge-y")]
    for judge, values in zip(members, ((1, 5, 3, 4), (2, 4, 3, 5))):
        for item, value in zip(items[:3], values):
            study.add_rating(item.key, "grammaticality", judge.id, value)
    other = study.human("bob")
    for item, value in zip(items, (2, 1, 3, 4)):
        study.add_rating(item.key, "grammaticality", other.id, value)
    make_jury(study, JuryOptions(NAME, ("judge-x", "judge-y"), "mean", "story"))
    app = app_for()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("a")
        assert isinstance(app.screen, AgreementScreen)
        await wait_until(pilot, lambda: app.screen.data is not None, "the agreement figures")
        shown = str(app.screen.query_one("#agreement-text").render())
        assert NAME in shown and "judge-x" in shown and "judge-y" in shown
        rows = {row.judge: row for row in app.screen.data.attributes[0].rows}
        assert set(rows) == {"judge-x", "judge-y", NAME}
        assert rows[NAME].n == 3
        # the members rate the fourth item elsewhere: the jury's row follows without being rebuilt
        study.add_rating(items[3].key, "grammaticality", members[0].id, 4)
        study.add_rating(items[3].key, "grammaticality", members[1].id, 5)
        await wait_until(
            pilot,
            lambda: {r.judge: r for r in app.screen.data.attributes[0].rows}[NAME].n == 4,
            "the jury's row with the new ratings",
        )
