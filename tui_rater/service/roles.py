"""The study's leads (`tui-rater roles`): who may run its study-wide actions (none named: everyone)."""

from __future__ import annotations

from tui_rater.store.roles import leads, set_leads

__all__ = ["leads", "set_leads"]
