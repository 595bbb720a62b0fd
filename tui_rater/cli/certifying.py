"""Certificates: `certify` writes what a study's verdict rests on, `verify` recomputes it from the study."""

from __future__ import annotations

import argparse
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from tui_rater.cli.common import Subparsers, open_study, real, say, whole
from tui_rater.cli.reporting import RATER_KINDS
from tui_rater.domain.decoding import MAX_SEED
from tui_rater.domain.errors import UserError

if TYPE_CHECKING:
    from tui_rater.config import Settings

CERT_SUFFIXES = {".json": "json", ".html": "html", ".htm": "html"}


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "certify",
        parents=[common],
        help="write a certificate of the study's verdict that anyone can re-check (`verify`)",
        description="A canonical JSON document (sorted keys, float64 numbers as their shortest round-trip text): a "
        "Merkle digest of every table the report reads (items, ratings, the judges' replies, jobs, raters, plans, "
        "assignments, gold), each judge's provenance (GGUF SHA-256 and numerics, or the API model), the prompts' "
        "hashes, plans with their seeds and inclusion probabilities, the verdict's settings (ε and why), every test "
        "with its multiplicity correction, and every number of the report. --out NAME.html: a page for people. "
        "Check it with `tui-rater verify NAME.json --db STUDY.db` (docs/VERDICT.md, Certificates).",
    )
    p.add_argument("--task", action="append", default=[], help="only this task (repeatable; default: every task)")
    p.add_argument("--out", type=Path, required=True, help="the certificate: NAME.json, or NAME.html for people")
    p.add_argument("--raters", choices=RATER_KINDS, default="expert", help="as `report --raters` (default expert)")
    p.add_argument("--epsilon", type=float, help="as `report --epsilon` (default: from --raters)")
    p.add_argument("--reference", choices=("humans", "adjudicated"), default="humans", help="as `report --reference`")
    p.add_argument("--spa-tau", type=real(0, 2), default=1.1, help="as `report --spa-tau` (default 1.1)")
    p.add_argument("--no-spa-filter", action="store_true", help="as `report --no-spa-filter`")
    p.add_argument(
        "--exclude-annotator", action="append", default=[], metavar="NAME", help="as `report --exclude-annotator`"
    )
    p.set_defaults(run=cmd_certify)

    p = sub.add_parser(
        "verify",
        parents=[common],
        help="recompute a certificate from the study and name every difference",
        description="Recomputes every digest and number of CERT from the study (--db) with the certificate's "
        "settings and "
        "compares (the data to the bit; a computed figure within 1e-6, since another machine's BLAS rounds last "
        "bits differently: those are one note): exit 0 when all match, else one line per difference (which "
        "rating, which job, which number) and exit 1. A certificate of another method version says what differs "
        "in method (exit 3). --rerun N asks N randomly chosen local-judge jobs again through llama.cpp with the "
        "model file the study recorded (its SHA-256 checked first) and compares replies and distributions bit for "
        "bit. The certificate is read as data: nothing in it is run or opened.",
    )
    p.add_argument("certificate", type=Path, metavar="CERT", help="the certificate (.json) that `certify` wrote")
    p.add_argument(
        "--rerun",
        type=whole(0, 1_000_000),
        default=0,
        metavar="N",
        help="re-run N local-judge jobs (default 0); all of them when the study holds fewer, exit 1 when it holds none",
    )
    p.add_argument(
        "--seed", type=whole(0, MAX_SEED), default=0, help="which jobs --rerun draws (default 0; stated in the output)"
    )
    p.set_defaults(run=cmd_verify)


def cmd_certify(args: argparse.Namespace, settings: Settings) -> int:
    import math

    from tui_rater.domain import certificate as cert
    from tui_rater.service.certify import CertifySettings, write_certificate

    kind = CERT_SUFFIXES.get(args.out.suffix.lower())
    if kind is None:
        raise UserError(f"--out {args.out}: name the certificate NAME.json (or NAME.html for people)")
    if args.epsilon is not None and not (math.isfinite(args.epsilon) and 0 <= args.epsilon < 1):
        raise UserError(f"--epsilon must be at least 0 and below 1, not {args.epsilon:g}")
    study = open_study(args, settings, create=False, readonly=True)
    chosen = CertifySettings(
        epsilon=args.epsilon,
        raters=args.raters,
        reference=args.reference,
        spa_tau=None if args.no_spa_filter else args.spa_tau,
        excluded_annotators=tuple(dict.fromkeys(args.exclude_annotator)),
    )
    found = write_certificate(study, args.out, args.task, chosen, html=kind == "html")
    rows = sum(d["rows"] for part in found["tasks"].values() for d in part["tables"].values())
    numbers = sum(len(part["numbers"]) for part in found["tasks"].values())
    say(
        f"wrote the certificate to {args.out}: {len(found['tasks'])} task(s), {rows} rows hashed, {numbers} numbers; "
        f"canonical SHA-256 {cert.sha256(cert.canonical(found))}"
    )
    if kind == "json":
        say(f"check it: tui-rater verify {args.out} --db {study.path}")
    return 0


def cmd_verify(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.domain import certificate as cert
    from tui_rater.service.certify import verify

    path: Path = args.certificate
    try:
        # a FIFO, a device or a socket named as the certificate would block the read forever (or read without end):
        # only a regular file is read
        if not stat.S_ISREG(path.stat().st_mode):
            raise UserError(f"{path} is not a certificate: it is not a regular file")
        if path.stat().st_size > cert.LARGEST:
            raise UserError(f"{path} is not a certificate: it is larger than {cert.LARGEST // 2**20} MB")
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read the certificate {path}: {exc.strerror or exc}") from None
    try:
        found = cert.read(data)
    except cert.BadCertificate as exc:
        raise UserError(f"{path} is not a certificate tui-rater can read: {exc}") from None
    study = open_study(args, settings, create=False, readonly=True)
    result = verify(study, found)
    for note in result.notes:
        say(f"note: {note}")
    if result.method_differs:
        say("verify: the certificate's method differs from this tui-rater's: not compared (see the notes above)")
        return 3
    differences = list(result.differences)
    rerun_jobs_asked, rerun_available = 0, 0
    if args.rerun:
        from tui_rater.service.certify_rerun import rerun_jobs

        rerun = rerun_jobs(study, list(found["tasks"]), args.rerun, args.seed)
        for note in rerun.notes:
            say(f"note: {note}")
        differences += rerun.differences
        rerun_jobs_asked, rerun_available = rerun.jobs, rerun.available
    for line in differences:
        say(f"differs: {line}")
    if differences:
        say(f"verify: {len(differences)} difference(s) between {path} and {study.path}", err=True)
        return 1
    if args.rerun and not rerun_available:
        # asked to rerun and nothing could be: not a verification of the bits, so not a success
        say(
            f"verify: --rerun {args.rerun} asked, but {study.path} holds no local-judge (llama.cpp) job of the "
            "certificate's tasks: none could be rerun",
            err=True,
        )
        return 1
    rerun_said = ""
    if args.rerun:
        short = (
            f" ({args.rerun} asked; the study holds {rerun_available} local-judge job(s): all of them rerun)"
            if rerun_available < args.rerun
            else ""
        )
        rerun_said = f"; {rerun_jobs_asked} job(s) rerun, the same bits{short}"
    # the identity certify printed: compare it with the published one (a certificate is unsigned, docs/VERDICT.md)
    say(
        f"verify: {path} matches {study.path}{rerun_said}; "
        f"the certificate's canonical SHA-256 {cert.sha256(cert.canonical(found))}"
    )
    return 0
