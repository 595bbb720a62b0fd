"""The judges' stored next-token distributions over a question's options (``report``'s calibration section reads
them; ``stats/`` computes, the store owns the SQL). A distribution pass keeps its distribution with its first
sample only (``store/judgements.py``), one per presentation of the item."""

from __future__ import annotations

import json
from typing import Any

from tui_rater.domain.details import Details
from tui_rater.store.readings import details_mention
from tui_rater.store.study import RATINGS_IN_FORCE, Study


def judge_distributions(study: Study, task: str) -> list[tuple[str, str, int, str, str, dict[str, float]]]:
    """(judge label, question, item key, presentation, the judge's prompt variant, option label -> probability)
    for every judge rating in force that stores a distribution."""
    if not details_mention(study, Details.DISTRIBUTION):
        return []
    rows = study._db.conn.execute(
        f"""SELECT ra.label, r.attribute, r.item_key, r.presentation,
                   coalesce(json_extract(ra.config, '$.variant'), ''),
                   json_extract(r.details, '$.{Details.DISTRIBUTION}')
            FROM {RATINGS_IN_FORCE}
            WHERE i.task = ? AND ra.kind = 'llm' AND r.details LIKE '%"{Details.DISTRIBUTION}"%'
                  AND json_valid(r.details) AND json_type(r.details, '$.{Details.DISTRIBUTION}') = 'object'
            ORDER BY ra.label, r.attribute, r.item_key, r.presentation""",
        [task],
    ).fetchall()
    found = []
    for judge, attribute, item_key, presentation, variant, text in rows:
        distribution = _probabilities(text)
        if distribution:
            found.append((str(judge), str(attribute), int(item_key), str(presentation), str(variant), distribution))
    return found


def _probabilities(text: Any) -> dict[str, float]:
    try:
        loaded = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {str(k): float(v) for k, v in loaded.items() if isinstance(v, int | float)}
