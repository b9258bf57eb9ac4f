"""ucmfs.sparse: the sparse-attention part of the ucmfs client (standard library only).

Sparse attention keeps a small representation of each KV block and, at
each decode step, loads only the blocks whose representation scores
highest against the query. ucmfs stores those representations as
sidecars next to their blocks (SPEC section 5, docs/sparse.md) and ranks
blocks by them itself (docs/control.md, section topk):

  * read_repr: read and decode a block's <id>.repr. On a mount, a block
    without a stored sidecar gets one derived from its keys at the first
    read (the model's user.ucm.repr_kind, mean by default), stored from
    then on;
  * write_repr: publish an engine's own sidecar;
  * TopK: a session on MNT/.ucm/topk, which keeps the index of its last
    request, so asking every decode step over the same candidates only
    scans; topk: one request.

It builds on ucmfs.client.
"""

import base64
import os
import struct
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import client as uc

REPR_MAGIC = b"UCMR"

#: sidecar kind name -> number (SPEC section 5).
REPR_KINDS: Dict[str, int] = {"mean": 0, "max": 1, "merged": 2, "signhash": 3}
_REPR_KIND_BY_VALUE = {v: k for k, v in REPR_KINDS.items()}
_DTYPE_NAMES = {v: name for name, (v, _) in uc.DTYPES.items()}


class ReprHeader(NamedTuple):
    """The UCMR header of a <id>.repr sidecar (SPEC section 5)."""

    block_id: bytes
    kind: str           # mean, max, merged, signhash
    dtype: str          # float32 for derived kinds 0-2, uint8 for kind 3
    num_layers: int
    num_kv_heads: int
    rows: int           # vectors per head
    dim: int            # elements per vector (kind 3: hash_bits / 8)
    payload_crc32c: int
    flags: int
    param: int          # merged: merge factor; signhash: hash bits

    _FMT = "<4sI16sIIIIIIIIII"

    @classmethod
    def unpack(cls, b: bytes) -> "ReprHeader":
        """Parse 64 bytes; raise ValueError on anything SPEC section 5 forbids."""
        if len(b) < uc.HEADER_SIZE:
            raise ValueError("header needs 64 bytes, have %d" % len(b))
        (magic, version, bid, kind, dt, layers, heads, rows, dim, crc, flags, param,
         reserved) = struct.unpack(cls._FMT, b[:uc.HEADER_SIZE])
        if magic != REPR_MAGIC or version != uc.VERSION:
            raise ValueError("not a UCMR v1 header")
        if (kind not in _REPR_KIND_BY_VALUE or dt not in _DTYPE_NAMES or flags & ~uc.FLAG_CRC
                or reserved or min(layers, heads, rows, dim) < 1):
            raise ValueError("bad sidecar header field")
        return cls(bid, _REPR_KIND_BY_VALUE[kind], _DTYPE_NAMES[dt], layers, heads, rows,
                   dim, crc, flags, param)


class Repr(NamedTuple):
    """A decoded sidecar: its header and its values, [layers][heads][rows][dim] flattened.

    values are Python floats for float16/bfloat16/float32 sidecars and
    ints (the code bytes) for kind 3.
    """

    header: ReprHeader
    values: List

    def vector(self, layer: int, head: int, row: int = 0) -> List:
        """The dim values of one (layer, head, row)."""
        h = self.header
        start = ((layer * h.num_kv_heads + head) * h.rows + row) * h.dim
        return self.values[start:start + h.dim]


def _decode_values(data: bytes, dtype: str) -> List:
    n = len(data) // uc.DTYPES[dtype][1]
    if dtype == "float32":
        return list(struct.unpack("<%df" % n, data))
    if dtype == "float16":
        return list(struct.unpack("<%de" % n, data))
    if dtype == "bfloat16":
        halves = struct.unpack("<%dH" % n, data)
        return list(struct.unpack("<%df" % n, struct.pack("<%dI" % n, *(h << 16 for h in halves))))
    return list(data)


