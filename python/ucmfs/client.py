"""ucmfs.client: the engine side of the ucmfs contract, with plain POSIX calls.

Nothing here needs the daemon's internals (Python standard library only):

  * block ids: the hash chain of docs/format.md (MD5, 4-byte little-endian
    tokens): meta, chain_seed, next_id, chain;
  * the 64-byte UCMB header, built and parsed strictly (BlockHeader,
    make_header), with CRC-32C from ucmfs.crc (a native module when one is
    installed, else fast pure Python). make_header(..., with_crc=False)
    states no CRC and leaves it to the daemon, which computes it at publish;
  * write a block: open(O_CREAT|O_EXCL|O_WRONLY), write, optional fsync,
    close (write_block, write_file). close() is the verdict: it returns
    (published) or raises OSError (EINVAL rejected, ENOSPC no room). EEXIST
    on open means "already there";
  * read a whole block (read_block), or one layer of it with pread
    (read_layer);
  * lookup_prefix: the longest present prefix of a chain, by os.stat;
  * block_xattrs: the user.ucm.* extended attributes (docs/xattrs.md);
  * the control plane (MNT/.ucm/lookup, prefetch, flush; docs/control.md):
    exists and prefix of up to 100k ids per request, prefetch into the
    memory tier, flush until durable. A Control object is one session:
    os.open(O_RDWR), os.write of a request line, os.read of its answer;
  * sparse-attention sidecars (docs/sparse.md) are ucmfs.sparse, which
    builds on this module (read_repr, topk, TopK sessions, write_repr;
    the package re-exports read_repr and topk);
  * the GPU data path (MNT/.ucm/gpu, docs/gpu.md): a GPU session registers
    engine memory (a CUDA IPC handle, or on a mount without a GPU a
    SimRegion, a shared-memory file this process maps) and loads blocks,
    or layer ranges of them, into it, or dumps blocks from it.

A tier directory has the same layout as the mount, so every read function
but the control plane also works on a tier directory (for example after
the daemon stopped). ``ucmcli demo MOUNTPOINT`` runs ucmfs.demo, which
shows it all once.
"""

import errno
import hashlib
import mmap
import os
import socket
import struct
import tempfile
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from .crc import crc32c

__all__ = [
    "BlockHeader", "Control", "ControlError", "DTYPES", "FLAG_CRC", "GPU", "HEADER_SIZE",
    "MAGIC", "MAX_IDS", "Part", "SEED_PREFIX", "SimRegion", "VERSION", "block_path",
    "block_xattrs", "chain", "chain_seed", "crc32c", "escape_model", "exists", "flush",
    "lookup_prefix", "make_header", "meta", "next_id", "prefetch", "prefix", "read_block",
    "read_layer", "test_payload", "write_block", "write_file",
]

HEADER_SIZE = 64
MAGIC = b"UCMB"
VERSION = 1
FLAG_CRC = 1
SEED_PREFIX = b"UCMHASHSEED"

#: dtype name -> (enum value, element size in bytes), SPEC section 4.
DTYPES: Dict[str, Tuple[int, int]] = {
    "float16": (0, 2),
    "bfloat16": (1, 2),
    "float32": (2, 4),
    "float8_e4m3fn": (3, 1),
    "float8_e5m2": (4, 1),
    "int8": (5, 1),
    "uint8": (6, 1),
}
_DTYPE_BY_VALUE = {v: (name, size) for name, (v, size) in DTYPES.items()}

# ---------------------------------------------------------------- hash chain


def meta(model: str, world_size: int, dtype: str, rank: int) -> str:
    """The chain's meta string "<model>:<world_size>:<dtype>:<rank>" (engine names)."""
    return "%s:%d:%s:%d" % (model, world_size, dtype, rank)


def chain_seed(meta_str: str) -> bytes:
    """parent_0 = MD5("UCMHASHSEED" || meta), meta as UTF-8."""
    return hashlib.md5(SEED_PREFIX + meta_str.encode("utf-8")).digest()


