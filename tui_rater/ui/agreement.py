"""The live agreement pane (key `a`): human vs each LLM judge, for one attribute at a time.

Statistics are computed in daemon threads on their own connections and arrive as messages; the pane
re-computes when the file holds new ratings, never on a keypress, one computation at a time, and none is
waited for when the app ends (ui/background.py). Two kinds (issue 35 item 1): the running sums (agreement counts,
bias, confusion, distributions: ``service/live.py:LivePane``) are updated from the ratings stored since the last
look, in milliseconds, and kept for the app's life (the pane opened again starts from them); the full computation
(α, τ, κ, the alt-test, the system means, the gaps) runs beside them, and the pane says its figures are an earlier
look's while it catches up.

The full computation runs in a process of its own, which its thread waits for (service/pane_worker.py: in the
thread itself it shared the interpreter's lock with the keys).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from tui_rater.domain.display import safe_text
from tui_rater.service.pane_worker import PaneComputationFailed, PaneRequest, PaneWorker, RetestRequest
from tui_rater.ui.background import Background
from tui_rater.ui.retest import retest_text
from tui_rater.ui.screens.confirm import ConfirmScreen

if TYPE_CHECKING:  # the statistics stack (polars, scipy: ~0.8 s) is imported in the workers, never on the UI thread
    from tui_rater.domain.values import ChangeMarker
    from tui_rater.service.live import AttributePane, JudgeRow, LivePane, PaneData, Stat, SumsLook
    from tui_rater.service.retest_lines import RetestLines
    from tui_rater.service.study import Study

SHADES = " ░▒▓█"
# the running sums of each (study file, task), kept while the app runs: one thread at a time updates them
_SUMS_ONE_AT_A_TIME = threading.Lock()
_RUNNING_SUMS: dict[tuple[str, str], LivePane] = {}
NAME_WIDTH = 30  # the judge column: the table is 75 characters wide, for 80 columns


def fit_label(label: str, width: int = NAME_WIDTH) -> str:
    """A judge's label in ``width`` characters, abbreviated where it says least: ``J1 qwen2.5-0.5b-instr… constrained``
    keeps the judge's number and its mode (the last word) and cuts the model's name in the middle, marked "…"
    (a plain cut left ``J1 tiny-qwen2.5-0.5b-instruct constra``). The pane lists the full labels it cut."""
    label = safe_text(label, inline=True)
    if len(label) <= width:
        return label
    head, _, rest = label.partition(" ")
    middle, _, tail = rest.rpartition(" ")
    room = width - len(head) - len(tail) - 3  # two spaces and "…"
    if head and middle and tail and room >= 4:
        return f"{head} {middle[:room]}… {tail}"
    return label[: width - 1] + "…"


def _full_labels(text: Text, names: list[str], width: int = NAME_WIDTH) -> None:
    """The labels the table abbreviated, whole: each judge stays identifiable at 80 columns."""
    cut = [name for name in names if len(safe_text(name, inline=True)) > width]
    for name in cut:
        text.append(f"  {fit_label(name, width)} = {safe_text(name, inline=True)}\n", style="dim")


def _f(stat: Stat | None, digits: int = 2, suffix: str = "") -> str:
    return "n/a" if stat is None or stat.value is None else f"{stat.value:.{digits}f}{suffix}"


def _mass(row: JudgeRow) -> str:
    readings = row.readings
    return "–" if readings is None or readings.mass_mean is None else f"{readings.mass_mean:.2f}"


def _judge_rows(text: Text, pane: AttributePane) -> None:
    """One line per judge: agreement by the question's level, its scale mass and agreement-readiness."""
    if pane.nominal:
        text.append(
            f"{'judge':<30} {'κ':>6} {'α nom':>6} {'exact':>6} {'n':>4} {'mass':>5} {'ready':>5}\n", style="bold"
        )
    else:
        text.append(
            f"{'judge':<30} {'α':>6} {'τ':>6} {'exact':>6} {'bias':>6} {'n':>4} {'mass':>5} {'ready':>5}\n",
            style="bold",
        )
    for row in pane.rows:
        name = fit_label(row.judge)
        ready = "yes" if row.ready else "NO ⚠"
        if pane.nominal:
            line = f"{name:<30} {_f(row.kappa):>6} {_f(row.alpha):>6} {_f(row.exact, 0, '%'):>6} {row.n:>4} "
        else:
            line = (
                f"{name:<30} {_f(row.alpha):>6} {_f(row.tau):>6} {_f(row.exact, 0, '%'):>6} {_f(row.bias):>6} "
                f"{row.n:>4} "
            )
        text.append(line + f"{_mass(row):>5} ")
        text.append(f"{ready:>5}\n", style="" if row.ready else "bold")
        if not row.ready and row.readings is not None:
            text.append(f"  ⚠ not agreement-ready: {safe_text(row.readings.reason, inline=True)}\n", style="italic")
    _full_labels(text, [row.judge for row in pane.rows])


