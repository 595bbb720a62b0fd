"""A certificate as one HTML page for people (``certify --out study.cert.html``): what was certified, the judges'
provenance, the settings, each table's digest and every number. Every string is escaped (``html.escape``): a
task, rater or item name is shown as text, never as markup. The page embeds the canonical JSON it shows, so
``verify`` needs the .json: the page is for reading."""

from __future__ import annotations

import html
import json
from typing import Any

from tui_rater.domain.certificate import pretty


def _e(value: Any) -> str:
    return html.escape(value if isinstance(value, str) else json.dumps(value, ensure_ascii=True), quote=True)


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def to_html(found: dict[str, Any]) -> str:
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>Certificate: {_e(found.get('study_file', 'study'))}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #bbb;padding:2px 6px;text-align:left;font-size:90%}code{word-break:break-all}"
        "</style></head><body>",
        f"<h1>Certificate of {_e(found.get('study_file', 'a study'))}</h1>",
        "<p>Made by tui-rater "
        f"{_e(found.get('tui_rater_version', ''))}, format {_e(found.get('format_version'))}, method version "
        f"{_e(found.get('method_version'))}. Check it against the study with "
        "<code>tui-rater verify CERT.json --db STUDY.db [--rerun N]</code>.</p>",
        f"<p>Method: {_e(found.get('method', ''))}. Numbers: {_e(found.get('float_format', ''))}. Digests: "
        f"{_e(found.get('digests', ''))}.</p>",
        "<h2>Settings</h2>",
        _table(["setting", "value"], [[k, v] for k, v in sorted(found.get("settings", {}).items())]),
    ]
    for task, part in found.get("tasks", {}).items():
        parts.append(f"<h2>Task {_e(task)}</h2>")
        verdict = part.get("verdict", {})
        parts.append(_table(["verdict setting", "value"], [[k, v] for k, v in sorted(verdict.items())]))
        parts.append("<h3>Judges</h3>")
        for name, judge in part.get("judges", {}).items():
            provenance = judge.get("provenance") or {}
            parts.append(f"<h4>{_e(name)} ({_e(judge.get('label', ''))})</h4>")
            parts.append(_table(["provenance", "value"], [[k, v] for k, v in sorted(provenance.items())]))
            parts.append(_table(["source", "served model", "fingerprint"], [
                [s.get("source_name"), s.get("served_model"), s.get("system_fingerprint")]
                for s in judge.get("sources", [])
            ]))  # fmt: skip
        prompts = [[j, t, d] for j, found_t in part.get("prompts", {}).items() for t, d in sorted(found_t.items())]
        parts.append("<h3>Prompts</h3>" + _table(["judge", "template", "SHA-256"], prompts))
        plans = part.get("plans", {})
        parts.append("<h3>Plans</h3>" + _table(["plan", "settings"], [
            [k, v] for k, v in sorted(plans.get("annotators", {}).items())
        ] + [["team plan", plans.get("team_plan")]]))  # fmt: skip
        tables = part.get("tables", {})
        parts.append("<h3>Tables</h3>" + _table(["table", "rows", "Merkle root"], [
            [name, digest.get("rows"), digest.get("root")] for name, digest in sorted(tables.items())
        ]))  # fmt: skip
        tests = part.get("tests", {})
        parts.append("<h3>Tests</h3>" + _table(["number", "p", "multiplicity correction"], [
            [k, t.get("p"), t.get("multiplicity")] for k, t in tests.items()
        ]))  # fmt: skip
        numbers = part.get("numbers", {})
        parts.append("<h3>Numbers</h3>" + _table(["number", "value", "n", "p", "ci low", "ci high", "note"], [
            [k, n.get("value"), n.get("n"), n.get("p"), n.get("ci_low"), n.get("ci_high"), n.get("note")]
            for k, n in numbers.items()
        ]))  # fmt: skip
    # the document itself, for a reader who wants every digit: escaped, so a '</script>' in a name stays text
    parts.append(f"<h2>The certificate (JSON)</h2><pre>{_e(pretty(found).decode())}</pre></body></html>")
    return "\n".join(parts)
