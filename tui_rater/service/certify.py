"""A verdict anyone can re-check: ``tui-rater certify`` writes what a study's report rests on, ``verify`` recomputes
it from the study and names every difference (issue 34).

A certificate holds, per task: a Merkle digest of every table the report reads (``store/certified.py``,
``domain/certificate.py``), each judge's provenance (model file SHA-256, the GGUF's numerics, or the API model and
what the server reported), the prompts' hashes, the annotators' plans with their seeds and the items' inclusion
probabilities, the verdict's settings, every test with its multiplicity correction, and every number of the report
(its JSON records). ``verify`` builds the same document from the study with the certificate's settings and compares
them: a table row by row (its digests: the data, to the bit), a computed figure by its float64 bits, or within
``TOLERANCE`` of them, which is a note and not a difference: another machine's BLAS kernels round the report's figures
differently in their last bits (docs/VERDICT.md, Certificates). A certificate is data: its settings are checked
values, its paths are never opened, its strings are only ever compared and quoted.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from tui_rater.domain import certificate as cert
from tui_rater.domain.errors import UserError
from tui_rater.service.reports import _with_inclusion, build_reports, what_shaped
from tui_rater.stats.records import Record
from tui_rater.stats.sections.settings import FDR, ReportSettings, SpaSettings, VerdictSettings
from tui_rater.store import certified
from tui_rater.store.study import Study

# how each test is corrected for testing several at once, by table and statistic (the report's sections;
# docs/VERDICT.md): the alt-test's per-human p is raw, its BY-adjusted p a record of its own; SPA's preference
# probabilities and Likert differences carry Holm's adjusted p across the comparisons (``stats/systems.py``)
MULTIPLICITY = {
    ("verdict", "t"): f"raw one-sided p per human; its Benjamini-Yekutieli-adjusted p (q = {FDR:g}, across the "
    "humans tested: Calderon et al. 2025, §3) is this table's p_adjusted record for the same human",
    ("verdict_across", ""): f"Benjamini-Yekutieli across every question's humans together, q = {FDR:g}",
    ("spa", "p_x_over_y"): "Holm across the system comparisons",
    ("spa", "likert_delta"): "Holm across the system comparisons",
}
UNCORRECTED = "none: each p is its own test's, uncorrected"
# fields of a certificate that say when and by what it was made, not what it certifies: never a difference
NOT_COMPARED = frozenset({"tui_rater_version", "created_by", "study_file"})
# the top-level keys certify writes (make_certificate); any other is named by verify
HEADER_KEYS = frozenset(
    {"format", "format_version", "method_version", "method", "float_format", "digests", "settings", "tasks"}
    | NOT_COMPARED
)
# a computed figure (a report number, a test's p, an inclusion probability) that differs from the certificate's by at
# most TOLERANCE x max(1, |a|, |b|) is the same figure computed with other floating-point arithmetic, not a
# difference: OpenBLAS picks its kernels by CPU (Haswell on AVX2 or AMD, SkylakeX on Intel AVX-512), and the golden
# studies' figures differ between the two by at most 1.45e-8 (the reliability model's spread, whose finite-difference
# Newton step amplifies rounding), and by at most 1.2e-7 with numpy's AVX-512 loops on one side and its AVX2 loops on
# the other; 1e-6 leaves room for that and stays far below any figure's printed precision
TOLERANCE = 1e-6
# the certificate's task-level values that are computed figures (compared with TOLERANCE); the rest are data
COMPUTED = ("tests.", "plans.inclusion_probabilities.")


@dataclass
class Near:
    """Computed figures that agree with the certificate's within ``TOLERANCE`` but not to the bit: how many, and the
    largest difference with where it is."""

    count: int = 0
    largest: float = 0.0
    where: str = ""

    def within(self, theirs: Any, ours: Any, where: str) -> bool:
        """Whether two finite floats agree within ``TOLERANCE`` (counted when they do); never for anything else."""
        if not (
            isinstance(theirs, float) and isinstance(ours, float) and math.isfinite(theirs) and math.isfinite(ours)
        ):
            return False
        gap = abs(theirs - ours)
        if gap > TOLERANCE * max(1.0, abs(theirs), abs(ours)):
            return False
        self.count += 1
        if gap >= self.largest:
            self.largest, self.where = gap, where
        return True

    def note(self) -> str:
        return (
            f"{self.count} number(s) agree with the certificate's to {TOLERANCE:g} but not to the last bit (largest "
            f"difference {self.largest:.3g}, in {self.where}): another machine's or library's floating-point "
            "arithmetic (BLAS kernels round differently); they are not counted as differences"
        )


@dataclass(frozen=True)
class CertifySettings:
    """The report's settings a certificate was made with (``report``'s flags of the same names)."""

    epsilon: float | None = None
    raters: str = "expert"
    reference: str = "humans"
    spa_tau: float | None = 1.1
    excluded_annotators: tuple[str, ...] = ()

    def report_settings(self) -> ReportSettings:
        try:
            return ReportSettings(
                spa=SpaSettings(tau=self.spa_tau),
                verdict=VerdictSettings(epsilon=self.epsilon, raters=self.raters),
                reference=self.reference,
                excluded_annotators=self.excluded_annotators,
            )
        except ValueError as exc:
            raise UserError(f"the certificate's settings are not a report's: {exc}") from None

    def as_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["excluded_annotators"] = list(self.excluded_annotators)
        return found

    @classmethod
    def of(cls, found: dict[str, Any]) -> CertifySettings:
        """The settings a (shape-checked) certificate holds."""
        return cls(
            epsilon=None if found.get("epsilon") is None else float(found["epsilon"]),
            raters=str(found["raters"]),
            reference=str(found["reference"]),
            spa_tau=None if found.get("spa_tau") is None else float(found["spa_tau"]),
            excluded_annotators=tuple(str(name) for name in found.get("excluded_annotators", [])),
        )


def _tui_rater_version() -> str:
    try:
        return version("tui-rater")
    except PackageNotFoundError:
        return "unknown"


def number_key(record: Record, seen: Counter[str]) -> str:
    """A record's name in the certificate: its table, question, system, evaluators and statistic, and which
    occurrence of that name it is (a convergence table repeats a statistic at each step)."""
    name = "|".join(
        [record.table, record.attribute, record.system, record.evaluator, record.evaluator_b or "", record.statistic]
    )
    seen[name] += 1
    return f"{name}#{seen[name]}"


def _numbers(records: list[Record]) -> dict[str, dict[str, Any]]:
    seen: Counter[str] = Counter()
    numbers = {}
    for record in records:
        found = asdict(record)
        for key in ("table", "task", "attribute", "system", "evaluator", "evaluator_b", "statistic"):
            found.pop(key)
        numbers[number_key(record, seen)] = found
    return numbers


def _tests(numbers: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every number with a p-value, and how its table corrects for multiple tests."""
    return {
        key: {"p": number["p"], "multiplicity": _multiplicity(key)}
        for key, number in numbers.items()
        if number["p"] is not None
    }