def next_id(parent: bytes, tokens: Sequence[int]) -> bytes:
    """id = MD5(parent || tokens as little-endian uint32 each)."""
    return hashlib.md5(parent + struct.pack("<%dI" % len(tokens), *tokens)).digest()


def chain(meta_str: str, block_size: int, tokens: Sequence[int]) -> List[bytes]:
    """The ids of every full block of tokens; a trailing partial block has none."""
    ids, parent = [], chain_seed(meta_str)
    for i in range(len(tokens) // block_size):
        parent = next_id(parent, tokens[i * block_size:(i + 1) * block_size])
        ids.append(parent)
    return ids


def escape_model(engine_name: str) -> str:
    """The model directory name: every "/" becomes "--"."""
    return engine_name.replace("/", "--")


def block_path(root: str, model: str, block_id: bytes, ext: str = "bin") -> str:
    """<root>/<model>/<hh>/<id>.<ext> for a mount or a tier directory."""
    h = block_id.hex()
    return os.path.join(root, model, h[:2], "%s.%s" % (h, ext))


# ---------------------------------------------------------------- UCMB header


class BlockHeader(NamedTuple):
    """The UCMB header. 0 heads/head_dim/payload_len mean "not stated"."""

    block_id: bytes
    num_layers: int
    block_size: int
    dtype: str
    num_kv_heads: int = 0
    head_dim: int = 0
    tensors_per_layer: int = 2
    payload_crc32c: int = 0
    flags: int = 0
    payload_len: int = 0

    _FMT = "<4sI16sIIIIIIIIQ"

    def pack(self) -> bytes:
        """The 64 header bytes."""
        return struct.pack(self._FMT, MAGIC, VERSION, self.block_id,
                           self.num_layers, self.block_size, DTYPES[self.dtype][0],
                           self.num_kv_heads, self.head_dim, self.tensors_per_layer,
                           self.payload_crc32c, self.flags, self.payload_len)

    @classmethod
    def unpack(cls, b: bytes) -> "BlockHeader":
        """Parse 64 bytes; raise ValueError on anything SPEC section 4 forbids."""
        if len(b) < HEADER_SIZE:
            raise ValueError("header needs 64 bytes, have %d" % len(b))
        (magic, version, bid, layers, bsize, dt, heads, hdim, tpl, crc, flags,
         plen) = struct.unpack(cls._FMT, b[:HEADER_SIZE])
        if magic != MAGIC or version != VERSION:
            raise ValueError("not a UCMB v1 header")
        if layers < 1 or bsize < 1 or dt not in _DTYPE_BY_VALUE or flags & ~FLAG_CRC:
            raise ValueError("bad header field")
        return cls(bid, layers, bsize, _DTYPE_BY_VALUE[dt][0], heads, hdim, tpl,
                   crc, flags, plen)

    def tensors(self) -> int:
        """Tensors per layer, with 0 read as 2 (K, V)."""
        return self.tensors_per_layer or 2

    def tensor_bytes(self) -> int:
        """Bytes of one tensor (needs heads and head_dim stated)."""
        return self.block_size * self.num_kv_heads * self.head_dim * DTYPES[self.dtype][1]

    def layer_range(self, layer: int, payload_len: Optional[int] = None) -> Tuple[int, int]:
        """(file offset, length) of one layer's tensors."""
        if self.num_kv_heads and self.head_dim:
            per_layer = self.tensors() * self.tensor_bytes()
        else:
            per_layer = (payload_len or self.payload_len) // self.num_layers
        return HEADER_SIZE + layer * per_layer, per_layer


def make_header(block_id: bytes, payload: bytes, num_layers: int, block_size: int,
                dtype: str, num_kv_heads: int = 0, head_dim: int = 0,
                tensors_per_layer: int = 2, with_crc: bool = True) -> BlockHeader:
    """A header for payload, with payload_len and (optionally) its CRC set."""
    return BlockHeader(block_id, num_layers, block_size, dtype, num_kv_heads, head_dim,
                       tensors_per_layer, crc32c(payload) if with_crc else 0,
                       FLAG_CRC if with_crc else 0, len(payload))


# ---------------------------------------------------------------- file I/O


def write_file(path: str, data: bytes, fsync: bool = False) -> bool:
    """Create path with data: True when published, False when already present.

    open(O_CREAT|O_EXCL|O_WRONLY), write, optional fsync, close. ucmfs gives
    its verdict at close() (or fsync()): an OSError with errno EINVAL
    (rejected), ENOSPC (no room) or another errno propagates to the caller.
    """
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o444)
    except FileExistsError:
        return False
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if fsync:
            os.fsync(fd)
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        raise
    os.close(fd)  # the verdict
    return True


