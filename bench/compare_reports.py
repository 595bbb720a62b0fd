"""Two JSON reports compared value by value, every number by its float64 bits (issue 35: "the same numbers to the
last bit"): the check run before and after a change to the report's speed or memory.

    python bench/compare_reports.py BEFORE.json AFTER.json [--ignore study]

Prints how many numbers and other values were compared and each difference (path, before, after); exits 1 when
any differs. Keys named by ``--ignore`` (the study's path, by default) are not compared.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path
from typing import Any


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def compare(a: Any, b: Any, path: str, ignore: set[str], found: list[tuple[str, Any, Any]], counts: list[int]) -> None:
    """Walk both; a number is compared by its bits (an int and a float of the same value differ: the type is shown)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            found.append((f"{path}/<keys>", list(a), list(b)))
        for key in a:
            if key in b and key not in ignore:
                compare(a[key], b[key], f"{path}/{key}", ignore, found, counts)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            found.append((f"{path}/<length>", len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            compare(x, y, f"{path}[{i}]", ignore, found, counts)
    elif isinstance(a, float) or isinstance(b, float):
        counts[0] += 1
        if type(a) is not type(b) or _bits(a) != _bits(b):
            found.append((path, a, b))
    else:
        counts[1] += 1
        if type(a) is not type(b) or a != b:
            found.append((path, a, b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore", action="append", default=None, help="a key not compared (default: study)")
    args = parser.parse_args()
    ignore = set(args.ignore or ["study"])
    found: list[tuple[str, Any, Any]] = []
    counts = [0, 0]
    compare(json.loads(args.before.read_text()), json.loads(args.after.read_text()), "", ignore, found, counts)
    print(f"{counts[0]} floats and {counts[1]} other values compared: {len(found)} differ")
    for path, before, after in found[:50]:
        print(f"  {path}: {before!r} -> {after!r}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
