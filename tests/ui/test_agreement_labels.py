"""Judge labels in the agreement pane's 30-character column (the tmux walk: tests/ui/test_terminal_first_contact.py)."""

from __future__ import annotations

from tui_rater.ui.agreement import fit_label


def test_a_label_that_fits_is_shown_as_it_is():
    assert fit_label("J2 gpt-4o-mini text") == "J2 gpt-4o-mini text"


def test_a_long_label_keeps_its_number_and_mode_and_cuts_the_model_in_the_middle():
    short = fit_label("J12 qwen2.5-0.5b-instruct-q… distribution")
    assert len(short) == 30 and short.startswith("J12 qwen") and short.endswith("… distribution"), short


def test_a_long_name_of_one_word_is_cut_at_the_end_and_marked():
    short = fit_label("x" * 40)
    assert short == "x" * 29 + "…"


def test_control_characters_are_placeholders_before_measuring():
    short = fit_label("J1 \x1b[31mred… text")
    assert "\x1b" not in short and short.startswith("J1 ")
