"""Read the files inside a Qt resource bundle (``.rcc``), as GCompris ships its pictures.

A binary ``.rcc`` (format versions 1-3) holds a tree of nodes, a name table and a
data table. Each file node points at a data record ``[u32 length][bytes]``; a
record flagged as compressed holds ``[u32 original length][zlib stream]``. Records
compressed with zstd (flag 4) are skipped, as this module has no zstd decoder.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

_COMPRESSED = 0x01
_DIRECTORY = 0x02
_ZSTD = 0x04


def _name(blob: bytes, names: int, offset: int) -> str:
    (length,) = struct.unpack_from(">H", blob, names + offset)
    start = names + offset + 6  # u16 length, u32 hash
    return blob[start : start + 2 * length].decode("utf-16-be")


def iter_rcc(blob: bytes) -> Iterator[tuple[str, bytes]]:
    """Yield ``(path, content)`` for every file in a binary Qt resource bundle.

    Args:
        blob: the whole ``.rcc`` file.

    Raises:
        ValueError: the data is not a binary Qt resource bundle.
    """
    if blob[:4] != b"qres":
        raise ValueError("not a Qt resource bundle (no 'qres' magic)")
    version, tree, data, names = struct.unpack_from(">IIII", blob, 4)
    node_size = 14 if version == 1 else 22

    def walk(index: int, prefix: str) -> Iterator[tuple[str, bytes]]:
        base = tree + index * node_size
        name_off, flags = struct.unpack_from(">IH", blob, base)
        name = _name(blob, names, name_off) if index else ""
        path = f"{prefix}/{name}" if name else prefix
        if flags & _DIRECTORY:
            count, first = struct.unpack_from(">II", blob, base + 6)
            for child in range(first, first + count):
                yield from walk(child, path)
            return
        if flags & _ZSTD:
            return
        (data_off,) = struct.unpack_from(">I", blob, base + 10)
        (length,) = struct.unpack_from(">I", blob, data + data_off)
        payload = blob[data + data_off + 4 : data + data_off + 4 + length]
        if flags & _COMPRESSED:
            payload = zlib.decompress(payload[4:])
        yield path, payload

    yield from walk(0, "")