def _verdicts(text: Text, pane: AttributePane) -> None:
    """Per judge: may it replace the humans? The pane is read after every rating, so the words come from the
    anytime-valid alt-test (e-values, e-BH: wrong at most 5 % of the time whenever it is read); the paper's fixed-n
    ω and ρ follow on a line of their own, for the analysis at the end. Or why there is no verdict."""
    rows = [row for row in pane.rows if row.verdict is not None]
    if not rows:
        return
    verdicts = [row.verdict for row in rows if row.verdict is not None]
    text.append(f"\nmay the judge replace the humans? (alt-test, ε {verdicts[0].epsilon:g})\n", style="bold")
    reasons = {v.note for v in verdicts if v.passed is None}
    if len(reasons) == 1 and all(v.passed is None for v in verdicts):  # the same reason for every judge: once
        text.append(f"no verdict: {safe_text(reasons.pop())}\n", style="dim")
        return
    text.append("anytime: valid at every look (e-values); fixed-n: read once, at the end\n", style="dim")
    for row in rows:
        verdict = row.verdict
        if verdict is None:
            continue
        name = fit_label(row.judge)
        if verdict.passed is None or verdict.winning_rate is None or verdict.advantage_probability is None:
            line = f"{name:<30} no verdict: {safe_text(verdict.note)}"
        else:
            anytime = verdict.anytime
            if anytime is None or anytime.passed is None or anytime.winning_rate is None:
                line = f"{name:<30} anytime: no verdict"
            else:
                said = "yes, may replace them" if anytime.passed else "not yet"
                line = f"{name:<30} anytime ω {anytime.winning_rate:.2f}  {said}"  # the humans: on the next line
            fixed = "yes" if verdict.passed else "no"
            line += (
                f"\n{'':<30} fixed-n ω {verdict.winning_rate:.2f}  ρ {verdict.advantage_probability:.2f}  {fixed} "
                f"({verdict.humans} humans)"
            )
        text.append(line)
        if not row.ready:
            text.append("  ⚠ not agreement-ready", style="bold")
        text.append("\n")


def _interval(bounds: tuple[float, float] | None) -> str:
    return "–" if bounds is None else f"{bounds[0]:.2f}–{bounds[1]:.2f}"


def _watched(text: Text, pane: AttributePane) -> None:
    """Each system's mean human rating as 95 % confidence sequences: they hold at every look at once, so the
    pane may be read after every rating (a fixed-n interval read so would miss the truth far more often)."""
    if not pane.watched:
        return
    text.append("\nsystem means, anytime 95 % (confidence sequences: valid at every look)\n", style="bold")
    text.append(f"{'judge':<30} {'system':<12} {'n':>4}  {'PPI':<13} humans only\n", style="bold")
    for mean in pane.watched:
        name = fit_label(mean.judge)
        system = safe_text(mean.system, inline=True)[:12]
        if mean.note:
            text.append(f"{name:<30} {system:<12} {safe_text(mean.note, inline=True)}\n", style="dim")
            continue
        text.append(f"{name:<30} {system:<12} {mean.rated:>4}  {_interval(mean.ppi):<13} {_interval(mean.humans)}\n")