def _multiplicity(key: str) -> str:
    parts = key.split("|")
    table, statistic = parts[0], parts[5].split("#")[0] if len(parts) > 5 else ""
    return MULTIPLICITY.get((table, statistic)) or MULTIPLICITY.get((table, ""), UNCORRECTED)


def _judges(study: Study, tables: dict[str, certified.Rows]) -> dict[str, Any]:
    """Each judge that rated the task: its provenance as stored, and where its replies came from (file names and
    served models, never the machine's paths)."""
    judges = {}
    for name, row in tables["raters"]:
        if row["kind"] != "llm":
            continue
        judges[name] = {
            "label": row["label"],
            "provenance": row["config"],
            "sources": certified.judge_sources(study, name),
        }
    return judges


def _prompts(tables: dict[str, certified.Rows]) -> dict[str, dict[str, str]]:
    """judge -> template id -> the SHA-256 of the template it was asked with (as each reading recorded it)."""
    rater_of = {row["id"]: row["rater"] for _, row in tables["ratings"]}
    prompts: dict[str, dict[str, str]] = {}
    for rid, row in tables["judge_replies"]:
        details = row["details"] if isinstance(row["details"], dict) else {}
        template, digest = details.get("template_id"), details.get("template_sha256")
        if isinstance(template, str) and isinstance(digest, str):
            prompts.setdefault(rater_of[rid], {})[template] = digest
    return prompts