def write_block(root: str, model: str, header: BlockHeader, payload: bytes,
                fsync: bool = False) -> bool:
    """Publish one block; see write_file for the verdict."""
    return write_file(block_path(root, model, header.block_id), header.pack() + payload, fsync)


def read_block(root: str, model: str, block_id: bytes) -> Tuple[BlockHeader, bytes]:
    """Read and check one block (header, id, length, CRC); ValueError if bad."""
    with open(block_path(root, model, block_id), "rb") as f:
        data = f.read()
    hdr = BlockHeader.unpack(data)
    payload = data[HEADER_SIZE:]
    if hdr.block_id != block_id:
        raise ValueError("header id %s != file name" % hdr.block_id.hex())
    if hdr.payload_len and hdr.payload_len != len(payload):
        raise ValueError("payload_len %d != %d" % (hdr.payload_len, len(payload)))
    if hdr.flags & FLAG_CRC and crc32c(payload) != hdr.payload_crc32c:
        raise ValueError("payload CRC mismatch")
    return hdr, payload


def read_layer(root: str, model: str, block_id: bytes, layer: int) -> bytes:
    """Read one layer's tensors (K then V) with two preads: header, then the layer."""
    fd = os.open(block_path(root, model, block_id), os.O_RDONLY)
    try:
        hdr = BlockHeader.unpack(os.pread(fd, HEADER_SIZE, 0))
        if not 0 <= layer < hdr.num_layers:
            raise ValueError("layer %d out of range" % layer)
        size = os.fstat(fd).st_size
        off, n = hdr.layer_range(layer, size - HEADER_SIZE)
        data = os.pread(fd, n, off)
        if len(data) != n:
            raise ValueError("short read: %d of %d bytes" % (len(data), n))
        return data
    finally:
        os.close(fd)


def lookup_prefix(root: str, model: str, ids: Sequence[bytes]) -> int:
    """How many leading ids of a chain are present (the engine's prefix match)."""
    for i, block_id in enumerate(ids):
        try:
            os.stat(block_path(root, model, block_id))
        except FileNotFoundError:
            return i
    return len(ids)


# ---------------------------------------------------------------- control plane

#: The most ids one control request may name (more: the functions below split).
MAX_IDS = 100_000


class ControlError(OSError):
    """An ``err <ERRNO> <message>`` answer; .errno is the errno number."""


class Control:
    """One session on a control file MNT/.ucm/<name>: request lines in, answer lines out.

    Use it as a context manager, or call close(). One session serves any
    number of requests, one at a time; open one per thread.
    """

    def __init__(self, mnt: str, name: str):
        self.fd = os.open(os.path.join(mnt, ".ucm", name), os.O_RDWR)

    def request(self, line: str) -> str:
        """Send one request line; return the answer after "ok" or raise ControlError."""
        view = memoryview((line + "\n").encode("ascii"))
        while view:
            view = view[os.write(self.fd, view):]
        chunks = []
        while not chunks or not chunks[-1].endswith(b"\n"):
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise OSError(errno.EPROTO, "control file gave no answer")
            chunks.append(chunk)
        answer = b"".join(chunks).decode("ascii").rstrip("\n")
        word, _, rest = answer.partition(" ")
        if word == "ok":
            return rest
        name, _, msg = rest.partition(" ")
        if word != "err" or not hasattr(errno, name):
            raise OSError(errno.EPROTO, "unexpected answer %r" % answer[:80])
        raise ControlError(getattr(errno, name), msg)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> "Control":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _batches(ids: Sequence[bytes]):
    for i in range(0, len(ids), MAX_IDS):
        yield " ".join(b.hex() for b in ids[i:i + MAX_IDS])


