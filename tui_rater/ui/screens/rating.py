"""The rating screen: where the person is (item, question, digits typed), its keys, the rating flow, and the widgets.

It owns the rating keys (its ``BINDINGS``, whose ids are the keymap's, and their ``action_*``), as Posting's
``MainScreen`` does; the app keeps only ``q`` (quitting is the app's), the save queue and the background threads.
It coordinates its widgets (``ui/widgets/``): it hands them what to draw from ``RatingState``, and is handed what
the app hears from its background threads (attributes down, messages up; its own reveal reader posts it
``RevealReady``). (The app composes the widgets into this screen, its default one, so they are mounted before
the app's first Resize.) Every change goes through ``save``, the app's queue to the store thread, handed to the
screen when it is made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual import events, work
from textual.binding import Binding
from textual.screen import Screen

from tui_rater.domain import protocols
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.keys import HELP
from tui_rater.ui.answers import answer_keys, choice_letters, keymap_without
from tui_rater.ui.messages import RevealReady
from tui_rater.ui.options import AppOptions
from tui_rater.ui.screens.help import HelpScreen
from tui_rater.ui.screens.input import InputScreen
from tui_rater.ui.screens.reveal import RevealScreen
from tui_rater.ui.state import RatingState
from tui_rater.ui.widgets import EndLine, ItemPane, QuestionsPane, SavingLine, StatusLine
from tui_rater.ui.writer import Change

DIGITS = "0123456789"

# the actions that rate or move: none while the app is quitting (nothing new to save)
RATING_ACTIONS = frozenset(
    {"digit", "enter", "backspace", "attribute", "item", "undo", "skip", "flag", "comment", "goto"}
    | {"scroll", "scroll_edge", "help", "agreement"}
)


class RatingScreen(Screen[None]):
    """The main screen. The focused question's choice letters (pairwise a / b / t) answer it: the questions pane,
    focused, takes them for itself (``QuestionsPane.check_consume_key``), so Textual leaves this screen's and the
    app's bindings of those keys out of the footer and the key dispatch: on an A / B / tie screen the footer names
    ^a for the agreement pane, not `a`, which answers A there."""

    BINDINGS = [
        Binding("1", "digit('1')", "rate", id="rate"),  # shown as the focused question's keys
        *[Binding(d, f"digit('{d}')", "rate", show=False) for d in DIGITS if d != "1"],
        Binding("enter", "enter", "enter", show=False, id="enter"),
        Binding("backspace", "backspace", "delete digit", show=False, id="backspace"),
        Binding("down,tab", "attribute(1)", "ques", key_display="↑↓", priority=True, id="next_attribute"),
        Binding("up,shift+tab", "attribute(-1)", "previous question", show=False, priority=True, id="prev_attribute"),
        Binding("right,n", "item(1)", "item", key_display="←→", id="next_item"),
        Binding("left,p", "item(-1)", "previous item", show=False, id="prev_item"),
        Binding("u,ctrl+z", "undo", "undo", id="undo"),
        Binding("s", "skip", "skip", id="skip"),
        Binding("f", "flag", "flag", id="flag"),
        Binding("c", "comment", "comment", id="comment"),
        # not in the footer (the help lists it): with `c comment` and a 0-100 scale's keys, `q quit` stays in view
        Binding("g", "goto", "go", show=False, id="goto"),
        Binding("pageup", "scroll(-1)", "scroll", show=False, id="scroll_up"),
        Binding("pagedown", "scroll(1)", "scroll", show=False, id="scroll_down"),
        Binding("home", "scroll_edge(0)", "top", show=False, id="scroll_home"),
        Binding("end", "scroll_edge(1)", "end", show=False, id="scroll_end"),
        Binding("a,ctrl+a", "agreement", "stat", id="agreement"),
        Binding("question_mark", "help", "help", id="help"),
    ]

    def __init__(
        self, state: RatingState, options: AppOptions, save: Callable[[Change], None], *, id: str | None = None
    ):
        """``save``: queue a change for the store thread (the app's)."""
        super().__init__(id=id)
        self.state, self.session, self.options, self.save = state, state.session, options, save
        self.index = self.session.resume_index()
        self.focus_attr = self.session.first_unrated_attribute(self.index)
        self.typed = ""
        self.shown_at = time.monotonic()
        self.answer_letters = choice_letters(self.attribute)  # what the footer was last drawn for
        self.rate_keys = answer_keys(self.attribute)  # the footer's "1-5 rate": the focused question's keys
        self.judges = ("", "")  # the judges' one-line summary, and by number alone (J1) where labels do not fit
        self.team_share: float | None = None  # a team plan: the team's share done
        self.quitting = self.confirming = False  # the app's (q pressed; q pressed again), shown on the saving line

    @property
    def task_(self) -> Task:
        return self.session.task

    @property
    def attribute(self) -> Attribute:
        """The focused question."""
        return self.task_.attributes[self.focus_attr]

    def on_mount(self) -> None:
        self.query_one("#questions", QuestionsPane).letters = self.answer_letters

    # --- drawing ---------------------------------------------------------------------------------

    def refresh_all(self) -> None:
        self.refresh_item()
        self.refresh_questions()
        self.refresh_status()
        self.refresh_saving()

    def refresh_item(self, width: int | None = None) -> None:
        self.query_one("#item", ItemPane).show(
            self.task_,
            self.session.item(self.index),  # read ahead by ``read_ahead`` (else one row now, by its key)
            self.attribute,
            width=self.app.size.width if width is None else width,
            blind=self.options.blind,
            prompt_always=self.options.prompt_always,
        )

    def resized(self, width: int) -> None:
        """The terminal's new width (the app's size is updated only after its Resize handler)."""
        if protocols.of(self.attribute).layout(self.attribute) != "stacked":
            self.refresh_item(width)
        # the answer keys' line is cut to the width, and the questions that fit depend on it: the event's width, as
        # the app's size is updated only after this handler (it cut the line to the size before the resize)
        self.refresh_questions(width)

    def refresh_questions(self, screen_width: int | None = None) -> None:
        self.footer_for(self.attribute)
        shown = {a: self.state.shown(self.index, a) for a in self.task_.attribute_names}
        width = max(20, (screen_width or self.app.size.width or 80) - 2)
        self.query_one("#questions", QuestionsPane).show(self.task_, shown, self.focus_attr, self.typed, width=width)

    def refresh_status(self) -> None:
        status = self.query_one("#status", StatusLine)
        status.show(self.state, self.index, width=self.app.size.width, team_share=self.team_share, judges=self.judges)
        self.query_one("#end", EndLine).show(self.state, self.index, len(self.state.completed) + self.state.saving())

    def refresh_saving(self) -> None:
        line = self.state.view.line(self.quitting, self.confirming)
        self.query_one("#saving", SavingLine).show(line)

    def show_quitting(self, quitting: bool, confirming: bool) -> None:
        """The app's quitting state (``QuitWhenSaved``): the saving line says it, and the rating keys rest."""
        self.quitting, self.confirming = quitting, confirming
        self.refresh_saving()

    def show_saved(self) -> None:
        """The store thread reported a commit or a wait (``RatingState`` has it): the marks and lines follow."""
        self.refresh_questions()
        self.refresh_status()
        self.refresh_saving()

    def show_judges(self, summary: str, compact: str) -> None:
        """The background judges' line (``JudgeProgress``, which the app hears from its watcher thread)."""
        self.judges = (summary, compact)
        self.refresh_status()

    def show_team_share(self, share: float) -> None:
        """A team plan's share done (``TeamProgress``, which the app hears from its watcher thread)."""
        self.team_share = share
        self.refresh_status()

    # --- keys --------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action in RATING_ACTIONS and self.quitting)  # quitting: nothing new to save

    def on_key(self, event: events.Key) -> None:
        if not self.quitting:  # (while quitting, the app reads the keys: y, Esc)
            self.choose(event)

    def footer_for(self, attribute: Attribute) -> None:
        """The footer for the focused question: its answer keys ("1-5 rate"), and the bindings of its choice
        letters left out (the questions pane takes those keys)."""
        letters, keys = choice_letters(attribute), answer_keys(attribute)
        if letters != self.answer_letters:  # a task mixing pairwise and other questions
            self.answer_letters, self.rate_keys = letters, keys
            self.query_one("#questions", QuestionsPane).letters = letters
            if self.options.keymap:
                self.app.set_keymap(keymap_without(self.options.keymap, letters))  # (refreshes the bindings)
            else:
                self.app.refresh_bindings()  # the footer: `a` or ^a for the agreement pane
        elif keys != self.rate_keys:  # questions on different scales: the footer names this one's
            self.rate_keys = keys
            self.app.refresh_bindings()

    def keys_for(self, binding_id: str) -> str:
        """Every key of an action, as the help screen names them ("↓ tab"): the footer's short forms ("↑↓" for
        the next question) would name keys that do something else, and leave out tab, n, p."""
        bindings = [*self.BINDINGS, *self.app.BINDINGS]
        binding = next((b for b in bindings if isinstance(b, Binding) and b.id == binding_id), None)
        keys = (self.options.keymap or {}).get(binding_id)
        if keys is None:
            if binding is None:
                return "?"
            if binding_id == "rate":  # one binding per digit: the focused question's keys name the family
                return self.rate_keys
            keys = binding.key
        return " ".join(self.app.get_key_display(Binding(key.strip(), "")) for key in keys.split(",") if key.strip())

    # --- moving ----------------------------------------------------------------------------------

    def show_item(self, index: int, attribute: int | None = None, direction: int = 1) -> None:
        self.index = self._nearest_showable(max(0, min(index, len(self.session.items) - 1)), direction)
        self.focus_attr = self.state.first_unrated(self.index) if attribute is None else attribute
        self.typed = ""
        self.shown_at = time.monotonic()
        self.query_one("#item", ItemPane).scroll_home(animate=False)
        self.refresh_all()
        self.claim(self.index)
        if self.session.needs_read_ahead(self.index):
            self.read_ahead(self.index)

    @work(thread=True, group="read-ahead", exclusive=True, exit_on_error=False)
    def read_ahead(self, index: int) -> None:
        """The texts of the items around the one shown, read before the person moves to them."""
        self.session.read_ahead(index)

    def _nearest_showable(self, index: int, direction: int) -> int:
        """``index``, or the nearest showable showing from it in ``direction`` (else the other way)."""
        step = 1 if direction >= 0 else -1
        for way in (step, -step):
            i = index
            while 0 <= i < len(self.session.items):
                if self.state.showable(i):
                    return i
                i += way
        return index

    def action_attribute(self, delta: int) -> None:
        self.typed = ""
        before = self.attribute.shows
        self.focus_attr = (self.focus_attr + delta) % len(self.task_.attributes)
        if before or self.attribute.shows:
            self.refresh_item()  # the prompt appears only with the question that shows it
            if self.attribute.shows:
                self.query_one("#item", ItemPane).scroll_end(animate=False)
        self.refresh_questions()

    def action_item(self, delta: int) -> None:
        self.show_item(self.index + delta, direction=delta)

    def action_scroll(self, direction: int) -> None:
        self.query_one("#item", ItemPane).page(direction)

    def action_scroll_edge(self, end: int) -> None:
        self.query_one("#item", ItemPane).edge(end)

    def claim(self, index: int) -> None:
        """Dynamic mode: ask for the lease on the item now shown; rating waits for the answer (milliseconds),
        and an item K others got first is left for the next one."""
        session, state = self.session, self.state
        key = session.items[index].key
        # (a gold item is asked for like any other: its lease is granted without a write, but the screen goes
        # the same way, so nothing in its timing or its saving marks tells it apart)
        if not session.dynamic or key in state.claiming:
            return
        state.claiming.add(key)

        def done(granted: bool) -> None:
            state.claiming.discard(key)
            typed = state.take_deferred()
            if granted:
                for value in typed:  # the keys typed while the lease was asked for
                    self.answer(value)
                return
            state.taken.add(key)
            self.app.notify(f"item {index + 1} already has {session.per_item} people on it: on to the next one")
            if self.index == index:
                self.show_item(index + 1 if index + 1 < len(session.items) else index)

        self.save(Change("lease", lambda: session.claim(index), session.key(index), done=done))

    # --- rating ----------------------------------------------------------------------------------

    def action_digit(self, digit: str) -> None:
        attribute = self.attribute
        human = protocols.of(attribute).human_input(attribute)
        if human.kind == "number":
            if len(self.typed) < len(str(int(attribute.scale.high))):
                self.typed += digit
            self.refresh_questions()
        elif digit in human.keys:
            self.answer(human.values[human.keys.index(digit)])
        else:  # a digit that answers nothing here: say so (a silent key reads as a broken one)
            self.app.bell()
            self.app.notify(f"{digit} is not on this scale ({answer_keys(attribute).replace('-', '–')})", timeout=3)

    def action_enter(self) -> None:
        if not self.typed:
            return
        value = float(self.typed)
        self.typed = ""
        if not self.attribute.scale.contains(value):
            self.app.notify(f"{value:g} is off the scale", severity="warning")
            self.refresh_questions()
            return
        self.answer(value)

    def action_backspace(self) -> None:
        self.typed = self.typed[:-1]
        self.refresh_questions()

    def choose(self, event: events.Key) -> None:
        """Pairwise choices are answered with a / b / t (the questions pane keeps the bindings of those keys out)."""
        human = protocols.of(self.attribute).human_input(self.attribute)
        character = event.character
        if character and character in choice_letters(self.attribute):
            event.stop()
            event.prevent_default()
            self.answer(human.values[human.keys.index(character)])

    def answer(self, value: float) -> None:
        """The focused question answered: save it, then on to the next question or item at once
        (the screen shows the rating as unsaved until its commit is reported).

        A correction of a complete item moves to the next question, and only its last question moves on
        (README: "after the last question the next item appears"): an annotator fixing two questions is not
        thrown onto the next item after the first, nor shown the reveal again after each."""
        index, position, state = self.index, self.focus_attr, self.state
        key = self.session.items[index].key
        if key in state.claiming:  # dynamic mode: answered once the lease is ours (milliseconds), in order
            state.defer(value, self.session.key(index))
            self.refresh_status()
            self.refresh_saving()
            return
        if key in state.taken:
            self.app.notify(f"item {index + 1} already has {self.session.per_item} people on it")
            return
        attribute = self.task_.attributes[position].name
        correcting = state.item_complete(index)
        now = time.monotonic()
        seconds, self.shown_at = now - self.shown_at, now
        self.save_rating(index, attribute, value, seconds=round(seconds, 3))
        if correcting and position < len(self.task_.attributes) - 1:
            self.action_attribute(1)
            self.refresh_status()
        elif state.item_complete(index):
            if self.options.reveal:
                self.refresh_questions()
                self.refresh_status()
                self.open_reveal(index)
            else:
                self.show_item(index + 1 if index + 1 < len(self.session.items) else index)
        else:
            self.focus_attr = state.first_unrated(index)
            self.refresh_item()
            self.refresh_questions()
            self.refresh_status()

    def save_rating(
        self, index: int, attribute: str, value: float, *, seconds: float | None = None, revision: bool = False
    ) -> None:
        """A rating; ``revision``: a changed mind in reveal mode, linked to the rating it revises."""
        self.save(self.state.rating(index, attribute, value, seconds=seconds, revision=revision))

    def action_undo(self) -> None:
        last = self.state.undo()
        if last is None:
            self.app.notify("Nothing to undo in this session")
            return
        self.save(self.state.undo_change(last))
        self.show_item(last.index, self.task_.attribute_names.index(last.attribute))

    # --- reveal mode (Chiang & Lee App. C.3.2) -----------------------------------------------------

    @work(thread=True, group="reveal", exit_on_error=False)
    def open_reveal(self, index: int) -> None:
        # read on a connection of its own: the reveal need not wait behind saves held up by a lock
        try:
            study = self.session.study.reopen()
            try:
                self.post_message(RevealReady(index, self.session.others(index, study)))
            finally:
                study.close()
        except Exception as exc:  # the person rates on; the reveal says why it is empty
            self.post_message(RevealReady(index, {}, str(exc)))

    def on_reveal_ready(self, message: RevealReady) -> None:
        index = message.index
        if message.error:
            self.app.notify(f"Could not read the other ratings: {message.error}", severity="error")

        def after(_: None = None) -> None:
            self.show_item(index + 1 if index + 1 < len(self.session.items) else index)

        state = self.state
        screen = RevealScreen(
            self.task_, index, message.others, state.shown, self.save_rating, self.save_review, state.review_mark
        )
        self.app.push_screen(screen, after)

    def save_review(self, index: int, attribute: str, verdict: str, comment: str = "") -> None:
        session, item_key = self.session, self.session.key(index)
        run = lambda: session.review(index, attribute, verdict, comment)
        self.save(Change("note", run, item_key, attribute, note="review"))

    # --- notes -----------------------------------------------------------------------------------

    def save_note(
        self, index: int, note: str, run: Callable[[], object], done: Callable[[Any], None] | None = None
    ) -> None:
        self.save(Change("note", run, self.session.key(index), note=note, done=done))

    def action_skip(self) -> None:
        index, session = self.index, self.session
        self.save_note(index, "skip", lambda: session.note(index, "skip"))
        self.show_item(index + 1)

    def action_flag(self) -> None:
        """Flag the item; on a flagged item, take the flag back (kept in the file, marked taken back)."""
        index, session, notify = self.index, self.session, self.app.notify
        if self.state.view.is_flagged(session.key(index)):
            done = lambda _: notify("Flag taken back (f flags it again)")
            self.save_note(index, "unflag", lambda: session.unflag(index), done)
        else:
            self.save_note(index, "flag", lambda: session.note(index, "flag"), lambda _: notify("Flagged"))
        self.refresh_status()

    def action_comment(self) -> None:
        """A comment on the item; on an item with one, it is shown to edit (the edit replaces it, kept in the file;
        an empty line removes it)."""
        index, session, comments = self.index, self.session, self.state.comments
        item_key = session.items[index].key
        current = comments.get(item_key, "")

        def save(text: str | None) -> None:
            if text is None or text == current:
                return  # Esc, or nothing changed
            comments[item_key] = text
            said = "Comment removed" if not text else "Comment changed" if current else "Comment saved"
            self.save_note(index, "comment", lambda: session.comment(index, text), lambda _: self.app.notify(said))

        if current:
            prompt = "Your comment on this item (edit it; an empty line removes it, Esc keeps it):"
            self.app.push_screen(InputScreen(prompt, value=current), save)
        else:
            self.app.push_screen(InputScreen("Comment on this item:"), save)

    def action_goto(self) -> None:
        def go(query: str | None) -> None:
            if not query:
                return
            found = self.session.find(query)
            if found is None:
                self.app.notify(f"No item {query!r}", severity="warning")
            else:
                self.show_item(found)

        self.app.push_screen(InputScreen("Go to item (number or id):", f"1-{len(self.session.items)}"), go)

    def action_agreement(self) -> None:
        from tui_rater.ui.agreement import AgreementScreen

        def jump(index: int | None) -> None:
            if index is not None:
                self.show_item(index)

        session = self.session  # an item's key finds its first showing
        screen = AgreementScreen(session.study, self.task_.name, self.state.index_of.get, session.annotator)
        self.app.push_screen(screen, jump)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen([(self.keys_for(binding_id), description) for binding_id, description in HELP]))
