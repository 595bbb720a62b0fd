"""A study's certificate as data: canonical JSON, the digests of its tables, and reading one back safely.

``tui-rater certify`` writes a certificate; ``tui-rater verify`` reads one back and recomputes it from the study
(``service/certify.py``). Everything here is pure: bytes and dicts in, bytes and dicts out.

Canonical JSON: keys sorted, no spaces, ASCII only (every other character as ``\\uXXXX``), floats as Python's
``repr`` of the IEEE-754 double (the shortest text that reads back to the same 64 bits), integers as integers, and a
float that is not finite as the string ``"nan"``, ``"inf"`` or ``"-inf"`` (JSON has no such numbers). Two equal
documents are the same bytes, so their SHA-256 is their identity.

A table's digest is a Merkle tree (RFC 6962's shape: a leaf is ``SHA-256(0x00 || row)``, a node
``SHA-256(0x01 || left || right)``, an odd node carried up) over its canonical rows sorted by key. The root is the
claim; beside it the certificate keeps each row's key and the first 16 hex digits of its leaf hash, so that a
changed, missing or added row is named without walking the tree (about 30 bytes a row: a 10,000-rating study's
certificate is about 0.4 MB). The root is over the whole hashes, so the short ones only say where to look.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

FORMAT = "tui-rater-certificate"
FORMAT_VERSION = 1
# the method: which rows are hashed and how, and how the report computes its numbers. A certificate made with
# another method version is not compared number by number (a false mismatch): verify says what differs instead.
METHOD_VERSION = 2
# what each method version changed, said when a certificate of another version is verified
METHOD_CHANGES: dict[int, str] = {
    1: "the first method: items, ratings, jobs, raters, plans, team plans, assignments and gold rows hashed as "
    "canonical JSON; the report's records (every number of `report --format json`) compared as float64 bits",
    2: "the item bootstrap's intervals draw each figure's resample counts by rating pattern (Multinomial(n, pattern "
    "sizes / n): the same bootstrap distribution as resampling the items, seeded by n and the patterns' sizes), not "
    "from one draw of 1,000 x n item counts: every interval end is a new draw, every other number the same",
}
FLOAT_FORMAT = "repr of the IEEE-754 float64 (shortest round-trip text); nan, inf, -inf as strings"
SHORT = 16  # hex digits of a row's leaf hash kept for pinpointing
LARGEST = 512 * 1024 * 1024  # a certificate file larger than this is refused before it is read
DEEPEST = 32  # a certificate nests objects about 6 deep (a judge's provenance); deeper is not one of ours


class BadCertificate(ValueError):
    """The file is not a certificate this tui-rater can read: one sentence says why."""


def _plain(value: Any) -> Any:
    """The value with non-finite floats as strings, tuples as lists, mapping keys as strings."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def canonical(value: Any) -> bytes:
    """The canonical JSON bytes of ``value`` (see the module's docstring)."""
    # json writes a float with float.__repr__: the shortest text that reads back to the same double
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def pretty(value: Any) -> bytes:
    """The same document, indented for people; it reads back to the same canonical bytes."""
    return (json.dumps(_plain(value), sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False) + "\n").encode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def leaf_hash(row: Any) -> bytes:
    return hashlib.sha256(b"\x00" + canonical(row)).digest()


def merkle_root(leaves: list[bytes]) -> str:
    """The root of the Merkle tree over ``leaves`` (leaf hashes, in key order); of no leaves, SHA-256 of nothing.

    Written here (about ten lines) rather than taken from a package: the tree must stay this exact shape for old
    certificates to verify, which a dependency's next version need not promise."""
    if not leaves:
        return hashlib.sha256(b"").hexdigest()
    level = leaves
    while len(level) > 1:
        pairs = [hashlib.sha256(b"\x01" + level[i] + level[i + 1]).digest() for i in range(0, len(level) - 1, 2)]
        level = pairs + ([level[-1]] if len(level) % 2 else [])
    return level[0].hex()


