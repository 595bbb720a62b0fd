"""``tui-rater judges``: the study's judges with their labels and full provenance."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from tui_rater.cli.common import Subparsers, data, lead_only, make_console, new_table, open_study

if TYPE_CHECKING:
    from rich.table import Table

    from tui_rater.config import Settings
    from tui_rater.service.judges import Judge

# provenance shown by name, in this order; the rest of a configuration follows under its own keys
SHOWN = (
    ("judge_name", "judge name"),
    ("backend", "backend"),
    ("model_file", "model file"),
    ("model_sha256", "model SHA-256"),
    ("api_model", "API model"),
    ("base_url", "base URL"),
    ("mode", "mode"),
    ("variant", "prompt variant"),
    ("conversation", "one chat per item"),
    ("chat_template_sha256", "chat template (SHA-256)"),
    ("samples", "samples"),
    ("temperature", "temperature"),
    ("top_p", "top-p"),
    ("max_tokens", "max tokens"),
    ("max_retries", "max retries"),
    ("min_mass", "min scale mass"),
    ("n_ctx", "context (n_ctx)"),
    ("seed", "seed"),
    ("tui_rater_version", "tui-rater version"),
    ("llama_cpp_python_version", "llama-cpp-python version"),
    ("openai_version", "openai version"),
)


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "judges",
        parents=[common],
        help="list the judges: labels (as reports name them) and full provenance",
        description="Each judge configuration with the label reports and the app use (J1 ...), its model "
        "(file and SHA-256, or API model and URL without credentials), the model id and system_fingerprint "
        "its server reported (each change as its own line), mode, prompt variant, sampling, seed, versions, "
        "and its counts of ratings, typed failures and jobs.",
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument(
        "--forget",
        metavar="LABEL",
        help="remove this judge (its label, J-number or name) with its ratings, jobs, sources and cached replies, "
        "in one transaction, after a confirmation naming what goes",
    )
    p.add_argument("--yes", action="store_true", help="--forget: do not ask (needed when stdin is not a terminal)")
    p.add_argument("--force", action="store_true", help="--forget: forget the juries made from this judge with it")
    lead_only(p, lambda args: "forget a judge" if args.forget is not None else None)
    p.set_defaults(run=cmd_judges)


def cmd_judges(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.judges import list_judges

    if args.forget is not None:
        return _forget(args, settings)
    study = open_study(args, settings, create=False, readonly=True)
    judges = list_judges(study)
    if args.format == "json":
        # ensure_ascii: control characters are written as \u001b, never raw
        print(json.dumps({"study": str(study.path), "judges": [j.as_dict() for j in judges]}, indent=2))
        return 0
    console = make_console()
    if not judges:
        console.print(data(f"{study.path} holds no judges yet (run `tui-rater judge`)"))
        return 0
    summary = new_table(f"Judges of {study.path}", ["label", "id", "model", "mode", "ratings", "failures", "jobs"])
    for judge in judges:
        config = judge.config
        model = config.get("model_file") or config.get("api_model") or ("" if judge.configured else "-")
        jobs = ", ".join(f"{n} {status}" for status, n in judge.jobs.items() if n) or "-"
        jury = config.get("jury") if isinstance(config.get("jury"), dict) else None
        if jury is not None:  # a derived judge (`tui-rater jury`): its values are computed, never stored
            model = "jury of " + ", ".join(str(m.get("label")) for m in jury.get("members", []))
        summary.add_row(
            data(judge.label),
            data(judge.id),
            data(model),
            data(f"jury: {jury.get('aggregate')}" if jury is not None else config.get("mode", "")),
            data("computed" if jury is not None else judge.ratings),
            data(judge.failures),
            data(jobs),
        )
    console.print(_folded(summary))
    for judge in judges:
        table = _folded(new_table(f"{judge.label} (id {judge.id})", ["field", "value"]))
        for field, value in _rows(judge):
            table.add_row(data(field), data(value))
        console.print(table)
    return 0


def _forget(args: argparse.Namespace, settings: Settings) -> int:
    import sys

    from tui_rater.cli.common import say
    from tui_rater.domain.errors import UserError
    from tui_rater.service.judges import forget, prepare_forget

    study = open_study(args, settings, create=False)
    forgetting = prepare_forget(study, args.forget, args.force)  # a jury made from it: refused without --force
    judge, juries, goes = forgetting.judge, forgetting.juries, forgetting.goes
    what = f"judge {judge.label} ({judge.name}): {goes.describe()}"
    if juries:
        what += f", and jur{'ies' if len(juries) > 1 else 'y'} {', '.join(j.label for j in juries)}"
    if not args.yes:
        if not sys.stdin.isatty():
            raise UserError(f"forgetting {what} needs a yes: run it in a terminal, or add --yes")
        answer = input(f"forget {what}? This cannot be undone. [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            say("nothing removed")
            return 1
    removed = forget(study, forgetting)
    gone = f"; and jury {', '.join(j.label for j in juries)}" if juries else ""
    say(f"forgot {judge.label}: removed {removed.describe()}{gone}")
    return 0


def _folded(table: Table) -> Table:
    """A narrow terminal wraps a long value (a checksum, a URL) onto more lines, never cuts it."""
    for column in table.columns:
        column.overflow = "fold"
    return table


def _rows(judge: Judge) -> list[tuple[str, Any]]:
    config = dict(judge.config)
    rows: list[tuple[str, Any]] = [("label", judge.label), ("rater", judge.name), ("created", judge.created_at)]
    if "imported_from" in config:
        source = config.pop("imported_from")
        rows.append(("provenance", f"ratings imported from a file (as {source})"))
    elif isinstance(config.get("jury"), dict):
        rows.append(("provenance", "a jury: computed from its members' ratings (below, each with its identity)"))
    elif not judge.configured:
        rows.append(("provenance", "not a run of `tui-rater judge`: only what is stored below is known"))
    if config.get("backend") == "llama.cpp" and config.get("chat_template") is None:
        config.pop("chat_template", None)
        config.setdefault("chat_template_sha256", "none given: the GGUF's own template (plain text without one)")
    for key, title in SHOWN:
        if config.get(key) is not None:
            rows.append((title, _show(config.pop(key))))
    for key in sorted(config):  # whatever else the configuration holds: all of it is provenance
        if config[key] is not None:  # (`--format json` lists the unset ones too)
            rows.append((key, _show(config[key])))
    for source in judge.sources:
        said = []
        if source.served_model:
            said.append(f"model id {source.served_model}")
        if source.system_fingerprint:
            said.append(f"system_fingerprint {source.system_fingerprint}")
        if not said and judge.config.get("backend") == "openai-compatible":
            said.append("no model id or fingerprint reported")
        said.append(f"{source.jobs} jobs, {source.first_seen} to {source.last_seen}")
        rows.append(("source", f"{source.source}: " + "; ".join(said)))
    for url, facts in judge.servers:  # what the server said stands behind the alias
        rows.append(("server", f"{url}: {_server(facts)}"))
        from tui_rater.service.judges import server_warnings

        for warning in server_warnings(facts, str(judge.config.get("api_model", ""))):
            rows.append(("warning", warning))
    if judge.source_changed:
        rows.append(("source changed", f"yes: its replies came from {len(judge.sources)} different sources"))
    rows.append(("ratings", f"{judge.ratings} with a value, {judge.failures} typed failures"))
    rows.append(("jobs", ", ".join(f"{n} {status}" for status, n in judge.jobs.items())))
    return rows


def _server(facts: dict[str, Any]) -> str:
    props, model = facts.get("props", {}), facts.get("model", {})
    said = []
    if props.get("model_path"):
        said.append(f"model file {props['model_path']}")
    if props.get("chat_template_sha256"):
        said.append(f"chat template sha256 {props['chat_template_sha256'][:12]}")
    if props.get("n_ctx"):
        said.append(f"n_ctx {props['n_ctx']}")
    if model.get("root"):
        said.append(f"root {model['root']}")
    if model.get("max_model_len"):
        said.append(f"max_model_len {model['max_model_len']}")
    return "; ".join(said) or "nothing about the model behind its alias"


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False) if value else "-"
    return str(value)