def parse_repr(data: bytes, block_id: Optional[bytes] = None) -> Repr:
    """Decode and check a whole sidecar file (header, id, length, CRC); ValueError if bad."""
    hdr = ReprHeader.unpack(data)
    payload = data[uc.HEADER_SIZE:]
    if block_id is not None and hdr.block_id != block_id:
        raise ValueError("header id %s != file name" % hdr.block_id.hex())
    want = hdr.num_layers * hdr.num_kv_heads * hdr.rows * hdr.dim * uc.DTYPES[hdr.dtype][1]
    if len(payload) != want:
        raise ValueError("payload is %d bytes, the header implies %d" % (len(payload), want))
    if hdr.flags & uc.FLAG_CRC and uc.crc32c(payload) != hdr.payload_crc32c:
        raise ValueError("payload CRC mismatch")
    return Repr(hdr, _decode_values(payload, hdr.dtype))


def read_repr(root: str, model: str, block_id: bytes) -> Repr:
    """Read a block's sidecar <id>.repr and decode it.

    On a mount, a block without a stored sidecar gets one derived from its
    keys at this first read (the model's user.ucm.repr_kind, mean by
    default), stored next to it from then on. FileNotFoundError when the
    block is absent or its layout allows no derivation.
    """
    with open(uc.block_path(root, model, block_id, "repr"), "rb") as f:
        return parse_repr(f.read(), block_id)


def write_repr(root: str, model: str, block_id: bytes, data: bytes) -> None:
    """Publish an engine's own sidecar file (a whole UCMR file) for a stored block.

    It opens with O_CREAT|O_WRONLY, without O_EXCL: while the daemon can
    derive the block's sidecar, that one already exists, and O_EXCL would
    fail with EEXIST. close() is the verdict (EINVAL rejected, ENOENT no
    block, EACCES a sidecar already stored).
    """
    fd = os.open(uc.block_path(root, model, block_id, "repr"), os.O_CREAT | os.O_WRONLY, 0o444)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        raise
    os.close(fd)


def pack_floats(values: Sequence[float]) -> bytes:
    """float32 little-endian bytes of values."""
    return struct.pack("<%df" % len(values), *values)


class TopK:
    """One session on MNT/.ucm/topk (docs/control.md, section topk).

    The daemon keeps the index of a session's last request: asking again
    over the same candidates (a new query each decode step) only scans.
    """

    def __init__(self, mnt: str):
        self.ctl = uc.Control(mnt, "topk")

    def query(self, model: str, query: Sequence[float], ids: Sequence[bytes], k: int,
              heads: int, dim: int, kind: str = "mean", layer: Union[int, str] = 0
              ) -> Tuple[List[Tuple[bytes, Union[float, int]]], List[bytes]]:
        """Rank ids against query; returns (hits, missing).

        query is float32 values [layers][heads][dim] flattened: one layer,
        or every layer for layer="all". kind is mean, max, merged[:N] or
        signhash[:BITS]. hits are (id, score), best first: scores are dot
        products (floats) for kinds 0-2, Hamming distances (ints) for
        signhash. missing are the ids that have no sidecar and none can be
        derived (no block, or a layout that allows none).
        """
        if len(ids) > uc.MAX_IDS:
            raise ValueError("at most %d ids per request" % uc.MAX_IDS)
        q = base64.b64encode(pack_floats(query)).decode("ascii")
        words = self.ctl.request("topk %s kind=%s layer=%s k=%d heads=%d dim=%d q=%s %s" % (
            model, kind, layer, k, heads, dim, q, " ".join(b.hex() for b in ids))).split()
        n = int(words[0].partition("=")[2])
        hits = []
        integer = kind.split(":")[0] in ("signhash", "3")
        for w in words[2:2 + n]:
            h, _, v = w.partition(":")
            hits.append((bytes.fromhex(h), int(v) if integer else float(v)))
        missing = [bytes.fromhex(w) for w in words[3 + n:]]
        return hits, missing

    def close(self) -> None:
        self.ctl.close()

    def __enter__(self) -> "TopK":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def topk(mnt: str, model: str, query: Sequence[float], ids: Sequence[bytes], k: int,
         heads: int, dim: int, kind: str = "mean", layer: Union[int, str] = 0
         ) -> Tuple[List[Tuple[bytes, Union[float, int]]], List[bytes]]:
    """One top-k request on a new session; see TopK.query."""
    with TopK(mnt) as t:
        return t.query(model, query, ids, k, heads, dim, kind, layer)
