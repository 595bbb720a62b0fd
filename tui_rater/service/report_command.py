"""`tui-rater report` as one use case: a typed request in, the report out (Rich tables for a terminal, or the
text of a file, written where asked). The notes on what shaped the numbers go to the caller's ``notes`` as they
are found, before the work."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tui_rater.domain.errors import UserError

if TYPE_CHECKING:
    from rich.console import RenderableType

    from tui_rater.stats.sections.settings import ReportSettings
    from tui_rater.store.study import Study

FORMATS = ("table", "markdown", "json", "csv", "html")  # the CLI's --format choices are these
Progress = Callable[[int, int, str], None]  # the HTML report's figures: (drawn, total, what)


@dataclass(frozen=True)
class ReportRequest:
    """The `report` command's flags as one value."""

    task: str | None = None  # None: every task with ratings
    format: str = "table"  # table, markdown, json, csv, html
    out: Path | None = None  # None: the terminal
    raw_csv: bool = False
    spa_tau: float | None = 1.1  # None: SPA's filter off, every annotator kept
    epsilon: float | None = None  # None: the paper's value for ``raters``
    raters: str = "expert"
    reference: str = "humans"
    excluded_annotators: tuple[str, ...] = ()
    families: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def settings(self) -> ReportSettings:
        """The request as the statistics' one settings value (``stats/sections/settings.py``); a bad value is one
        sentence, before a study is opened."""
        if self.format not in FORMATS:
            # any other name was written as the terminal's table text, into a file named e.g. report.xml
            raise UserError(f"no report format {self.format!r}: give one of {', '.join(FORMATS)}")
        if self.epsilon is not None and not (math.isfinite(self.epsilon) and 0 <= self.epsilon < 1):
            raise UserError(f"--epsilon must be at least 0 and below 1, not {self.epsilon:g}")
        from tui_rater.stats.sections.settings import ReportSettings, SpaSettings, VerdictSettings

        return ReportSettings(
            spa=SpaSettings(tau=self.spa_tau),
            verdict=VerdictSettings(epsilon=self.epsilon, raters=self.raters),
            reference=self.reference,
            excluded_annotators=tuple(dict.fromkeys(self.excluded_annotators)),
            families=self.families,
        )


@dataclass
class ReportOutput:
    """``shown``: for a terminal, what to print in order (a str is data, to be shown literally); else ``text``, the
    report's file text, already written to ``written`` when the request named a file."""

    shown: list[RenderableType | str] = field(default_factory=list)
    text: str | None = None
    written: Path | None = None
    neutralised: int = 0  # CSV cells that read as spreadsheet formulas, made inert


def report(
    study: Study,
    request: ReportRequest,
    notes: Callable[[str], None] = lambda text: None,
    progress: Progress | None = None,
) -> ReportOutput:
    """The papers' tables of ``study`` as ``request`` asks (its ``format`` already decided)."""
    from tui_rater.service.reports import build_reports, built_reports, excluded_annotators, what_shaped
    from tui_rater.stats import render
    from tui_rater.store.outputs import check_output_target, write_output
    from tui_rater.store.team import gold_left_out

    report_settings = request.settings()
    if request.out:
        check_output_target(request.out, study.path)  # before the work: never over a study or any SQLite file
    tasks = [request.task] if request.task else None
    # the annotators the lead leaves out: a name that is no annotator here is one sentence before anything else
    excluded = excluded_annotators(study, list(report_settings.excluded_annotators), tasks)
    for annotator, count in study.stray_human_samples(request.task).items():
        notes(
            f"note: {count} rating(s) by {annotator} under a sample other than 0 are left "
            "out of every table: a person rates an item once (sample 0)"
        )
    for task_name, (items, ratings) in gold_left_out(study, request.task).items():
        notes(
            f"note: {ratings} rating(s) of {items} gold item(s) of {task_name} are left out of agreement and "
            "verdicts (they score the annotators: `tui-rater progress`)"
        )
    if request.reference == "adjudicated":
        _say_adjudicated(study, tasks, notes)
    for task_name, counts in excluded.items():
        for name, count in counts.items():
            notes(
                f"note: {count} rating(s) by {name} of {task_name} are left out of every table, verdict and "
                "system score (--exclude-annotator)"
            )
    html = request.format == "html"
    reports = {} if html else build_reports(study, tasks, report_settings)
    excluded = {task: counts for task, counts in excluded.items() if task in reports or html}
    output = ReportOutput()
    if request.format == "table" and not request.out:
        for name, records in reports.items():
            if name in excluded:
                output.shown.append(render.excluded_sentence(excluded[name]))
            output.shown.append(render.to_rich(records, name) if records else f"{name}: no ratings yet")
        return output
    # what shaped the numbers besides the ratings (the reference, gold and other ratings left out, the settings):
    # the file says it itself, as the notes above say it on stderr
    shaped = what_shaped(study, list(reports), report_settings)
    if request.format == "json":
        text = render.to_json(reports, str(study.path), shaped, excluded)  # ensure_ascii: control characters as \u001b
    elif request.format == "csv":
        text, output.neutralised = render.to_csv(reports, raw=request.raw_csv, shaped=shaped)
    elif html:
        notes("report: computing the tables …")
        built = built_reports(study, tasks, report_settings)
        from tui_rater.stats.html import to_html  # imports matplotlib: only here

        shaped = what_shaped(study, list(built), report_settings)
        excluded = {task: counts for task, counts in excluded.items() if task in built}
        text = to_html(built, str(study.path), progress=progress, shaped=shaped, excluded=excluded)
    elif request.format == "markdown":
        text = "\n".join(
            render.to_markdown(records, name, shaped.get(name), excluded.get(name)) for name, records in reports.items()
        )
    else:
        text = _table_text(reports, shaped, excluded)
    output.text = text
    if request.out:
        # a file keeps the data as they are (like `export`); only what goes to the terminal is made safe
        write_output(request.out, text.encode("utf-8"), like=study.path)
        output.written = request.out
    return output


def _table_text(reports: dict, shaped: dict, excluded: dict) -> str:  # type: ignore[type-arg]
    """The terminal's tables as plain text (a `.txt` file, or a pipe)."""
    import io

    from rich.console import Console
    from rich.text import Text

    from tui_rater.domain.display import safe_text
    from tui_rater.stats import render

    def data(value: str) -> Text:  # a value from data, literal (as the CLI's ``data``)
        return Text(safe_text(value, inline=True))

    console = Console(highlight=False, markup=False, emoji=False, record=True, width=160, file=io.StringIO())
    for name, records in reports.items():
        console.print(data(f"{name}: " + " ".join(shaped[name].sentences())))
        if name in excluded:
            console.print(data(render.excluded_sentence(excluded[name])))
        console.print(render.to_rich(records, name))
    return console.export_text()


def _say_adjudicated(study: Study, tasks: list[str] | None, notes: Callable[[str], None]) -> None:
    """How many decided values stand in for the humans' (a note: the report itself is unchanged in form)."""
    from tui_rater.store.adjudication import adjudicated_values

    for task in tasks or study.item_task_names():
        count = sum(len(items) for items in adjudicated_values(study, study.task(task).name).values())
        notes(
            f"note: {task}: the humans' score is the adjudicated value on {count} item question(s)"
            + ("" if count else " (none adjudicated yet: `tui-rater adjudicate`)")
        )
