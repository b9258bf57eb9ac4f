"""ucmcli: a command line over ucmfs.client, for shells and for the integration tests.

Every command takes a ROOT, which is a ucmfs mount point or a tier
directory (they share the <model>/<hh>/<id>.bin layout). Exit status:
0 success, 1 a block failed its checks, 2 usage, 3 an OS error; an OS error
is reported on stderr as ``ucmcli: <what>: <ERRNO_NAME>: <message>`` so a
caller can tell EINVAL from ENOSPC without parsing prose.

    ucmcli hash --meta 'org/M:1:bfloat16:0' --block-size 16 --range 0:64
               [--salt S --lora L --mm HASH@OFF... --embeds H... --group GID[:B]...]
               [--scheme ucm --meta 'org/M:TP:torch.bfloat16:RANK' [--mla]]
                                               # one id a line; "<gid> <id>" with --group
    ucmcli put MNT MODEL ID... [--layers 4 --block-size 16 --dtype float16
                                   --heads 2 --head-dim 64 --seed 0 --fsync --no-crc]
    ucmcli put-raw PATH FILE [--fsync]      # arbitrary bytes: the close verdict
    ucmcli verify ROOT MODEL ID... [--seed 0]
    ucmcli layer ROOT MODEL ID LAYER
    ucmcli lookup ROOT MODEL ID...          # prefix by stat (mount or tier directory)
    ucmcli exists MNT MODEL ID...           # "<present> <bitmap>" through MNT/.ucm/lookup
    ucmcli prefix MNT MODEL ID...           # prefix length through MNT/.ucm/lookup
    ucmcli prefetch MNT MODEL ID...         # "queued=N missing=M"
    ucmcli flush MNT [MODEL]                # "flushed" once durable
    ucmcli ctl MNT FILE REQUEST             # one raw request line, its raw answer
    ucmcli gpu --size N [--init FILE] [--save FILE] MNT REQUEST...
                                               # a sim region of N bytes, registered; each raw
                                               # request (%r = its number), each raw answer
    ucmcli repr ROOT MODEL ID               # the sidecar's header (derived on first read)
    ucmcli topk MNT MODEL ID... --heads H --dim D (--query V,V,... | --query-file FILE)
                   [--kind mean] [--layer 0|all] [--k 8]
                                               # "<id> <score>" per hit, best first; "missing <id>"
    ucmcli sparse-check MNT MODEL [--blocks 12 --layers 2 --block-size 4 --heads 2
                                      --head-dim 8 --k 5 --seed 1]
                                               # float32 blocks in, derived means and top-k
                                               # checked against Python's own computation
    ucmcli xattrs PATH
    ucmcli crc FILE
    ucmcli demo MNT                            # what an engine does, once (ucmfs.demo)

ID arguments may also come one per line from a file: --ids-from FILE.
"""

import argparse
import errno
import hashlib
import os
import random
import struct
import sys
from typing import List, Optional

from . import client as uc
from . import demo as _demo
from . import hashkeys as hk
from . import sparse as us


class BlockError(Exception):
    """A block that does not hold what it should (exit status 1)."""


def _id(s: str) -> bytes:
    b = bytes.fromhex(s)
    if len(b) != 16:
        raise argparse.ArgumentTypeError("an id is 32 hex characters")
    return b


def cmd_hash(a: argparse.Namespace) -> None:
    tokens = list(a.tokens)
    if a.range:
        lo, hi = (int(x) for x in a.range.split(":"))
        tokens += range(lo, hi)
    keys = hk.Keys(salt=a.salt, lora=a.lora, mm=tuple(hk.parse_mm(m) for m in a.mm),
                   embeds=tuple(a.embeds))
    if a.scheme == "ucm":
        if keys != hk.Keys() or a.group:
            raise SystemExit("ucmcli: UCM's ids take no extra keys or groups")
        model, tp, dtype, rank = a.meta.rsplit(":", 3)
        for block_id in hk.ucm_chain(model, int(tp), dtype, int(rank), a.block_size, tokens, a.mla):
            print(block_id.hex())
        return
    if not a.group:
        for block_id in hk.chain_keys(a.meta, a.block_size, tokens, keys):
            print(block_id.hex())
        return
    for g in a.group:
        gid, _, bs = g.partition(":")
        ids = hk.chain_keys(a.meta, int(bs) if bs else a.block_size, tokens, keys._replace(group=int(gid)))
        for block_id in ids:
            print(gid, block_id.hex())