def _inclusion(study: Study, task: str, settings: ReportSettings) -> dict[str, float] | None:
    """item id -> the probability π with which people's items were drawn (active sampling), when they were: the
    report's own computation (``service/reports.py``), so the certificate holds what the verdict used."""
    verdict = _with_inclusion(study, task, settings.verdict, settings.excluded_annotators)
    if verdict.inclusion is None:
        return None
    ids = certified.item_ids(study, task)
    pis = next(iter(verdict.inclusion.values()), {})
    return {ids[key]: float(pi) for key, pi in sorted(pis.items())}


def task_certificate(study: Study, task: str, settings: CertifySettings) -> dict[str, Any]:
    """One task's part of a certificate."""
    report_settings = settings.report_settings()
    records = build_reports(study, [task], report_settings)[task]
    shaped = what_shaped(study, [task], report_settings)[task]
    tables = certified.certified_rows(study, task)
    numbers = _numbers(records)
    return {
        "tables": {name: cert.table_digest(rows) for name, rows in tables.items()},
        "judges": _judges(study, tables),
        "prompts": _prompts(tables),
        "plans": {
            "annotators": {f"{row['annotator']}/{row['kind']}": row["settings"] for _, row in tables["plans"]},
            "team_plan": tables["team_plan"][0][1]["settings"] if tables["team_plan"] else None,
            "inclusion_probabilities": _inclusion(study, task, report_settings),
        },
        "verdict": {
            "epsilon": report_settings.verdict.eps,
            "epsilon_why": report_settings.verdict.epsilon_source,
            "raters": report_settings.verdict.raters,
            "false_discovery_rate": FDR,
            "reference": report_settings.reference,
        },
        "metadata": shaped.as_dict(),
        "tests": _tests(numbers),
        "numbers": numbers,
    }


def make_certificate(study: Study, task_names: list[str] | None, settings: CertifySettings) -> dict[str, Any]:
    """The certificate of the study's tasks (default: every task with ratings), as a canonical document."""
    names = task_names or list(build_reports(study, None, settings.report_settings()))
    names = [study.task(name).name for name in names]  # an unknown task: one sentence
    return {
        "format": cert.FORMAT,
        "format_version": cert.FORMAT_VERSION,
        "method_version": cert.METHOD_VERSION,
        "method": cert.METHOD_CHANGES[cert.METHOD_VERSION],
        "float_format": cert.FLOAT_FORMAT,
        "digests": "per table: a Merkle root (RFC 6962 shape) over SHA-256 of each canonical row, rows by key; "
        f"each row's key and the first {cert.SHORT} hex digits of its leaf hash",
        "tui_rater_version": _tui_rater_version(),
        "study_file": study.path.name,
        "settings": settings.as_dict(),
        "tasks": {name: task_certificate(study, name, settings) for name in names},
    }


# --- verifying --------------------------------------------------------------------------------------------------


@dataclass
class Verification:
    """What ``verify`` found: the differences (one line each), and notes that are not differences."""

    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    method_differs: bool = False


def method_notes(found: dict[str, Any]) -> list[str]:
    """What differs in method between the certificate's tui-rater and this one; empty when they agree."""
    said = []
    theirs, ours = found["method_version"], cert.METHOD_VERSION
    if found["format_version"] != cert.FORMAT_VERSION:
        said.append(
            f"the certificate's format is version {found['format_version']}; this tui-rater reads version "
            f"{cert.FORMAT_VERSION}"
        )
    if theirs != ours:
        said.append(
            f"the certificate was made with method version {theirs} "
            f"(by tui-rater {_quote(found.get('tui_rater_version'))}); "
            f"this tui-rater computes with method version {ours}: {cert.METHOD_CHANGES[ours]}"
        )
        for number in sorted(v for v in cert.METHOD_CHANGES if min(theirs, ours) < v <= max(theirs, ours)):
            said.append(f"method version {number} changed: {cert.METHOD_CHANGES[number]}")
        if theirs > ours:
            said.append(f"method versions after {ours} are unknown to this tui-rater: verify with a newer one")
        said.append("its numbers and digests are not compared with this method's (that would be a false mismatch)")
    return said