def table_digest(rows: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
    """A table's digest from (key, canonical row) pairs: the root, the keys in order and the short leaf hashes."""
    ordered = sorted(rows, key=lambda pair: canonical(pair[0]))
    leaves = [leaf_hash(row) for _, row in ordered]
    return {
        "rows": len(ordered),
        "root": merkle_root(leaves),
        "keys": [_plain(key) for key, _ in ordered],
        "leaves": "".join(leaf.hex()[:SHORT] for leaf in leaves),
    }


def short_leaves(digest: Mapping[str, Any]) -> dict[str, str]:
    """key (as canonical text) -> short leaf hash, from a table's digest."""
    keys, leaves = digest["keys"], digest["leaves"]
    return {canonical(key).decode(): leaves[i * SHORT : (i + 1) * SHORT] for i, key in enumerate(keys)}


# --- reading a certificate: data only ------------------------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise BadCertificate(f"it holds {name}, which JSON does not allow")


def read(data: bytes) -> dict[str, Any]:
    """Parse and check a certificate's bytes; ``BadCertificate`` (one sentence) when it is not one.

    Nothing in it is executed or opened: it is parsed as JSON (no NaN/Infinity constants, no duplicate keys), and
    its shape is checked before anything reads it."""
    if len(data) > LARGEST:
        raise BadCertificate(f"it is larger than {LARGEST // 2**20} MB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadCertificate("it is not UTF-8 text") from None
    try:
        found = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except BadCertificate:
        raise
    except RecursionError:
        raise BadCertificate("it is nested too deeply to be a certificate") from None
    except ValueError as exc:
        raise BadCertificate(f"it is not JSON ({_short(str(exc))})") from None
    if _depth(found) > DEEPEST:
        raise BadCertificate(f"it nests values more than {DEEPEST} deep, deeper than any certificate")
    check_shape(found)
    return found  # type: ignore[no-any-return]  # check_shape proved it a dict


def _depth(value: Any) -> int:
    """How deep lists and objects nest, counted without recursion (a hostile file must not exhaust the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > DEEPEST:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise BadCertificate(f"the key {_short(key)!r} appears twice in one object")
        found[key] = value
    return found


def _short(text: str, most: int = 80) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _need(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float, (int, float))):
        names = {dict: "an object", list: "a list", str: "a string", int: "a whole number", float: "a number"}
        wanted = names.get(kind, "a number") if isinstance(kind, type) else "a number"
        raise BadCertificate(f"{where} must be {wanted}, not {type(value).__name__}")
    return value


def check_shape(found: Any) -> None:
    """The keys and types ``verify`` reads; anything else in the document is compared as data only."""
    _need(found, dict, "the document")
    if found.get("format") != FORMAT:
        raise BadCertificate(f"it is not a tui-rater certificate (its 'format' is not {FORMAT!r})")
    for key in ("format_version", "method_version"):
        value = _need(found.get(key), int, f"'{key}'")
        if not 0 < value < 10**9:
            raise BadCertificate(f"'{key}' must be a whole number from 1 to 999999999")
    _need(found.get("tui_rater_version", ""), str, "'tui_rater_version'")
    settings = _need(found.get("settings"), dict, "'settings'")
    epsilon = settings.get("epsilon")
    if epsilon is not None and not (
        isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and 0 <= epsilon < 1
    ):
        raise BadCertificate("'settings.epsilon' must be null or a number at least 0 and below 1")
    tau = settings.get("spa_tau")
    if tau is not None and not (isinstance(tau, (int, float)) and not isinstance(tau, bool) and 0 <= tau <= 2):
        raise BadCertificate("'settings.spa_tau' must be null or a number from 0 to 2")
    for key in ("raters", "reference"):
        _need(settings.get(key), str, f"'settings.{key}'")
    excluded = _need(settings.get("excluded_annotators", []), list, "'settings.excluded_annotators'")
    for name in excluded:
        _need(name, str, "each of 'settings.excluded_annotators'")
    tasks = _need(found.get("tasks"), dict, "'tasks'")
    if not tasks:
        raise BadCertificate("'tasks' names no task")
    for name, task in tasks.items():
        where = f"task {_short(name)!r}"
        _need(task, dict, where)
        tables = _need(task.get("tables"), dict, f"{where}'s 'tables'")
        for table, digest in tables.items():
            _check_digest(digest, f"{where}'s table {_short(table)!r}")
        numbers = _need(task.get("numbers"), dict, f"{where}'s 'numbers'")
        for key, number in numbers.items():
            _need(number, dict, f"{where}'s number {_short(key)!r}")


def _check_digest(digest: Any, where: str) -> None:
    _need(digest, dict, where)
    rows = _need(digest.get("rows"), int, f"{where}'s 'rows'")
    root = _need(digest.get("root"), str, f"{where}'s 'root'")
    keys = _need(digest.get("keys"), list, f"{where}'s 'keys'")
    leaves = _need(digest.get("leaves"), str, f"{where}'s 'leaves'")
    if len(root) != 64 or any(c not in "0123456789abcdef" for c in root):
        raise BadCertificate(f"{where}'s 'root' is not a SHA-256 in hex")
    if rows != len(keys) or len(leaves) != SHORT * len(keys):
        raise BadCertificate(f"{where} says {rows} rows but lists {len(keys)} keys and {len(leaves)} hex digits")
    if any(c not in "0123456789abcdef" for c in leaves):
        raise BadCertificate(f"{where}'s 'leaves' is not hex")
    for key in keys:  # a row's key: a rating's or job's id, an item's id, or a short list of them
        parts = key if isinstance(key, list) else [key]
        if not all(isinstance(part, (str, int)) and not isinstance(part, bool) for part in parts):
            raise BadCertificate(f"{where}'s 'keys' must be whole numbers, strings or lists of them")