def _payload_size(a: argparse.Namespace) -> int:
    return a.layers * a.tensors * a.block_size * a.heads * a.head_dim * uc.DTYPES[a.dtype][1]


def cmd_put(a: argparse.Namespace) -> None:
    for block_id in _some_ids(a):
        what = "put %s" % block_id.hex()
        payload = uc.test_payload(block_id, a.seed, _payload_size(a))
        hdr = uc.make_header(block_id, payload, a.layers, a.block_size, a.dtype,
                             a.heads, a.head_dim, a.tensors, not a.no_crc)
        try:
            new = uc.write_block(a.root, a.model, hdr, payload, a.fsync)
        except OSError as e:
            raise _OSFailure(what, e) from e
        print("%s %s" % ("published" if new else "exists", block_id.hex()))


def cmd_put_raw(a: argparse.Namespace) -> None:
    with open(a.file, "rb") as f:
        data = f.read()
    try:
        new = uc.write_file(a.path, data, a.fsync)
    except OSError as e:
        raise _OSFailure("put-raw %s" % a.path, e) from e
    print("published" if new else "exists")


def cmd_verify(a: argparse.Namespace) -> None:
    for block_id in _some_ids(a):
        try:
            hdr, payload = uc.read_block(a.root, a.model, block_id)
        except OSError as e:
            raise _OSFailure("verify %s" % block_id.hex(), e) from e
        except ValueError as e:
            raise BlockError("%s: %s" % (block_id.hex(), e)) from e
        if payload != uc.test_payload(block_id, a.seed, len(payload)):
            raise BlockError("%s: payload differs from seed %d" % (block_id.hex(), a.seed))
        print("ok %s %d" % (block_id.hex(), uc.HEADER_SIZE + len(payload)))


def cmd_layer(a: argparse.Namespace) -> None:
    try:
        data = uc.read_layer(a.root, a.model, a.id, a.layer)
    except OSError as e:
        raise _OSFailure("layer %s" % a.id.hex(), e) from e
    except ValueError as e:
        raise BlockError(str(e)) from e
    print("%d %08x" % (len(data), uc.crc32c(data)))


def cmd_lookup(a: argparse.Namespace) -> None:
    print(uc.lookup_prefix(a.root, a.model, _ids(a)))


def _ids(a: argparse.Namespace) -> List[bytes]:
    """The ids of the command line, then those of --ids-from."""
    ids = list(a.ids)
    if a.ids_from:
        with open(a.ids_from) as f:
            ids += [_id(line.strip()) for line in f if line.strip()]
    return ids


def _some_ids(a: argparse.Namespace) -> List[bytes]:
    """_ids, at least one (usage error, exit 2, without)."""
    ids = _ids(a)
    if not ids:
        print("ucmcli: no ids: give them as arguments or with --ids-from FILE", file=sys.stderr)
        raise SystemExit(2)
    return ids


def _control(what: str, fn, *args):
    try:
        return fn(*args)
    except OSError as e:
        raise _OSFailure(what, e) from e


def cmd_exists(a: argparse.Namespace) -> None:
    present = _control("exists", uc.exists, a.root, a.model, _ids(a))
    print("%d %s" % (sum(present), "".join("1" if p else "0" for p in present)))


def cmd_prefix(a: argparse.Namespace) -> None:
    print(_control("prefix", uc.prefix, a.root, a.model, _ids(a)))


def cmd_prefetch(a: argparse.Namespace) -> None:
    print("queued=%d missing=%d" % _control("prefetch", uc.prefetch, a.root, a.model, _ids(a)))


def cmd_flush(a: argparse.Namespace) -> None:
    _control("flush", uc.flush, a.root, a.model)
    print("flushed")


