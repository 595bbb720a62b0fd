"""The service layer: the use cases under the CLI and the app, and the Python API a researcher can script.

Each command is flags -> one typed request -> one call here::

    from tui_rater.service import JudgeRequest, JudgeOptions, judge, open_study

    study = open_study("hanna.db", create=False)
    outcome = judge(study, JudgeRequest(JudgeOptions("api:gpt-4o-mini"), task="story"))

Layers: ``service`` may use ``domain``, ``store``, ``judge`` and ``stats``; ``cli`` and ``ui`` call it (and never
write SQL themselves; an import contract in pyproject.toml keeps ``cli`` off the layers below). The names below
are imported when first used (PEP 562), so ``import tui_rater.service`` costs nothing: `tui-rater --help` imports
no numpy, polars or model client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_EXPORTS = {
    "open_study": "study",
    "Study": "study",
    "JudgeOptions": "judging",
    "JudgeRequest": "judge_command",
    "JudgeEvents": "judge_command",
    "QuietEvents": "judge_command",
    "JudgeOutcome": "judge_command",
    "judge": "judge_command",
    "ReportRequest": "report_command",
    "ReportOutput": "report_command",
    "report": "report_command",
    "AnnotateRequest": "annotate",
    "open_annotation": "annotate",
    "ExportRequest": "data",
    "export": "data",
    "import_items_file": "data",
    "import_ratings_file": "data",
    "SpaSetup": "spa",
    "set_up_spa": "spa",
}

__all__ = [
    "AnnotateRequest",
    "ExportRequest",
    "JudgeEvents",
    "JudgeOptions",
    "JudgeOutcome",
    "JudgeRequest",
    "QuietEvents",
    "ReportOutput",
    "ReportRequest",
    "SpaSetup",
    "Study",
    "export",
    "import_items_file",
    "import_ratings_file",
    "judge",
    "open_annotation",
    "open_study",
    "report",
    "set_up_spa",
]

if TYPE_CHECKING:
    from tui_rater.service.annotate import AnnotateRequest, open_annotation
    from tui_rater.service.data import ExportRequest, export, import_items_file, import_ratings_file
    from tui_rater.service.judge_command import JudgeEvents, JudgeOutcome, JudgeRequest, QuietEvents, judge
    from tui_rater.service.judging import JudgeOptions
    from tui_rater.service.report_command import ReportOutput, ReportRequest, report
    from tui_rater.service.spa import SpaSetup, set_up_spa
    from tui_rater.service.study import Study, open_study


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