def _confusion(text: Text, pane: AttributePane) -> None:
    if pane.confusion is None:
        return
    text.append(
        f"\nconfusion: humans (rows) × {safe_text(pane.confusion_judge or '', inline=True)} (columns)\n",
        style="bold",
    )
    top = max(1, int(pane.confusion.max()))
    names = [safe_text(name, inline=True)[:3] for name in pane.label_names]
    text.append("     " + "".join(f"{name:>4}" for name in names) + "\n")
    for name, row in zip(names, pane.confusion):
        text.append(f"{name:>4} ")
        for count in row:
            shade = SHADES[min(len(SHADES) - 1, round((len(SHADES) - 1) * count / top))]
            text.append(f" {shade}{count:>2}" if count else "   ·")
        text.append("\n")


def _distributions(text: Text, pane: AttributePane) -> None:
    if not pane.distributions:
        return
    names = [safe_text(name, inline=True)[:3] for name in pane.label_names]
    if pane.nominal:  # shares of each evaluator's item verdicts; never a mean of the codes
        text.append("\nverdict shares (each item's verdict: its annotators' vote)\n", style="bold")
        for evaluator, counts in pane.distributions.items():
            total = sum(counts)
            shares = "  ".join(
                f"{name} {100 * c / total:3.0f}%" if total else f"{name}   –" for name, c in zip(names, counts)
            )
            text.append(_evaluator(evaluator) + f"{shares}  (n {total})\n")
        return
    text.append("\nrating distributions\n", style="bold")
    for evaluator, counts in pane.distributions.items():
        total = max(1, sum(counts))
        bars = " ".join(f"{name}:{'█' * round(8 * c / total):<8}" for name, c in zip(names, counts))
        text.append(_evaluator(evaluator) + f"{bars}\n")


def _evaluator(name: str, width: int = 16) -> str:
    """The distributions' first column: a name that does not fit has a line of its own, whole, and its bars
    go on the next line (a judge's label cut at 16 characters lost its mode and often its number)."""
    name = safe_text(name, inline=True)
    return f"{name:<{width}} " if len(name) <= width else f"{name}\n{'':<{width}} "


def _gaps(text: Text, pane: AttributePane, selected_gap: int) -> None:
    if not pane.gaps:
        return
    title = "human–LLM disagreements" if pane.nominal else "largest human–LLM gaps"
    text.append(f"\n{title} (Enter jumps to the item)\n", style="bold")
    for i, gap in enumerate(pane.gaps):
        marker = "▶ " if i == selected_gap else "  "
        if pane.nominal:
            detail = f"human {safe_text(gap.human_label, inline=True)}  llm {safe_text(gap.llm_label, inline=True)}"
        else:
            detail = f"human {gap.human:.2f}  llm {gap.llm:.2f}  gap {gap.size:.2f}"
        text.append(
            f"{marker}{safe_text(gap.item_id, inline=True)[:24]:<24} {detail}\n",
            style="reverse" if i == selected_gap else "",
        )


def same_height(before: Text | None, after: Text, width: int) -> bool:
    """Do ``before`` and ``after`` take as many lines at ``width`` columns? True only when sure: the same number of
    lines, none wider than ``width`` (a line that wraps takes more)."""
    if before is None or width <= 0:
        return False
    lines = after.plain.split("\n")
    if len(lines) != before.plain.count("\n") + 1:
        return False
    return all(cell_len(line) <= width for line in (*lines, *before.plain.split("\n")))


def render_pane(data: PaneData, focus: int, selected_gap: int, question_keys: str = "←→") -> Text:
    """``question_keys``: the keys that change the question, as bound (the header names them)."""
    head, body = render_parts(data, focus, selected_gap, question_keys)
    return head + body