def cmd_ctl(a: argparse.Namespace) -> None:
    """One raw request: prints the answer line as the daemon wrote it."""
    try:
        with uc.Control(a.root, a.file) as c:
            print(("ok " + c.request(a.request)).rstrip())
    except uc.ControlError as e:
        print("err %s %s" % (errno.errorcode.get(e.errno, "E?"), e.strerror))
    except OSError as e:
        raise _OSFailure("ctl %s" % a.file, e) from e


def cmd_gpu(a: argparse.Namespace) -> None:
    """A session on MNT/.ucm/gpu with one sim region, created by this process.

    The region starts as the bytes of --init (zeros where it is shorter),
    is registered (its number replaces %r in the requests), takes the
    requests in order (their raw answers are printed, err lines too) and
    is written to --save at the end.
    """
    try:
        with uc.SimRegion(a.size) as region, uc.GPU(a.root) as gpu:
            if a.init:
                with open(a.init, "rb") as f:
                    init = f.read(a.size)
                region.mem[:len(init)] = init
            if a.pass_fd:  # the region's descriptor over .ucm/gpu.sock, registered by token
                fd = os.open(region.path, os.O_RDWR)
                try:
                    token = gpu.pass_fd(fd, region.size)
                finally:
                    os.close(fd)
                r = gpu.register_vmm(token, region.size)
            else:
                r = gpu.register_sim(region)
            for req in a.requests:
                try:
                    print(("ok " + gpu.ctl.request(req.replace("%r", str(r)))).rstrip())
                except uc.ControlError as e:
                    print("err %s %s" % (errno.errorcode.get(e.errno, "E?"), e.strerror))
            if a.save:
                with open(a.save, "wb") as f:
                    f.write(region.mem[:])
    except uc.ControlError as e:
        raise _OSFailure("gpu", e) from e
    except OSError as e:
        raise _OSFailure("gpu", e) from e


def cmd_repr(a: argparse.Namespace) -> None:
    try:
        r = us.read_repr(a.root, a.model, a.id)
    except OSError as e:
        raise _OSFailure("repr %s" % a.id.hex(), e) from e
    except ValueError as e:
        raise BlockError("%s: %s" % (a.id.hex(), e)) from e
    h = r.header
    print("kind=%s dtype=%s layers=%d heads=%d rows=%d dim=%d param=%d crc32c=%08x" % (
        h.kind, h.dtype, h.num_layers, h.num_kv_heads, h.rows, h.dim, h.param, h.payload_crc32c))


