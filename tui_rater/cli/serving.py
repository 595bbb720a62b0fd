"""`serve`: the annotation app in a browser, one personal link per annotator (textual-serve)."""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tui_rater.cli.common import Subparsers, db_path, lead_only, open_study, say
from tui_rater.config import Settings
from tui_rater.domain.errors import UserError

if TYPE_CHECKING:
    from tui_rater.service.serving import Link

DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 32  # ~150 MB each: about 5 GB of memory at the cap


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "serve",
        parents=[common],
        help="the annotation app in a browser, one personal link per annotator",
        description="Serve the annotation app to web browsers (textual-serve): each annotator gets a personal "
        "link with an unguessable token, and rates under their own name in the app they know from the "
        "terminal. The study keeps only a hash of each token, so a link is printed once, when it is made; "
        "--new-links replaces lost ones. Binds 127.0.0.1: reach it over an SSH tunnel.",
    )
    p.add_argument("--task", required=True, help="the task the annotators rate")
    p.add_argument(
        "--annotators",
        required=True,
        metavar="NAMES",
        help="comma-separated rater names, one link each (alice,bob); links of anyone else do not open",
    )
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1, this host only)")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the port (default: {DEFAULT_PORT}; 0: any free one)"
    )
    p.add_argument(
        "--public",
        action="store_true",
        help="allow an address other hosts can reach (anyone who has a link can then rate; plain HTTP: "
        "put a TLS proxy in front)",
    )
    p.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULT_MAX_SESSIONS,
        metavar="N",
        help=f"at most N open sessions (one app process each, ~150 MB) at once; past it a page says the server is "
        f"full (default: {DEFAULT_MAX_SESSIONS})",
    )
    p.add_argument(
        "--new-links",
        action="store_true",
        help="make new links for the named annotators (printed once); their old links stop working",
    )
    lead_only(p, lambda args: "serve the study's links")  # links are made, replaced and revoked in the study
    p.set_defaults(run=cmd_serve)


def annotator_names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if any(not name for name in names):
        raise UserError(f"--annotators takes comma-separated names, e.g. alice,bob; got {text!r}")
    return list(dict.fromkeys(names))


def is_loopback(host: str, port: int) -> bool:
    """Whether every address ``host`` stands for is this machine's loopback (127.0.0.0/8, ::1)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UserError(f"cannot listen on {host!r}: {exc.strerror}") from None
    # a TCP address is (host, port, ...): its host a str (only AF_PACKET-like families give an int)
    return all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in found)


def is_unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:  # a host name
        return False


def listen(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {host} port {port}: {exc.strerror}") from None
    sock.setblocking(False)
    return sock


def annotate_command(db: Path, task: str, annotator: str, task_files: list[str]) -> str:
    """The shell command textual-serve runs for one browser session: the app, under that annotator's name."""
    words = [sys.executable, "-m", "tui_rater.cli", "annotate", "--db", str(db), "--task", task]
    for task_file in task_files:
        words += ["--task-file", str(Path(task_file).resolve())]
    # (one word for the name, even one such as "-x"; `exec`: the shell textual-serve starts becomes the app)
    return "exec " + shlex.join([*words, f"--annotator={annotator}"])


def say_now(line: str) -> None:
    say(line)
    sys.stdout.flush()  # a log read as it is written (a pipe, a file)


def announce(
    args: argparse.Namespace,
    db: Path,
    port: int,
    annotators: list[str],
    made: dict[str, Link],
    existing: dict[str, Link],
) -> None:
    """What the lead needs: where it serves, each link made now (shown only now), how to reach it."""
    host = args.host
    if is_unspecified(host):  # 0.0.0.0 / ::, every interface: the links name this host
        host = socket.gethostname()
    shown_host = f"[{host}]" if ":" in host else host
    base = f"http://{shown_host}:{port}"
    say(f"serving task {args.task} of {db} on {base}")
    for name in annotators:
        if name in made:
            say(f"  {name}: {base}/a/{made[name].token}")
        else:
            say(
                f"  {name}: link made {existing[name].created_at[:16].replace('T', ' ')} UTC (shown only then; "
                "lost? --new-links replaces it)"
            )
    if made:
        say("Send each person their link; it is shown only now (the study keeps a hash of it).")
    if args.public and not is_loopback(args.host, port):
        say(
            "Plain HTTP on an address others can reach: anyone who can watch the network can read the links "
            "and the ratings; put a TLS proxy in front, or serve on 127.0.0.1 through SSH tunnels."
        )
    else:
        tunnel_host = f"[{args.host}]" if ":" in args.host else args.host
        say(
            f"From another computer: ssh -N -L {port}:{tunnel_host}:{port} {socket.gethostname()}, "
            "then open the link there as it is."
        )
    say(
        f"At most {args.max_sessions} session{'s' if args.max_sessions != 1 else ''} at once (--max-sessions); "
        "one per link: a link opened again takes "
        "over from its earlier page."
    )
    say("Ctrl-C stops the server; every open session saves its ratings first.")
    sys.stdout.flush()


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port takes 0 to 65535, not {args.port}")
    if not 1 <= args.max_sessions <= 10_000:
        raise UserError(f"--max-sessions takes 1 to 10000, not {args.max_sessions}")
    if not args.public and not is_loopback(args.host, args.port):
        raise UserError(
            f"{args.host} can be reached from other hosts; serve on 127.0.0.1 and use an SSH tunnel, "
            "or say --public to serve on it anyway"
        )
    annotators = annotator_names(args.annotators)
    study = open_study(args, settings, create=False)
    if args.task not in study.item_task_names():
        raise UserError(f"{study.path} holds no items of task {args.task!r}; import some first")
    db = Path(db_path(args, settings)).resolve()
    task_files = [*settings.task_files, *args.task_file]

    sock = listen(args.host, args.port)  # before any link is made: a busy port leaves the study as it was
    port = sock.getsockname()[1]
    from tui_rater.service.serving import annotator_links, link_book

    existing, made = annotator_links(study, annotators, args.new_links)

    import asyncio

    from tui_rater.ui.web import LinkServer

    # the server reads each link from the study when it is used (a replaced link stops opening at once);
    # each app opens the study itself
    server = LinkServer(
        link_book(study, args.task, annotators),
        lambda name: annotate_command(db, args.task, name, task_files),
        title=f"tui-rater · {args.task}",
        host=args.host,
        port=port,
        max_sessions=args.max_sessions,
        note=say_now,
    )
    try:
        # announced once it accepts connections and Ctrl-C / SIGTERM stop it cleanly
        asyncio.run(server.serve_on(sock, ready=lambda: announce(args, db, port, annotators, made, existing)))
    finally:
        study.close()
    return 0
