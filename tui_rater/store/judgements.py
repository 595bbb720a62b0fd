"""``export --what judgements``: every judge rating with its whole record, out of SQLite.

One row per stored judge rating (each sample of each presentation): the value and how the reply was
read (parse status, the answered letter of a pair, finish reason, attempts, seed), the reply itself
and the replies before it (regenerations; the earlier answers of a conversation), and for a
distribution or implicit pass its facts -- the options' probabilities as the model gave them, the
normalised distribution, the scale mass, the unscored options, the top-k tokens. A pass's facts are
stored once, with its first sample; each of its samples' rows carries them here, so every row
stands alone. ``details`` is the rating's own stored record, verbatim.

CSV, TSV and Parquet hold the nested values (distribution, top-k, replies) as JSON text; JSONL as
JSON values.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from tui_rater.domain.details import Details
from tui_rater.store.outputs import write_output
from tui_rater.store.study import RATINGS_IN_FORCE, Study
from tui_rater.store.table_files import file_format

# column -> polars type of the flat formats (JSON text where the value is nested)
COLUMNS: dict[str, Any] = {
    "rating_id": pl.Int64,
    "judge": pl.Utf8,  # its label, as reports show it (`tui-rater judges` lists the same)
    "judge_id": pl.Int64,
    "rater": pl.Utf8,  # the judge's full rater name
    "task": pl.Utf8,
    "item": pl.Utf8,
    "system": pl.Utf8,
    "attribute": pl.Utf8,
    "presentation": pl.Utf8,  # a pair's order: original / swapped ('' for one text)
    "sample": pl.Int64,
    "value": pl.Float64,
    "parse_status": pl.Utf8,
    "in_force": pl.Boolean,  # the rating the reports use (False: replaced by a later one)
    "answered": pl.Utf8,  # the letter the judge chose (a pair, a choice)
    "reply": pl.Utf8,
    "finish_reason": pl.Utf8,
    "attempts": pl.Int64,
    "seed": pl.Int64,
    "temperature": pl.Float64,  # set where a regeneration sampled at another temperature than the judge's
    "mass": pl.Float64,  # next-token probability on the scale's options (a distribution pass)
    "min_mass": pl.Float64,
    "expected": pl.Float64,
    "distribution": pl.Utf8,  # option -> probability, normalised over the options
    "probabilities": pl.Utf8,  # option -> probability as the model gave it (not normalised)
    "unscored": pl.Utf8,  # options the server gave no probability for
    "unscored_mass_at_most": pl.Float64,
    "top_k": pl.Utf8,  # [[token, probability], ...] (the implicit score's top 5)
    "p_yes": pl.Float64,
    "p_no": pl.Float64,
    "earlier_replies": pl.Utf8,  # the replies regenerated before this one (they did not parse)
    "conversation": pl.Utf8,  # [{attribute, reply}, ...] asked before this question in the same chat
    "template_id": pl.Utf8,
    "template_sha256": pl.Utf8,
    "structured": pl.Boolean,
    "truncated": pl.Boolean,
    "job_id": pl.Int64,
    "created_at": pl.Utf8,
    "details": pl.Utf8,  # the rating's stored record, verbatim
}
NESTED = ("distribution", "probabilities", "unscored", "top_k", "earlier_replies", "conversation", "details")
# a distribution or implicit pass's facts, stored with its first sample only
PASS_FACTS = (
    "raw",
    "mass",
    "min_mass",
    "seed",
    "distribution",
    "expected",
    "unscored",
    "unscored_mass_at_most",
    "p_yes",
    "p_no",
    "top5",
    "template_id",
    "template_sha256",
)
# column -> the key of the stored details it comes from
FROM_DETAILS = {
    "answered": "answered",
    "finish_reason": Details.FINISH_REASON,
    "attempts": "attempts",
    "seed": Details.SEED,
    "temperature": "temperature",
    "mass": Details.MASS,
    "min_mass": "min_mass",
    "expected": Details.EXPECTED,
    "distribution": Details.DISTRIBUTION,
    "probabilities": Details.RAW,
    "unscored": Details.UNSCORED,
    "unscored_mass_at_most": Details.UNSCORED_MASS_AT_MOST,
    "top_k": Details.TOP,
    "p_yes": Details.P_YES,
    "p_no": Details.P_NO,
    "earlier_replies": "earlier_replies",
    "template_id": "template_id",
    "template_sha256": "template_sha256",
    "structured": Details.STRUCTURED,
    "truncated": "truncated",
}


def _details(text: str | None) -> dict[str, Any]:
    try:
        found = json.loads(text) if text else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _typed(column: str, value: Any) -> Any:
    """A stored fact as its column's type; None where it is not one (never a guess)."""
    kind = COLUMNS[column]
    if value is None or column in NESTED:
        return value
    if kind == pl.Boolean:
        return value if isinstance(value, bool) else None
    if kind == pl.Int64:
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if kind == pl.Float64:
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    return value if isinstance(value, str) else json.dumps(value)