def exists(mnt: str, model: str, ids: Sequence[bytes]) -> List[bool]:
    """Whether each block is present (any tier), through MNT/.ucm/lookup."""
    out: List[bool] = []
    with Control(mnt, "lookup") as c:
        for batch in _batches(ids):
            _, bitmap = c.request("exists %s %s" % (model, batch)).split(" ")
            out.extend(ch == "1" for ch in bitmap)
    return out


def prefix(mnt: str, model: str, ids: Sequence[bytes]) -> int:
    """How many leading ids are present: the prefix match, through MNT/.ucm/lookup."""
    n = 0
    with Control(mnt, "lookup") as c:
        for i, batch in enumerate(_batches(ids)):
            got = int(c.request("prefix %s %s" % (model, batch)))
            n += got
            if got < min(MAX_IDS, len(ids) - i * MAX_IDS):
                break
    return n


def prefetch(mnt: str, model: str, ids: Sequence[bytes]) -> Tuple[int, int]:
    """Queue blocks for promotion into memory; returns (queued, missing)."""
    queued = missing = 0
    with Control(mnt, "prefetch") as c:
        for batch in _batches(ids):
            fields = dict(f.split("=") for f in c.request("%s %s" % (model, batch)).split())
            queued, missing = queued + int(fields["queued"]), missing + int(fields["missing"])
    return queued, missing


def flush(mnt: str, model: Optional[str] = None) -> None:
    """Return once every dirty block (of model, or of all) is durable."""
    with Control(mnt, "flush") as c:
        c.request("model %s" % model if model else "all")


# ---------------------------------------------------------------- GPU data path

#: What of a block a load copies: None the payload, (first, last) those
#: layers of the payload (both included), "file" the whole file.
Part = Union[None, Tuple[int, int], str]


class SimRegion:
    """Simulated device memory: a shared-memory file this process creates, sizes and maps.

    On a mount whose GPU device is "sim" (no CUDA driver), .ucm/gpu copies
    blocks into and out of this file; self.mem shows them at the offsets
    asked for, as GPU memory would show DMA. close() unmaps and deletes it.
    """

    def __init__(self, size: int, directory: str = "/dev/shm"):
        fd, self.path = tempfile.mkstemp(prefix="ucm-region-", dir=directory)  # mode 0600, ours
        try:
            os.ftruncate(fd, size)
            self.mem = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            os.unlink(self.path)
            raise
        os.close(fd)
        self.size = size

    def close(self) -> None:
        self.mem.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __enter__(self) -> "SimRegion":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _part(part: Part) -> str:
    if part is None:
        return ""
    if part == "file":
        return ":file"
    first, last = part  # type: ignore[misc]
    return ":%d-%d" % (first, last)


def _gpu_opts(device: Optional[int], uuid: Optional[str]) -> str:
    if uuid is not None:
        return " uuid=%s" % uuid
    if device is not None:
        return " device=%d" % device
    return ""