def cmd_topk(a: argparse.Namespace) -> None:
    if a.query_file:
        with open(a.query_file, "rb") as f:
            raw = f.read()
        query = list(struct.unpack("<%df" % (len(raw) // 4), raw[:len(raw) // 4 * 4]))
    else:
        query = [float(v) for v in a.query.split(",")]
    hits, missing = _control("topk", us.topk, a.root, a.model, query, _ids(a), a.k,
                             a.heads, a.dim, a.kind, a.layer)
    for bid, score in hits:
        print("%s %s" % (bid.hex(), score))
    for bid in missing:
        print("missing %s" % bid.hex())


def _f32(x: float) -> float:
    """x rounded to float32."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _check_ranking(what: str, hits, scores, k: int) -> None:
    """hits (id, score) against Python's scores by id: the k best, best first, up to rounding."""
    ranked = sorted(scores, key=lambda bid: (-scores[bid], bid))
    if len(hits) != min(k, len(ranked)) or len({bid for bid, _ in hits}) != len(hits):
        raise BlockError("%s: %d hits, want %d distinct" % (what, len(hits), min(k, len(ranked))))
    for i, (bid, score) in enumerate(hits):
        want = scores[ranked[i]]
        tol = 1e-4 * (1 + abs(want))
        if bid not in scores or abs(scores[bid] - want) > tol or abs(score - scores[bid]) > tol:
            raise BlockError("%s: hit %d is %s (score %r, Python's %r), want %s (%r)" % (
                what, i, bid.hex(), score, scores.get(bid), ranked[i].hex(), want))


def cmd_sparse_check(a: argparse.Namespace) -> None:
    """Derived sidecars and top-k, checked by Python alone.

    Writes --blocks float32 blocks of random normal keys and values (and
    one float8 block, which allows no derivation), reads each block's
    derived sidecar and compares it with the mean of the block's K vectors
    computed here, then ranks the blocks (with the float8 one and an
    absent id) through MNT/.ucm/topk, by mean on layer 0 and by max on
    all layers, and compares with a brute-force ranking computed here.
    """
    rng = random.Random(a.seed)
    L, B, H, D = a.layers, a.block_size, a.heads, a.head_dim
    keys = {}  # id -> K values [layer][token][head][dim] flattened
    for i in range(a.blocks):
        bid = hashlib.md5(("sparse-check/%d/%d" % (a.seed, i)).encode()).digest()
        vals = [_f32(rng.gauss(0, 1)) for _ in range(L * 2 * B * H * D)]
        payload = us.pack_floats(vals)
        try:
            uc.write_block(a.root, a.model, uc.make_header(bid, payload, L, B, "float32", H, D), payload)
        except OSError as e:
            raise _OSFailure("put %s" % bid.hex(), e) from e
        per = B * H * D
        keys[bid] = [vals[(l * 2) * per + j] for l in range(L) for j in range(per)]
    fp8 = hashlib.md5(("sparse-check/%d/fp8" % a.seed).encode()).digest()
    fp8_payload = bytes(rng.randrange(256) for _ in range(L * 2 * B * H * D))
    uc.write_block(a.root, a.model, uc.make_header(fp8, fp8_payload, L, B, "float8_e4m3fn", H, D), fp8_payload)
    absent = hashlib.md5(("sparse-check/%d/absent" % a.seed).encode()).digest()

    def k_at(bid, l, t, h, d):
        return keys[bid][((l * B + t) * H + h) * D + d]

    means = {bid: [[[sum(k_at(bid, l, t, h, d) for t in range(B)) / B for d in range(D)]
                    for h in range(H)] for l in range(L)] for bid in keys}
    maxes = {bid: [[[max(k_at(bid, l, t, h, d) for t in range(B)) for d in range(D)]
                    for h in range(H)] for l in range(L)] for bid in keys}
    for bid in keys:
        try:
            r = us.read_repr(a.root, a.model, bid)
        except (OSError, ValueError) as e:
            raise BlockError("sidecar of %s: %s" % (bid.hex(), e)) from e
        h = r.header
        if (h.kind, h.dtype, h.num_layers, h.num_kv_heads, h.rows, h.dim) != ("mean", "float32", L, H, 1, D):
            raise BlockError("sidecar of %s: header %r" % (bid.hex(), h))
        for l in range(L):
            for hd in range(H):
                for d, got in enumerate(r.vector(l, hd)):
                    want = means[bid][l][hd][d]
                    if abs(got - want) > 1e-6 * max(1.0, abs(want)):
                        raise BlockError("sidecar of %s: layer %d head %d dim %d is %r, the mean is %r" % (
                            bid.hex(), l, hd, d, got, want))
    print("derived %d sidecars: each the mean of its block's keys" % len(keys))
    try:
        us.read_repr(a.root, a.model, fp8)
        raise BlockError("the float8 block has a sidecar")
    except FileNotFoundError:
        pass

    ids = list(keys) + [fp8, absent]
    rng.shuffle(ids)
    want_missing = [bid for bid in ids if bid not in keys]
    q0 = [_f32(rng.gauss(0, 1)) for _ in range(H * D)]
    qall = [_f32(rng.gauss(0, 1)) for _ in range(L * H * D)]
    mean_scores = {bid: sum(q0[hd * D + d] * means[bid][0][hd][d] for hd in range(H) for d in range(D))
                   for bid in keys}
    max_scores = {bid: sum(qall[(l * H + hd) * D + d] * maxes[bid][l][hd][d]
                           for l in range(L) for hd in range(H) for d in range(D)) for bid in keys}
    with us.TopK(a.root) as session:
        for what, kind, layer, query, scores in (("mean, layer 0", "mean", 0, q0, mean_scores),
                                                  ("max, all layers", "max", "all", qall, max_scores)):
            for attempt in range(2):  # the second request reuses the session's index
                try:
                    hits, missing = session.query(a.model, query, ids, a.k, H, D, kind, layer)
                except OSError as e:
                    raise _OSFailure("topk", e) from e
                if missing != want_missing:
                    raise BlockError("%s: missing %s, want %s" % (
                        what, [b.hex() for b in missing], [b.hex() for b in want_missing]))
                _check_ranking(what, hits, scores, a.k)
            print("topk %s: %d hits as Python ranks them, %d missing" % (what, len(hits), len(missing)))


def cmd_xattrs(a: argparse.Namespace) -> None:
    try:
        attrs = uc.block_xattrs(a.path)
    except OSError as e:
        raise _OSFailure("xattrs %s" % a.path, e) from e
    for name, value in sorted(attrs.items()):
        print("%s=%s" % (name, value))


def cmd_crc(a: argparse.Namespace) -> None:
    with open(a.file, "rb") as f:
        print("%08x" % uc.crc32c(f.read()))


class _OSFailure(Exception):
    def __init__(self, what: str, err: OSError):
        super().__init__(what)
        self.what, self.err = what, err


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ucmcli", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("hash", help="block ids of a token list")
    h.add_argument("--meta", required=True)
    h.add_argument("--block-size", type=int, required=True)
    h.add_argument("--range", help="append tokens LO..HI-1 (LO:HI)")
    h.add_argument("--salt", default="", help="cache salt (block 0)")
    h.add_argument("--lora", default="", help="LoRA adapter name (every block)")
    h.add_argument("--mm", action="append", default=[], help="multimodal input HASH@OFFSET")
    h.add_argument("--embeds", action="append", default=[], help="prompt-embeddings hash of the next block")
    h.add_argument("--group", action="append", default=[], help="KV-cache group GID[:BLOCK]")
    h.add_argument("--scheme", choices=("ucmfs", "ucm"), default="ucmfs")
    h.add_argument("--mla", action="store_true", help="scheme ucm: ranks share rank 0's ids")
    h.add_argument("tokens", nargs="*", type=int)
    h.set_defaults(fn=cmd_hash)
    put = sub.add_parser("put", help="write test blocks")
    put.add_argument("root")
    put.add_argument("model")
    put.add_argument("ids", nargs="*", type=_id)
    put.add_argument("--ids-from", help="a file of ids, one per line")
    for name, default in (("layers", 4), ("block-size", 16), ("heads", 2),
                          ("head-dim", 64), ("tensors", 2), ("seed", 0)):
        put.add_argument("--" + name, type=int, default=default)
    put.add_argument("--dtype", default="float16", choices=sorted(uc.DTYPES))
    put.add_argument("--fsync", action="store_true")
    put.add_argument("--no-crc", action="store_true")
    put.set_defaults(fn=cmd_put)
    raw = sub.add_parser("put-raw", help="write FILE's bytes to PATH")
    raw.add_argument("path")
    raw.add_argument("file")
    raw.add_argument("--fsync", action="store_true")
    raw.set_defaults(fn=cmd_put_raw)
    ver = sub.add_parser("verify", help="check blocks written by put")
    ver.add_argument("root")
    ver.add_argument("model")
    ver.add_argument("ids", nargs="*", type=_id)
    ver.add_argument("--ids-from", help="a file of ids, one per line")
    ver.add_argument("--seed", type=int, default=0)
    ver.set_defaults(fn=cmd_verify)
    lay = sub.add_parser("layer", help="pread one layer")
    lay.add_argument("root")
    lay.add_argument("model")
    lay.add_argument("id", type=_id)
    lay.add_argument("layer", type=int)
    lay.set_defaults(fn=cmd_layer)
    lk = sub.add_parser("lookup", help="longest present prefix")
    lk.add_argument("root")
    lk.add_argument("model")
    lk.add_argument("ids", nargs="*", type=_id)
    lk.add_argument("--ids-from", help="a file of ids, one per line")
    lk.set_defaults(fn=cmd_lookup)
    for name, fn, helptext in (("exists", cmd_exists, "batch existence via .ucm/lookup"),
                               ("prefix", cmd_prefix, "prefix match via .ucm/lookup"),
                               ("prefetch", cmd_prefetch, "promote into memory via .ucm/prefetch")):
        c = sub.add_parser(name, help=helptext)
        c.add_argument("root")
        c.add_argument("model")
        c.add_argument("ids", nargs="*", type=_id)
        c.add_argument("--ids-from", help="a file of ids, one per line")
        c.set_defaults(fn=fn)
    fl = sub.add_parser("flush", help="make blocks durable via .ucm/flush")
    fl.add_argument("root")
    fl.add_argument("model", nargs="?")
    fl.set_defaults(fn=cmd_flush)
    ctl = sub.add_parser("ctl", help="one raw control request")
    ctl.add_argument("root")
    ctl.add_argument("file", choices=["lookup", "prefetch", "flush", "topk"])
    ctl.add_argument("request")
    ctl.set_defaults(fn=cmd_ctl)
    gp = sub.add_parser("gpu", help="raw .ucm/gpu requests on a sim region of this process")
    gp.add_argument("root")
    gp.add_argument("--size", type=int, required=True, help="region bytes")
    gp.add_argument("--init", help="a file whose bytes the region starts with")
    gp.add_argument("--save", help="write the region's bytes here at the end")
    gp.add_argument("--pass-fd", action="store_true",
                    help="register the region by passing its descriptor over MNT/.ucm/gpu.sock (register vmm)")
    gp.add_argument("requests", nargs="*")
    gp.set_defaults(fn=cmd_gpu)
    rp = sub.add_parser("repr", help="a block's sidecar header")
    rp.add_argument("root")
    rp.add_argument("model")
    rp.add_argument("id", type=_id)
    rp.set_defaults(fn=cmd_repr)
    tk = sub.add_parser("topk", help="rank blocks via .ucm/topk")
    tk.add_argument("root")
    tk.add_argument("model")
    tk.add_argument("ids", nargs="*", type=_id)
    tk.add_argument("--ids-from", help="a file of ids, one per line")
    tk.add_argument("--heads", type=int, required=True)
    tk.add_argument("--dim", type=int, required=True)
    tk.add_argument("--kind", default="mean")
    tk.add_argument("--layer", default="0")
    tk.add_argument("--k", type=int, default=8)
    qg = tk.add_mutually_exclusive_group(required=True)
    qg.add_argument("--query", help="comma-separated float values [layers][heads][dim]")
    qg.add_argument("--query-file", help="a file of float32 little-endian values")
    tk.set_defaults(fn=cmd_topk)
    sc = sub.add_parser("sparse-check", help="check derived sidecars and top-k against Python")
    sc.add_argument("root")
    sc.add_argument("model")
    for name, default in (("blocks", 12), ("layers", 2), ("block-size", 4), ("heads", 2),
                          ("head-dim", 8), ("k", 5), ("seed", 1)):
        sc.add_argument("--" + name, type=int, default=default)
    sc.set_defaults(fn=cmd_sparse_check)
    xa = sub.add_parser("xattrs", help="user.ucm.* attributes")
    xa.add_argument("path")
    xa.set_defaults(fn=cmd_xattrs)
    crc = sub.add_parser("crc", help="CRC-32C of a file")
    crc.add_argument("file")
    crc.set_defaults(fn=cmd_crc)
    dm = sub.add_parser("demo", help="what an engine does with a mount, once")
    dm.add_argument("mnt")
    dm.set_defaults(fn=lambda a: _demo.demo(a.mnt))
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Run one command; returns the exit status."""
    p = _parser()
    a, rest = p.parse_known_args(argv)
    if rest:
        # Ids after options (put MNT MODEL --seed 3 ID...): argparse leaves
        # them over where the ids may also come from --ids-from.
        if not hasattr(a, "ids") or any(r.startswith("-") for r in rest):
            p.error("unrecognized arguments: %s" % " ".join(rest))
        try:
            a.ids = list(a.ids) + [_id(r) for r in rest]
        except (ValueError, argparse.ArgumentTypeError) as e:
            p.error("id: %s" % e)
    try:
        a.fn(a)
    except _OSFailure as f:
        name = errno.errorcode.get(f.err.errno or 0, "E?")
        # The daemon's own message when it gave one (a control file's
        # "err ENOENT model x does not exist"), else the errno's.
        print("ucmcli: %s: %s: %s" % (f.what, name, f.err.strerror or os.strerror(f.err.errno or 0)),
              file=sys.stderr)
        return 3
    except BlockError as e:
        print("ucmcli: bad block: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