def verify(study: Study, found: dict[str, Any]) -> Verification:
    """Recompute ``found``'s certificate from ``study`` and compare (``found`` has passed ``certificate.read``)."""
    result = Verification()
    method = method_notes(found)
    if method:
        result.notes += method
        result.method_differs = True
        return result
    if found.get("tui_rater_version") != _tui_rater_version():
        result.notes.append(
            f"made by tui-rater {_quote(found.get('tui_rater_version'))}, verified by {_tui_rater_version()} "
            "(same method version)"
        )
    settings = CertifySettings.of(found["settings"])
    # a key certify never writes (at the top or in the settings) is a claim nothing recomputes: a difference, so a
    # certificate that verifies says nothing beyond what was checked
    for key in sorted(set(found) - HEADER_KEYS):
        result.differences.append(f"{_quote(key)}: in the certificate, not made by this method (not checkable)")
    result.differences += list(_value_differences("settings", found["settings"], settings.as_dict()))
    known = set(study.item_task_names())
    near = Near()
    for task, theirs in found["tasks"].items():
        if task not in known:
            result.differences.append(f"task {_quote(task)}: in the certificate, but the study has no such task")
            continue
        try:
            ours = task_certificate(study, task, settings)
        except UserError as exc:
            result.differences.append(f"task {_quote(task)}: cannot be recomputed: {exc}")
            continue
        result.differences += [
            f"task {_quote(task)}: {line}" for line in _task_differences(study, task, theirs, ours, near)
        ]
    if near.count:
        result.notes.append(near.note())
    for task in sorted(known - set(found["tasks"])):
        result.notes.append(f"task {_quote(task)} is in the study but not in the certificate (not checked)")
    return result


def _task_differences(
    study: Study, task: str, theirs: dict[str, Any], ours: dict[str, Any], near: Near
) -> Iterator[str]:
    rows = certified.certified_rows(study, task)
    for table in sorted(set(theirs["tables"]) | set(ours["tables"])):
        if table not in ours["tables"]:
            yield f"table {_quote(table)} is in the certificate but not made by this method"
            continue
        if table not in theirs["tables"]:
            yield f"table {_quote(table)} is missing from the certificate"
            continue
        by_key = {cert.canonical(key).decode(): row for key, row in rows[table]}
        yield from _table_differences(table, theirs["tables"][table], ours["tables"][table], by_key)
    yield from _number_differences(theirs["numbers"], ours["numbers"], near, task)
    for key in sorted((set(theirs) | set(ours)) - {"tables", "numbers"}):
        yield from _value_differences(key, theirs.get(key), ours.get(key), near, task)


def _table_differences(
    table: str, theirs: dict[str, Any], ours: dict[str, Any], rows: dict[str, dict[str, Any]]
) -> Iterator[str]:
    """Each row whose short hash differs, is missing or was added, named; ``rows``: the study's, by canonical key."""
    if theirs["root"] == ours["root"]:
        return
    ours_short, theirs_short = cert.short_leaves(ours), cert.short_leaves(theirs)
    named = 0
    for text in sorted(set(ours_short) | set(theirs_short)):
        if text not in ours_short:
            yield f"{_row_name(table, None, text)}: in the certificate, not in the study (deleted)"
        elif text not in theirs_short:
            yield f"{_row_name(table, rows.get(text), text)}: in the study, not in the certificate (added)"
        elif ours_short[text] != theirs_short[text]:
            yield f"{_row_name(table, rows.get(text), text)}: {_what_changed(table)} the certificate's"
        else:
            continue
        named += 1
    if not named:
        yield f"table {table}: its digest differs but no row's does (the certificate's row hashes were edited)"


def _what_changed(table: str) -> str:
    return {
        "ratings": "its value or other fields differ from",
        "judge_replies": "the stored reply (or what was read from it) differs from",
    }.get(table, "differs from")


def _row_name(table: str, row: dict[str, Any] | None, key_text: str) -> str:
    """How a line names a row: a rating by its id, item, question, rater and job; others by table and key."""
    if row is None:
        return f"{table} row {_quote(key_text)}"
    if table == "ratings":
        job = f", job {row['job']}" if row["job"] is not None else ""
        return (
            f"rating {row['id']} (item {_quote(row['item'])}, question {_quote(row['attribute'])}, "
            f"rater {_quote(row['rater'])}{job})"
        )
    if table == "judge_replies":
        job = f"job {row['job']}" if row["job"] is not None else "no job"
        return f"{job} (rating {row['rating']}, item {_quote(row['item'])}, question {_quote(row['attribute'])})"
    if table == "jobs":
        return f"job {row['id']} (item {_quote(row['item'])}, question {_quote(row['attribute'])})"
    return f"{table} row {_quote(key_text)}"