def render_parts(data: PaneData, focus: int, selected_gap: int, question_keys: str = "←→") -> tuple[Text, Text]:
    """The pane in two parts: its head (the counts, the judge queue: they change with every rating stored) and the
    question in focus (which a rating of another question leaves as it was) -- drawn as two widgets, so that a
    rating redraws only what it changed (issue 35 item 1: keys while the pane computes)."""
    text = Text()
    q = data.queue
    text.append(
        f"{safe_text(data.task, inline=True)} · {data.n_ratings} ratings · judge queue: {q['done']} done, "
        f"{q['queued'] + q['leased']} waiting, {q['failed']} failed\n",
        style="bold",
    )
    for failure in data.failures:
        text.append(
            f"  failed: {safe_text(failure['item'], inline=True)} {safe_text(failure['attribute'], inline=True)}: "
            f"{safe_text(failure['error_kind'], inline=True)}\n",
            style="italic",
        )
    if data.stale:
        text.append("α, τ, κ, verdicts, system means and gaps: an earlier look's, computing…\n", style="dim italic")
    head, text = text, Text()
    if not data.attributes:
        return head, text
    pane = data.attributes[focus]
    text.append(f"\n◀ {safe_text(pane.attribute, inline=True)} ▶ ", style="bold reverse")
    text.append(f" ({focus + 1}/{len(data.attributes)}, {question_keys} to change)\n\n")
    if not pane.humans or not any(row.n for row in pane.rows):
        text.append("No human and LLM ratings of the same items yet.\n", style="dim")
    if pane.rows:
        _judge_rows(text, pane)
        _verdicts(text, pane)
    _watched(text, pane)
    _confusion(text, pane)
    _distributions(text, pane)
    _gaps(text, pane, selected_gap)
    return head, text


