"""The live agreement pane (key `a`): human vs each LLM judge, for one attribute at a time.

Statistics are computed in a thread worker on its own connection and arrive as a message;
the pane re-computes when the file holds new ratings, never on a keypress.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from tui_rater.domain.display import safe_text
from tui_rater.service.live import agreement_pane
from tui_rater.stats.live import AttributePane, JudgeRow, PaneData

SHADES = " ░▒▓█"


def _f(stat, digits=2, suffix="") -> str:
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
        name = safe_text(row.judge)[:30]
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
            text.append(f"  ⚠ not agreement-ready: {safe_text(row.readings.reason)}\n", style="italic")


def _confusion(text: Text, pane: AttributePane) -> None:
    if pane.confusion is None:
        return
    text.append(f"\nconfusion: humans (rows) × {safe_text(pane.confusion_judge or '')[:30]} (columns)\n", style="bold")
    top = max(1, int(pane.confusion.max()))
    names = [safe_text(name)[:3] for name in pane.label_names]
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
    names = [safe_text(name)[:3] for name in pane.label_names]
    if pane.nominal:  # shares of each evaluator's item verdicts; never a mean of the codes
        text.append("\nverdict shares (each item's verdict: its annotators' vote)\n", style="bold")
        for evaluator, counts in pane.distributions.items():
            total = sum(counts)
            shares = "  ".join(
                f"{name} {100 * c / total:3.0f}%" if total else f"{name}   –" for name, c in zip(names, counts)
            )
            text.append(f"{safe_text(evaluator)[:16]:<16} {shares}  (n {total})\n")
        return
    text.append("\nrating distributions\n", style="bold")
    for evaluator, counts in pane.distributions.items():
        total = max(1, sum(counts))
        bars = " ".join(f"{name}:{'█' * round(8 * c / total):<8}" for name, c in zip(names, counts))
        text.append(f"{safe_text(evaluator)[:16]:<16} {bars}\n")


def _gaps(text: Text, pane: AttributePane, selected_gap: int) -> None:
    if not pane.gaps:
        return
    title = "human–LLM disagreements" if pane.nominal else "largest human–LLM gaps"
    text.append(f"\n{title} (Enter jumps to the item)\n", style="bold")
    for i, gap in enumerate(pane.gaps):
        marker = "▶ " if i == selected_gap else "  "
        if pane.nominal:
            detail = f"human {safe_text(gap.human_label)}  llm {safe_text(gap.llm_label)}"
        else:
            detail = f"human {gap.human:.2f}  llm {gap.llm:.2f}  gap {gap.size:.2f}"
        text.append(
            f"{marker}{safe_text(gap.item_id)[:24]:<24} {detail}\n", style="reverse" if i == selected_gap else ""
        )


def render_pane(data: PaneData, focus: int, selected_gap: int) -> Text:
    text = Text()
    q = data.queue
    text.append(
        f"{data.task} · {data.n_ratings} ratings · judge queue: {q['done']} done, "
        f"{q['queued'] + q['leased']} waiting, {q['failed']} failed\n",
        style="bold",
    )
    for failure in data.failures:
        text.append(
            f"  failed: {safe_text(failure['item'])} {safe_text(failure['attribute'])}: {failure['error_kind']}\n",
            style="italic",
        )
    if not data.attributes:
        return text
    pane = data.attributes[focus]
    text.append(f"\n◀ {pane.attribute} ▶ ", style="bold reverse")
    text.append(f" ({focus + 1}/{len(data.attributes)}, ↑↓ to change)\n\n")
    if not pane.humans or not any(row.n for row in pane.rows):
        text.append("No human and LLM ratings of the same items yet.\n", style="dim")
    if pane.rows:
        _judge_rows(text, pane)
    _confusion(text, pane)
    _distributions(text, pane)
    _gaps(text, pane, selected_gap)
    return text


class AgreementScreen(Screen[int | None]):
    """Dismisses with the index of an item to re-read, or None."""

    BINDINGS = [
        Binding("a,escape", "close", "back to rating", id="agreement.close"),
        Binding("up", "attribute(-1)", "attribute", id="agreement.up"),
        Binding("down", "attribute(1)", "attribute", show=False, id="agreement.down"),
        Binding("j", "gap(1)", "next gap", id="agreement.next_gap"),
        Binding("k", "gap(-1)", "prev gap", id="agreement.prev_gap"),
        Binding("enter", "jump", "jump to item", id="agreement.jump"),
        Binding("x", "queue('cancel')", "cancel jobs", id="agreement.cancel"),
        Binding("r", "queue('retry')", "retry failed", id="agreement.retry"),
    ]

    class Computed(Message):
        """New numbers for the pane; a newer computation replaces one not yet shown."""

        def __init__(self, data: PaneData, marker: tuple) -> None:
            super().__init__()
            self.data, self.marker = data, marker

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, AgreementScreen.Computed)

    def __init__(self, study, task_name: str, item_index_of):
        super().__init__()
        self.study, self.task_name, self.item_index_of = study, task_name, item_index_of
        self.data: PaneData | None = None
        self.focus_attr = 0
        self.selected_gap = 0
        self.marker: tuple | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="agreement"):
            yield Static(Text("computing…", style="dim"), id="agreement-text")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.compute()
        self.set_interval(2.0, self.compute)

    @work(thread=True, exclusive=True, group="agreement")
    def compute(self) -> None:
        study = self.study.reopen()
        try:
            data, marker = agreement_pane(study, self.task_name, self.marker)
            if data is not None:  # None: nothing new in the file, no work
                self.post_message(self.Computed(data, marker))
        finally:
            study.close()

    def on_agreement_screen_computed(self, message: Computed) -> None:
        self.data, self.marker = message.data, message.marker
        self.redraw()

    def redraw(self) -> None:
        if self.data is not None:
            self.query_one("#agreement-text", Static).update(render_pane(self.data, self.focus_attr, self.selected_gap))

    def action_attribute(self, delta: int) -> None:
        if self.data and self.data.attributes:
            self.focus_attr = (self.focus_attr + delta) % len(self.data.attributes)
            self.selected_gap = 0
            self.redraw()

    def action_gap(self, delta: int) -> None:
        if self.data and self.data.attributes:
            gaps = self.data.attributes[self.focus_attr].gaps
            if gaps:
                self.selected_gap = (self.selected_gap + delta) % len(gaps)
                self.redraw()

    def action_jump(self) -> None:
        if self.data and self.data.attributes:
            gaps = self.data.attributes[self.focus_attr].gaps
            if gaps:
                self.dismiss(self.item_index_of(gaps[self.selected_gap].item_key))

    @work(thread=True, group="queue")
    def action_queue(self, what: str) -> None:
        """Cancel the judges' waiting jobs, or queue failed and cancelled ones again."""
        from tui_rater.service.judging import cancel_jobs, retry_jobs

        study = self.study.reopen()
        try:
            n = cancel_jobs(study) if what == "cancel" else retry_jobs(study)
        finally:
            study.close()
        self.app.call_from_thread(self.notify, f"{'cancelled' if what == 'cancel' else 'queued again'}: {n} jobs")
        self.marker = None
        self.compute()

    def action_close(self) -> None:
        self.dismiss(None)