def _number_differences(theirs: dict[str, Any], ours: dict[str, Any], near: Near, task: str) -> Iterator[str]:
    for key in sorted(set(theirs) | set(ours)):
        if key not in ours:
            yield f"number {_quote(key)}: in the certificate, not in the report computed from the study"
        elif key not in theirs:
            yield f"number {_quote(key)}: in the report computed from the study, not in the certificate"
        else:
            mine, given = ours[key], theirs[key]
            if not isinstance(given, dict):
                yield f"number {_quote(key)}: not an object in the certificate"
                continue
            for name in sorted(set(mine) | set(given)):
                if not _same(given.get(name), mine.get(name)) and not near.within(
                    given.get(name), _plain(mine.get(name)), f"task {_quote(task)}: number {_quote(key)} {name}"
                ):
                    yield (
                        f"number {_quote(key)}: {name} is {_quote(given.get(name))} in the certificate, "
                        f"{_quote(_plain(mine.get(name)))} from the study"
                    )


def _value_differences(path: str, theirs: Any, ours: Any, near: Near | None = None, task: str = "") -> Iterator[str]:
    """Differences of two JSON values, each named by its path (settings, judges, plans, prompts, tests); with
    ``near``, a computed figure (a path in ``COMPUTED``) within ``TOLERANCE`` is counted there, not a difference."""
    if path.split(".")[-1] in NOT_COMPARED:
        return
    ours = _plain(ours)
    if isinstance(theirs, dict) and isinstance(ours, dict):
        for key in sorted(set(theirs) | set(ours)):
            where = f"{path}.{key}"
            if key not in ours:
                yield f"{_quote(where)}: in the certificate, not computed from the study"
            elif key not in theirs:
                yield f"{_quote(where)}: computed from the study ({_quote(ours[key])}), not in the certificate"
            else:
                yield from _value_differences(where, theirs[key], ours[key], near, task)
    elif isinstance(theirs, list) and isinstance(ours, list) and len(theirs) == len(ours):
        for index, (a, b) in enumerate(zip(theirs, ours)):
            yield from _value_differences(f"{path}[{index}]", a, b, near, task)
    elif not _same(theirs, ours) and not (
        near is not None
        and path.startswith(COMPUTED)
        and near.within(theirs, ours, f"task {_quote(task)}: {_quote(path)}")
    ):
        yield f"{_quote(path)}: {_quote(theirs)} in the certificate, {_quote(ours)} from the study"


def _plain(value: Any) -> Any:
    """A value as the certificate writes it (non-finite floats as strings)."""
    import json

    return json.loads(cert.canonical(value))


def _same(theirs: Any, ours: Any) -> bool:
    """Equal as the certificate writes values: a float by its float64 bits (1 and 1.0 are the same number)."""
    return cert.canonical(theirs) == cert.canonical(_plain(ours)) or (
        isinstance(theirs, (int, float))
        and isinstance(ours, (int, float))
        and not isinstance(theirs, bool)
        and not isinstance(ours, bool)
        and float(theirs) == float(ours)
        and theirs.__class__ is not ours.__class__
    )


def _quote(value: Any, most: int = 120) -> str:
    """A value from a certificate or a study, quoted for one line: repr (so control characters show as escapes),
    cut when long. The CLI's ``say`` makes whatever is left safe for a terminal."""
    text = repr(value)
    return text if len(text) <= most else text[: most - 1] + "…"


def write_certificate(
    study: Study, out: Path, task_names: list[str], settings: CertifySettings, *, html: bool = False
) -> dict[str, Any]:
    """Make the certificate and write it to ``out`` (its canonical JSON, or with ``html`` the page for people);
    never over a study or any SQLite file, checked before the work. Returns the certificate."""
    from tui_rater.service.reports import excluded_annotators
    from tui_rater.store.outputs import check_output_target, write_output

    check_output_target(out, study.path)
    excluded_annotators(study, list(settings.excluded_annotators), task_names or None)  # an unknown name: one sentence
    found = make_certificate(study, list(dict.fromkeys(task_names)) or None, settings)
    if html:
        from tui_rater.domain.certificate_page import to_html

        content = to_html(found).encode()
    else:
        content = cert.pretty(found)
    write_output(out, content, like=study.path)
    return found