def judgement_rows(study: Study, task: str | None = None) -> list[dict[str, Any]]:
    """Every judge rating (not retracted), with its pass's facts and the replies before it, in study order."""
    conn = study._db.conn
    in_force = {rid for (rid,) in conn.execute(f"SELECT r.id FROM {RATINGS_IN_FORCE} WHERE ra.kind = 'llm'")}
    rows = conn.execute(
        f"""SELECT r.id, ra.label, ra.id, ra.name, i.task, i.id, i.system, r.attribute, r.presentation, r.sample,
                   r.value, r.parse_status, r.raw, r.job_id, j.attribute, r.created_at, r.details
            FROM ratings r JOIN raters ra ON ra.id = r.rater_id JOIN items i ON i.key = r.item_key
                 LEFT JOIN jobs j ON j.id = r.job_id
            WHERE ra.kind = 'llm' AND r.retracted = 0 AND r.retest_of IS NULL {"AND i.task = ?" if task else ""}
            ORDER BY i.task, i.position, ra.id, r.job_id, r.attribute, r.presentation, r.sample, r.id""",
        [task] if task else [],
    ).fetchall()
    details = {row[0]: _details(row[16]) for row in rows}
    passes: dict[tuple[int, str], dict[str, Any]] = {}  # (job, attribute) -> its first sample's details
    replies: dict[int, dict[str, str | None]] = {}  # conversation job -> attribute -> reply
    for row in rows:
        if row[13] is not None:
            passes.setdefault((row[13], row[7]), details[row[0]])
            if row[14] == "*":
                replies.setdefault(row[13], {})[row[7]] = row[12]
    order = {name: study.task(name).attribute_names for name in {row[4] for row in rows}}
    out = []
    for row in rows:
        own = details[row[0]]
        facts = dict(own)
        if row[13] is not None:
            first = passes[(row[13], row[7])]
            facts.update({k: first[k] for k in PASS_FACTS if k in first and k not in own})
        record: dict[str, Any] = {
            "rating_id": row[0],
            "judge": row[1] or row[3],
            "judge_id": row[2],
            "rater": row[3],
            "task": row[4],
            "item": row[5],
            "system": row[6],
            "attribute": row[7],
            "presentation": row[8],
            "sample": row[9],
            "value": row[10],
            "parse_status": row[11],
            "in_force": row[0] in in_force,
            "reply": row[12],
        }
        record.update({column: _typed(column, facts.get(key)) for column, key in FROM_DETAILS.items()})
        record["conversation"] = _conversation(replies.get(row[13]), order[row[4]], row[7]) if row[14] == "*" else None
        record.update({"job_id": row[13], "created_at": row[15], "details": own or None})
        out.append({column: record.get(column) for column in COLUMNS})
    return out


def _conversation(
    replies: dict[str, str | None] | None, attributes: tuple[str, ...], attribute: str
) -> list[dict[str, str | None]] | None:
    """The replies to the questions asked before this one in the same chat (the paper's ChatGPT setting)."""
    if not replies or attribute not in attributes:
        return None
    before = attributes[: attributes.index(attribute)]
    return [{"attribute": name, "reply": replies[name]} for name in before if name in replies]


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: such a stored number is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def judgements_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The rows for CSV, TSV and Parquet: nested values as JSON text."""
    flat = [
        {k: (json.dumps(_finite(v), ensure_ascii=False) if k in NESTED and v is not None else v) for k, v in r.items()}
        for r in rows
    ]
    return pl.DataFrame(flat, schema=COLUMNS)


def write_judgements(study: Study, out: str | Path, task: str | None = None, *, raw: bool = False) -> tuple[int, int]:
    """Write the judgements (format by the file's extension) atomically, with the study file's mode; the row
    count, and how many CSV cells were kept from running as formulas (``io.write_frame``)."""
    out = Path(out)
    fmt = file_format(out)
    rows = judgement_rows(study, task)
    if fmt == "jsonl":
        text = "".join(json.dumps(_finite(row), ensure_ascii=False, allow_nan=False) + "\n" for row in rows)
        write_output(out, text.encode("utf-8"), like=study.path)
        return len(rows), 0
    from tui_rater.store.io import write_frame

    return len(rows), write_frame(judgements_frame(rows), out, like=study.path, raw=raw)
