#!/usr/bin/env python3
"""ucmcli: a command line over ucmclient, for shells and for the integration tests.

Every command takes a ROOT, which is a ucmfs mount point or a tier
directory (they share the <model>/<hh>/<id>.bin layout). Exit status:
0 success, 1 a block failed its checks, 2 usage, 3 an OS error; an OS error
is reported on stderr as ``ucmcli: <what>: <ERRNO_NAME>: <message>`` so a
caller can tell EINVAL from ENOSPC without parsing prose.

    ucmcli.py hash --meta 'org/M:1:bfloat16:0' --block-size 16 --range 0:64
    ucmcli.py put MNT MODEL ID... [--layers 4 --block-size 16 --dtype float16
                                   --heads 2 --head-dim 64 --seed 0 --fsync --no-crc]
    ucmcli.py put-raw PATH FILE [--fsync]      # arbitrary bytes: the close verdict
    ucmcli.py verify ROOT MODEL ID... [--seed 0]
    ucmcli.py layer ROOT MODEL ID LAYER
    ucmcli.py lookup ROOT MODEL ID...          # prefix by stat (mount or tier directory)
    ucmcli.py exists MNT MODEL ID...           # "<present> <bitmap>" through MNT/.ucm/lookup
    ucmcli.py prefix MNT MODEL ID...           # prefix length through MNT/.ucm/lookup
    ucmcli.py prefetch MNT MODEL ID...         # "queued=N missing=M"
    ucmcli.py flush MNT [MODEL]                # "flushed" once durable
    ucmcli.py ctl MNT FILE REQUEST             # one raw request line, its raw answer
    ucmcli.py gpu --size N [--init FILE] [--save FILE] MNT REQUEST...
                                               # a sim region of N bytes, registered; each raw
                                               # request (%r = its number), each raw answer
    ucmcli.py xattrs PATH
    ucmcli.py crc FILE

ID arguments may also come one per line from a file: --ids-from FILE.
"""

import argparse
import errno
import os
import sys
from typing import List, Optional

import ucmclient as uc


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
    for block_id in uc.chain(a.meta, a.block_size, tokens):
        print(block_id.hex())


def _payload_size(a: argparse.Namespace) -> int:
    return a.layers * a.tensors * a.block_size * a.heads * a.head_dim * uc.DTYPES[a.dtype][1]


def cmd_put(a: argparse.Namespace) -> None:
    for block_id in a.ids:
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
    for block_id in a.ids:
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
    print(uc.lookup_prefix(a.root, a.model, a.ids))


def _ids(a: argparse.Namespace) -> List[bytes]:
    ids = list(a.ids)
    if a.ids_from:
        with open(a.ids_from) as f:
            ids += [_id(line.strip()) for line in f if line.strip()]
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
    p = argparse.ArgumentParser(prog="ucmcli.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("hash", help="block ids of a token list")
    h.add_argument("--meta", required=True)
    h.add_argument("--block-size", type=int, required=True)
    h.add_argument("--range", help="append tokens LO..HI-1 (LO:HI)")
    h.add_argument("tokens", nargs="*", type=int)
    h.set_defaults(fn=cmd_hash)
    put = sub.add_parser("put", help="write test blocks")
    put.add_argument("root")
    put.add_argument("model")
    put.add_argument("ids", nargs="+", type=_id)
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
    ver.add_argument("ids", nargs="+", type=_id)
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
    ctl.add_argument("file", choices=["lookup", "prefetch", "flush"])
    ctl.add_argument("request")
    ctl.set_defaults(fn=cmd_ctl)
    gp = sub.add_parser("gpu", help="raw .ucm/gpu requests on a sim region of this process")
    gp.add_argument("root")
    gp.add_argument("--size", type=int, required=True, help="region bytes")
    gp.add_argument("--init", help="a file whose bytes the region starts with")
    gp.add_argument("--save", help="write the region's bytes here at the end")
    gp.add_argument("requests", nargs="*")
    gp.set_defaults(fn=cmd_gpu)
    xa = sub.add_parser("xattrs", help="user.ucm.* attributes")
    xa.add_argument("path")
    xa.set_defaults(fn=cmd_xattrs)
    crc = sub.add_parser("crc", help="CRC-32C of a file")
    crc.add_argument("file")
    crc.set_defaults(fn=cmd_crc)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Run one command; returns the exit status."""
    a = _parser().parse_args(argv)
    try:
        a.fn(a)
    except _OSFailure as f:
        name = errno.errorcode.get(f.err.errno or 0, "E?")
        print("ucmcli: %s: %s: %s" % (f.what, name, os.strerror(f.err.errno or 0)),
              file=sys.stderr)
        return 3
    except BlockError as e:
        print("ucmcli: bad block: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
