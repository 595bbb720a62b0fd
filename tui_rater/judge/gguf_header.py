"""A GGUF file's header, read without loading the model: its architecture, trained context and shapes.

Reads only the metadata and the tensor table at the front of the file (a few MB at most, even for a
30 GB model), so a model that cannot work here is refused in milliseconds, before llama.cpp maps it.
Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md (versions 2 and 3; all
little-endian). A header that does not parse, or that claims more than the file holds, is refused.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path

# value types: size in bytes of the fixed-size ones
_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
MAX_KV = 1 << 20  # metadata entries; real models have a few dozen
MAX_TENSORS = 1 << 20


class BadHeader(ValueError):
    """The file is not a GGUF file this reader understands, or its header is damaged."""


@dataclass(frozen=True)
class GGUFHeader:
    version: int
    file_bytes: int
    tensor_count: int
    metadata: dict[str, object] = field(repr=False)  # scalars and short arrays; long arrays as their length
    tensor_data_end: int = 0  # where the last tensor begins, from the start of the file (a lower bound)
    tensor_types: frozenset[int] = frozenset()  # the ggml types of its tensors (GGML_TYPE_*: 12 is Q4_K)

    def arch_value(self, key: str) -> object:
        """``{architecture}.{key}``, e.g. ``context_length``; None when absent."""
        return self.metadata.get(f"{self.metadata.get('general.architecture', '')}.{key}")


class _Reader:
    """Reads from a read-only memory map: the header is parsed without a system call per string."""

    def __init__(self, buffer: mmap.mmap, size: int):
        self.buffer, self.size, self.pos = buffer, size, 0

    def take(self, n: int) -> bytes:
        self.skip(n)
        return self.buffer[self.pos - n : self.pos]

    def unpack(self, fmt: str) -> object:
        n = struct.calcsize(fmt)
        self.skip(n)
        return struct.unpack_from(fmt, self.buffer, self.pos - n)[0]

    def string(self, keep: bool = True) -> str | None:
        n = self.unpack("<Q")
        assert isinstance(n, int)
        if not keep:
            self.skip(n)
            return None
        return self.take(n).decode("utf-8", "replace")

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > self.size:
            raise BadHeader("the header runs past the end of the file")
        self.pos += n

    def value(self, kind: int, depth: int = 0) -> object:
        """A metadata value: scalars and strings as they are, short arrays of numbers as lists,
        anything longer (the vocabulary, merges) skipped and returned as its length."""
        if kind in _FORMATS:
            return self.unpack(_FORMATS[kind])
        if kind == _STRING:
            return self.string()
        if kind != _ARRAY or depth > 3:
            raise BadHeader(f"unknown metadata value type {kind}")
        item_kind, n = self.unpack("<I"), self.unpack("<Q")
        assert isinstance(item_kind, int) and isinstance(n, int)
        if n > self.size:
            raise BadHeader("an array is longer than the file")
        if item_kind in _FIXED:
            if n <= 64 and depth == 0:  # per-layer values (head counts ...): kept
                return [self.value(item_kind, depth + 1) for _ in range(n)]
            self.skip(n * _FIXED[item_kind])
            return n
        for _ in range(n):
            if item_kind == _STRING:
                self.string(keep=False)
            else:
                self.value(item_kind, depth + 1)
        return n


def read_gguf_header(path: str | Path) -> GGUFHeader:
    """The header of a GGUF file; ``BadHeader`` (one sentence) when it is not a readable GGUF."""
    path = Path(path)
    size = path.stat().st_size
    if size < 24:
        raise BadHeader("the file is too short to be a GGUF model")
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
        reader = _Reader(buffer, size)
        if reader.take(4) != b"GGUF":
            raise BadHeader("it lacks the GGUF header")
        version = reader.unpack("<I")
        if version not in (2, 3):
            raise BadHeader(f"GGUF version {version} is not supported (2 and 3 are)")
        tensors, entries = reader.unpack("<Q"), reader.unpack("<Q")
        assert isinstance(tensors, int) and isinstance(entries, int)
        if tensors > MAX_TENSORS or entries > MAX_KV:
            raise BadHeader(f"the header claims {tensors} tensors and {entries} metadata entries")
        metadata: dict[str, object] = {}
        for _ in range(entries):
            key = reader.string()
            kind = reader.unpack("<I")
            assert isinstance(key, str) and isinstance(kind, int)
            metadata[key] = reader.value(kind)
        last = 0
        types: set[int] = set()
        for _ in range(tensors):
            reader.string(keep=False)
            dims = reader.unpack("<I")
            assert isinstance(dims, int)
            if dims > 8:
                raise BadHeader(f"a tensor claims {dims} dimensions")
            reader.skip(8 * dims)  # the shape
            kind = reader.unpack("<I")
            assert isinstance(kind, int)
            types.add(kind)
            offset = reader.unpack("<Q")
            assert isinstance(offset, int)
            last = max(last, offset)
        header_end = reader.pos
    alignment = metadata.get("general.alignment", 32)
    alignment = alignment if isinstance(alignment, int) and alignment > 0 else 32
    data_start = -(-header_end // alignment) * alignment
    if tensors and data_start + last > size:
        raise BadHeader(
            f"the file is {size:,} bytes but its tensors begin up to byte {data_start + last:,} (truncated?)"
        )
    return GGUFHeader(version, size, tensors, metadata, data_start + last, frozenset(types))
