"""CRC-32C (Castagnoli), the checksum of UCMB payloads (docs/format.md).

crc32c(data, crc=0) uses, in order:

  * a native module when one is installed: ``google_crc32c`` (its C
    implementation) or ``crc32c``; ``IMPLEMENTATION`` names the one in use;
  * otherwise pure Python that stays fast on whole blocks: the data is cut
    into L lanes that are run side by side, one byte of every lane per
    step, with the 256-entry table applied to all lanes at once by
    ``bytes.translate`` and the XORs done on big integers (both run in C);
    the lanes' registers are then joined with a precomputed "advance over
    m zero bytes" table. A 2 MiB block takes a tenth of the
    byte-at-a-time loop's time (38 ms against 358 ms in one run).

A writer that does not need the end-to-end check can skip the CRC: a
header that states none (flags bit 0 clear) is accepted, and the daemon
computes the block's CRC itself when it publishes it.
"""

from typing import Callable, List, Optional, Sequence

__all__ = ["crc32c", "crc32c_python", "IMPLEMENTATION"]

_POLY = 0x82F63B78  # Castagnoli, reflected


def _make_table() -> List[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()
# _TRANS[k] maps a byte b to byte k of _TABLE[b], for bytes.translate.
_TRANS = [bytes((t >> (8 * k)) & 0xFF for t in _TABLE) for k in range(4)]


def _bytewise(c: int, data: Sequence[int]) -> int:
    """Advance the raw register c over data, a byte at a time."""
    table = _TABLE
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c


def _zeros_tables(m: int) -> List[List[int]]:
    """Four tables that advance a register over m zero bytes.

    The step is linear over GF(2), so the image of a register is the XOR of
    the images of its four bytes: tables[k][b] is the image of b << 8k.
    """
    cols = [_bytewise(1 << i, bytes(m)) for i in range(32)]
    tables = []
    for k in range(4):
        t = [0] * 256
        for b in range(1, 256):
            low = b & -b
            t[b] = t[b ^ low] ^ cols[8 * k + low.bit_length() - 1]
        tables.append(t)
    return tables


_ZEROS_CACHE: dict = {}


def _lanes(c: int, data: bytes) -> int:
    """Advance the raw register c over data (len(data) >= 1024) by lanes."""
    n = len(data)
    lanes = max(64, int((3 * n) ** 0.5))  # balances per-step and per-lane costs
    m = n // lanes
    body = lanes * m
    frombytes = int.from_bytes
    t0, t1, t2, t3 = _TRANS
    # The four bytes of every lane's register, lane i at byte i.
    r0 = r1 = r2 = r3 = 0
    for j in range(m):
        idx = (r0 ^ frombytes(data[j:body:m], "little")).to_bytes(lanes, "little")
        r0 = frombytes(idx.translate(t0), "little") ^ r1
        r1 = frombytes(idx.translate(t1), "little") ^ r2
        r2 = frombytes(idx.translate(t2), "little") ^ r3
        r3 = frombytes(idx.translate(t3), "little")
    b0, b1, b2, b3 = (r.to_bytes(lanes, "little") for r in (r0, r1, r2, r3))
    zeros = _ZEROS_CACHE.get(m)
    if zeros is None:
        zeros = _ZEROS_CACHE[m] = _zeros_tables(m)
        if len(_ZEROS_CACHE) > 64:
            _ZEROS_CACHE.clear()
    z0, z1, z2, z3 = zeros
    # Register after lane i = (register before it, advanced over m zeros)
    # XOR (lane i's register from 0): the CRC is linear.
    for i in range(lanes):
        c = (z0[c & 0xFF] ^ z1[(c >> 8) & 0xFF] ^ z2[(c >> 16) & 0xFF] ^ z3[c >> 24]
             ^ b0[i] ^ (b1[i] << 8) ^ (b2[i] << 16) ^ (b3[i] << 24))
    return _bytewise(c, memoryview(data)[body:])


def crc32c_python(data: bytes, crc: int = 0) -> int:
    """CRC-32C of data continuing from crc (0 to start), in pure Python."""
    c = crc ^ 0xFFFFFFFF
    if len(data) < 1024:
        c = _bytewise(c, data)
    else:
        c = _lanes(c, bytes(data))
    return c ^ 0xFFFFFFFF


def _native() -> "tuple[Optional[Callable[[bytes, int], int]], str]":
    try:
        import google_crc32c  # type: ignore

        if getattr(google_crc32c, "implementation", "c") == "c":
            return (lambda data, crc=0: google_crc32c.extend(crc, data)), "google_crc32c"
    except ImportError:
        pass
    try:
        import crc32c as _mod  # type: ignore

        return (lambda data, crc=0: _mod.crc32c(data, crc)), "crc32c"
    except ImportError:
        pass
    return None, "python"


_NATIVE, IMPLEMENTATION = _native()


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC-32C (Castagnoli) of data, continuing from crc (0 to start)."""
    if _NATIVE is not None:
        return _NATIVE(bytes(data), crc)
    return crc32c_python(data, crc)