class AgreementScreen(Screen[int | None]):
    """Dismisses with the index of an item to re-read, or None."""

    BINDINGS = [
        # short words: every key, `q quit` last, fits the footer at 80 columns
        Binding("a,escape", "close", "back", id="agreement.close"),
        # ←/→ as the header's ◀ ▶; ↑/↓ scroll the pane (at 80x24 it is taller than the screen, and ↑/↓ scrolled it
        # while the header said "↑↓ to change"). Priority: the scrolling pane binds ←/→ to scroll sideways.
        # (The ids stay those of a keymap written before: agreement.up is the previous question.)
        Binding("left", "attribute(-1)", "question", key_display="←→", priority=True, id="agreement.up"),
        Binding("right", "attribute(1)", "question", show=False, priority=True, id="agreement.down"),
        Binding("j", "gap(1)", "gap", key_display="j/k", id="agreement.next_gap"),
        Binding("k", "gap(-1)", "prev gap", show=False, id="agreement.prev_gap"),
        Binding("enter", "jump", "go to item", id="agreement.jump"),
        Binding("x", "queue('cancel')", "cancel jobs", id="agreement.cancel"),
        Binding("r", "queue('retry')", "retry failed", id="agreement.retry"),
    ]

    class Computed(Message):
        """New numbers for the pane; a newer computation replaces one not yet shown."""

        def __init__(self, data: PaneData, marker: ChangeMarker, seen: tuple[int, int, int] = (0, 0, 0)) -> None:
            super().__init__()
            self.data, self.marker, self.seen = data, marker, seen

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, AgreementScreen.Computed)

    class SumsComputed(Message):
        """The running sums after a look that found changes; a newer look replaces one not yet shown."""

        def __init__(self, look: SumsLook) -> None:
            super().__init__()
            self.look = look

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, AgreementScreen.SumsComputed)

    class RetestComputed(Message):
        """The annotator's test-retest summary (computed apart: the pane's numbers do not wait for it)."""

        def __init__(self, summary: RetestLines, marker: ChangeMarker) -> None:
            super().__init__()
            self.summary, self.marker = summary, marker

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, AgreementScreen.RetestComputed)

    class Failed(Message):
        """A computation raised (its words are the exception's)."""

        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(
        self,
        study: Study,
        task_name: str,
        item_index_of: Callable[[int], int | None],
        annotator: str | None = None,
    ):
        super().__init__()
        self.study, self.task_name, self.item_index_of = study, task_name, item_index_of
        self.annotator = annotator  # whose test-retest lines to show (None: none)
        self.retest: RetestLines | None = None
        self.retest_marker: ChangeMarker | None = None
        self.data: PaneData | None = None  # what the pane shows: the sums merged over the full computation
        self.early: PaneData | None = None  # the sums alone, before the full computation's first figures
        self.full: PaneData | None = None  # the full computation's figures, and what it read
        self.full_seen: tuple[int, int, int] | None = None
        self.sums: SumsLook | None = None
        self._sums_posted = False
        self._looked = threading.Event()  # the running sums' first look is done: the rest may start
        self.focus_attr = 0
        self.selected_gap = 0
        self.marker: ChangeMarker | None = None
        self.computed_marker: ChangeMarker | None = None  # the file's state at the last computation delivered
        self.worker = PaneWorker()
        self.pane = Background("agreement-pane", self._compute, self._failed)
        self.sums_work = Background("agreement-sums", self._compute_sums, self._failed, _SUMS_ONE_AT_A_TIME)
        self.retest_work: Background | None = None
        self._drawn: dict[str, Text] = {}  # what each part of the pane shows now

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="agreement"):
            yield Static(id="retest")  # shown once the annotator has rated items twice
            yield Static(id="agreement-head")  # the counts and the queue: ``render_parts``
            yield Static(Text("computing…", style="dim"), id="agreement-text")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        # the objects alive now (the app's, its study's items: millions on a large study) kept out of the garbage
        # collector's full collections while the pane is open: each traversed them all on the UI thread, 130-400 ms
        # under load, 22 times in 45 s at 100k items while the sums and results arrived (the keys' slowest, issue 35
        # item 1); what the pane makes and drops meanwhile is collected as ever, and the rest again once it closes
        gc.freeze()
        self.query_one("#retest", Static).display = False
        self.query_one("#agreement-head", Static).display = False
        self.sums_work.request()
        self.set_interval(0.5, self.sums_work.request)
        self.set_interval(2.0, self.compute)
        if self.annotator is not None:
            self.retest_work = Background("retest-pane", self._compute_retest, self._failed)
            self.set_interval(2.0, self._request_retest)

    def on_unmount(self) -> None:
        gc.unfreeze()  # (collected as ever again: the pane's keys are done)
        self.pane.close()  # a computation still running delivers nothing and is never waited for
        self.worker.close()  # (its process killed: an abandoned computation stops at once)
        self.sums_work.close()
        if self.retest_work is not None:
            self.retest_work.close()

    def compute(self) -> None:
        """Compute the pane's numbers (off the UI thread), or once more after the computation running now; from the
        running sums' first look on (``_looked``)."""
        if self._looked.is_set():
            self.pane.request()

    def _request_retest(self) -> None:
        if self._looked.is_set() and self.retest_work is not None:
            self.retest_work.request()

    def _after_first_look(self) -> None:
        """The full computation and the test-retest lines start once the running sums' first look is done: started
        with it, the worker process's start and imports took the CPU from the first numbers (seconds at 100k items
        on a busy machine: issue 35 item 1), and the full computation's figures come minutes later there anyway."""
        if not self._looked.is_set():
            self._looked.set()
            self.pane.request()
            if self.retest_work is not None:
                self.retest_work.request()

    def _compute(self) -> None:
        # in a process of its own (service/pane_worker.py): in a thread here it shared the interpreter's lock with
        # the screen, and every key waited for it (issue 35 item 1)
        request = PaneRequest(
            str(self.study.path), self.study.task_files, self.study.readonly, self.task_name, self.computed_marker
        )
        found = self.worker.compute_full_pane(request)
        if found is None:  # the pane closed meanwhile
            return
        data, marker, seen = found
        if data is not None and not self.pane.closed:  # None: nothing new in the file, no work
            self.computed_marker = marker  # (kept by the thread: the next run compares with it at once)
            self.post_message(self.Computed(data, marker, seen))

    def _compute_sums(self) -> None:
        from tui_rater.service.live import LivePane

        study = self.study.reopen()
        try:
            key = (str(study.path), self.task_name)
            live = _RUNNING_SUMS.get(key)
            if live is None:
                live = _RUNNING_SUMS[key] = LivePane(self.task_name)
            look = live.look(study, always=not self._sums_posted)  # a pane opened again: the sums kept
            if look is not None and not self.sums_work.closed:
                self._sums_posted = True  # (kept by the thread)
                self.post_message(self.SumsComputed(look))
        finally:
            study.close()
            self._after_first_look()  # (a look that raised too: the full computation says what is wrong)

    def _compute_retest(self) -> None:
        assert self.annotator is not None
        # in the worker process too: in this thread the summary's statistics (scipy) held the interpreter's lock
        # while the keys waited, each time a full computation had ended (issue 35 item 1)
        request = RetestRequest(
            str(self.study.path),
            self.study.task_files,
            self.study.readonly,
            self.task_name,
            self.annotator,
            self.retest_marker,
        )
        found = self.worker.compute_retest(request)
        if found is None:  # the pane closed meanwhile
            return
        summary, marker = found
        if summary is not None and self.retest_work is not None and not self.retest_work.closed:
            self.retest_marker = marker  # (kept by the thread: the next run compares with it at once)
            self.post_message(self.RetestComputed(summary, marker))

    def _failed(self, exc: BaseException) -> None:
        """A computation raised: said on the pane (the app and its unsaved ratings carry on)."""
        said = str(exc) if isinstance(exc, PaneComputationFailed) else f"{type(exc).__name__}: {exc}"
        self.post_message(self.Failed(said))

    def on_agreement_screen_failed(self, message: Failed) -> None:
        line = Text("the pane's numbers could not be computed: ", style="bold red")
        line.append(safe_text(message.error, inline=True))  # an error may quote data: shown literally
        self._draw("#agreement-text", line)

    def on_agreement_screen_computed(self, message: Computed) -> None:
        self.full, self.full_seen, self.marker = message.data, message.seen, message.marker
        self.merge()

    def on_agreement_screen_sums_computed(self, message: SumsComputed) -> None:
        self.sums = message.look
        self.merge()

    def merge(self) -> None:
        """The sums as of their last look over the full computation's figures, marked stale while those are older."""
        if self.sums is None:
            self.data = self.full
        else:
            from tui_rater.service.live import merge

            look = self.sums
            merged = merge(self.full, look.sums, look.task, look.queue, look.failures)
            merged.stale = self.full_seen != look.sums.seen
            if self.full is None:
                self.early = merged
            else:
                self.data = merged
        self.redraw()

    @property
    def shown(self) -> PaneData | None:
        """What the pane shows: ``data`` once the full computation has delivered, the running sums alone before."""
        return self.data if self.data is not None else self.early

    def on_agreement_screen_retest_computed(self, message: RetestComputed) -> None:
        self.retest, self.retest_marker = message.summary, message.marker
        self.redraw()

    def redraw(self) -> None:
        if self.shown is not None:
            head, body = render_parts(self.shown, self.focus_attr, self.selected_gap, self.question_keys())
            self.query_one("#agreement-head", Static).display = True
            head.rstrip()  # (its last line's end: the body's first line is the blank before the question)
            self._draw("#agreement-head", head)
            self._draw("#agreement-text", body)
        self.redraw_retest()

    def _draw(self, part: str, text: Text) -> None:
        """Show ``text`` in the part, unless it shows that already: a redraw of the same text is Textual's whole
        layout and rendering of the part again, on the UI thread, for nothing. A text as tall as the one shown is
        drawn without a layout: the part keeps its size, and the screen's layout (every widget's size found again by
        rendering its content, then the whole screen painted) was most of the UI thread's work for each key and each
        result of the full computation (issue 35 item 1: keys < 50 ms p99 while the pane computes)."""
        before = self._drawn.get(part)
        if before == text:
            return
        self._drawn[part] = text
        widget = self.query_one(part, Static)
        widget.update(text, layout=not same_height(before, text, widget.content_region.width))

    def question_keys(self) -> str:
        """The keys bound now (a keymap may have moved them) to the previous and the next question: ``←→``."""
        found: dict[str, str] = {}
        for key, active in self.active_bindings.items():
            if active.binding.id in ("agreement.up", "agreement.down"):
                found.setdefault(active.binding.id, self.app.get_key_display(Binding(key, "")))
        keys = [found.get(which, "?") for which in ("agreement.up", "agreement.down")]
        return "".join(keys) if all(key in ("←", "→", "↑", "↓") for key in keys) else "/".join(keys)

    def redraw_retest(self) -> None:
        """The test-retest lines of the question in focus (the pane's, else the task's first)."""
        widget = self.query_one("#retest", Static)
        text = None
        if self.retest is not None and self.retest.attributes:
            names = [a.attribute for a in self.shown.attributes] if self.shown and self.shown.attributes else []
            name = names[self.focus_attr] if names else self.retest.attributes[0]
            text = retest_text(self.retest, name)
        widget.display = text is not None
        if text is not None:
            widget.update(text)

    def action_attribute(self, delta: int) -> None:
        if self.shown and self.shown.attributes:
            self.focus_attr = (self.focus_attr + delta) % len(self.shown.attributes)
            self.selected_gap = 0
            self.redraw()

    def action_gap(self, delta: int) -> None:
        if self.shown and self.shown.attributes:
            gaps = self.shown.attributes[self.focus_attr].gaps
            if gaps:
                self.selected_gap = (self.selected_gap + delta) % len(gaps)
                self.redraw()

    def action_jump(self) -> None:
        if self.shown and self.shown.attributes:
            gaps = self.shown.attributes[self.focus_attr].gaps
            if gaps:
                self.dismiss(self.item_index_of(gaps[self.selected_gap].item_key))

    def action_queue(self, what: str) -> None:
        """Cancel the judges' waiting jobs (after asking, naming how many), or queue failed and cancelled ones
        again."""
        if what == "cancel":
            self._ask_cancel()
        else:
            self._run_queue("retry")

    @work(thread=True, group="queue")
    def _ask_cancel(self) -> None:
        from tui_rater.domain.errors import UserError
        from tui_rater.service.app_reads import check_lead
        from tui_rater.service.judging import waiting_jobs

        study = self.study.reopen()
        try:
            try:
                check_lead(study, self.annotator, "cancel the judges' queue")
            except UserError as exc:
                self.app.call_from_thread(self.notify, str(exc), severity="error")
                return
            waiting = waiting_jobs(study)
        finally:
            study.close()
        if waiting == 0:
            self.app.call_from_thread(self.notify, "no judge jobs are waiting: nothing to cancel")
            return
        question = (
            f"Cancel the study's {waiting} waiting judge job{'s' if waiting != 1 else ''}? This stops every "
            "judge's queued work for every annotator of this file (r queues cancelled jobs again)."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._run_queue("cancel")

        self.app.call_from_thread(self.app.push_screen, ConfirmScreen(question), answered)

    @work(thread=True, group="queue")
    def _run_queue(self, what: str) -> None:
        from tui_rater.service.judging import cancel_jobs, retry_jobs

        study = self.study.reopen()
        try:
            n = cancel_jobs(study) if what == "cancel" else retry_jobs(study)
        finally:
            study.close()
        self.app.call_from_thread(self.notify, f"{'cancelled' if what == 'cancel' else 'queued again'}: {n} jobs")
        self.computed_marker = None
        self.compute()

    def action_close(self) -> None:
        self.dismiss(None)