class GPU:
    """One session on MNT/.ucm/gpu (docs/control.md, section gpu).

    Regions registered here belong to this session: unregister() or
    close() releases them, and their numbers mean nothing to another
    session. Each load or dump request is all or nothing as the daemon
    checks it: an unknown id (ENOENT) or a range outside the region
    (EINVAL) fails it before a byte moves. Longer lists are split into
    requests of MAX_IDS items.
    """

    def __init__(self, mnt: str):
        self.mnt = mnt
        self.ctl = Control(mnt, "gpu")

    def register_sim(self, region: SimRegion, size: Optional[int] = None, offset: int = 0) -> int:
        """Register a SimRegion (or size bytes of it at offset); returns the region number."""
        size = region.size - offset if size is None else size
        return self._region("register sim %s %d offset=%d" % (region.path, size, offset))

    def register_cuda(self, handle: bytes, size: int, offset: int = 0, device: Optional[int] = None,
                      uuid: Optional[str] = None) -> int:
        """Register size bytes at offset of the allocation a CUDA IPC handle (64 bytes) names.

        uuid names the GPU the memory is on ("GPU-...", torch.cuda.get_device_properties(i).uuid):
        the same in every process; device (the daemon's ordinal) is for older daemons.
        """
        return self._region("register cuda %s %d offset=%d%s" % (handle.hex(), size, offset, _gpu_opts(device, uuid)))

    def pass_fd(self, fd: int, alloc: Optional[int] = None) -> int:
        """Pass a VMM allocation's POSIX fd (or a sim region's file) over MNT/.ucm/gpu.sock; returns its token."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.connect(os.path.join(self.mnt, ".ucm", "gpu.sock"))
            msg = b"register" if alloc is None else b"register %d" % alloc
            socket.send_fds(s, [msg], [fd])
            answer = s.recv(4096).decode("ascii", "replace").strip()
        if not answer.startswith("ok token="):
            raise OSError(errno.EINVAL, "gpu.sock: " + answer)
        return int(answer[len("ok token="):])

    def register_vmm(self, token: int, size: int, offset: int = 0, alloc: Optional[int] = None,
                     device: Optional[int] = None, uuid: Optional[str] = None) -> int:
        """Register size bytes at offset of the memory whose fd pass_fd gave token for."""
        line = "register vmm %d %d offset=%d" % (token, size, offset)
        if alloc is not None:
            line += " alloc=%d" % alloc
        return self._region(line + _gpu_opts(device, uuid))

    def _region(self, line: str) -> int:
        return int(self.ctl.request(line).partition("region=")[2])

    def load(self, region: Union[int, Tuple[Sequence[int], Sequence[int]]], model: str,
             items: Sequence[Tuple[bytes, int, Part]]) -> Tuple[int, int]:
        """Copy each (block_id, offset, part) into the region; returns (blocks, bytes).

        region may be (k_regions, v_regions), one K and one V region per layer:
        each layer's K and V halves then go to its regions at the item's offset.
        """
        if isinstance(region, int):
            target = str(region)
        else:
            target = "%s/%s" % (",".join(map(str, region[0])), ",".join(map(str, region[1])))
        loaded = nbytes = 0
        for i in range(0, len(items), MAX_IDS):
            words = ["%s:%d%s" % (bid.hex(), off, _part(part)) for bid, off, part in items[i:i + MAX_IDS]]
            fields = dict(f.split("=") for f in self.ctl.request(
                "load %s %s %s" % (target, model, " ".join(words))).split())
            loaded, nbytes = loaded + int(fields["loaded"]), nbytes + int(fields["bytes"])
        return loaded, nbytes

    def dump(self, region: int, model: str, items: Sequence[Tuple[bytes, int, int]]) -> Tuple[int, int]:
        """Publish each (block_id, offset, length): the complete block file lying there.

        Returns (dumped, existing): blocks published, and ids already stored.
        """
        dumped = existing = 0
        for i in range(0, len(items), MAX_IDS):
            words = ["%s:%d:%d" % (bid.hex(), off, n) for bid, off, n in items[i:i + MAX_IDS]]
            fields = dict(f.split("=") for f in self.ctl.request(
                "dump %d %s %s" % (region, model, " ".join(words))).split())
            dumped, existing = dumped + int(fields["dumped"]), existing + int(fields["existing"])
        return dumped, existing

    def unregister(self, region: int) -> None:
        self.ctl.request("unregister %d" % region)

    def close(self) -> None:
        """End the session; the daemon unregisters its regions."""
        self.ctl.close()

    def __enter__(self) -> "GPU":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def block_xattrs(path: str) -> Dict[str, str]:
    """Every user.ucm.* attribute of a block or model directory, by name."""
    out = {}
    for name in os.listxattr(path):
        if name.startswith("user.ucm."):
            try:
                out[name] = os.getxattr(path, name).decode("ascii")
            except OSError as e:
                if e.errno != errno.ENODATA:
                    raise
    return out


def test_payload(block_id: bytes, seed: int, size: int) -> bytes:
    """Deterministic test bytes for a block (the same id and seed give the same bytes)."""
    return hashlib.shake_128(block_id + struct.pack("<Q", seed)).digest(size)
