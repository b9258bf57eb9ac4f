"""ucmfs.demo: what an engine does with a ucmfs mount, once.

Hash a token sequence into a chain of block ids, store the first blocks,
find the longest present prefix (by stat and through .ucm/lookup),
prefetch, flush, read one layer, read a derived sparse-attention sidecar,
rank blocks with .ucm/topk, and on a mount with .ucm/gpu load and dump
through a simulated GPU region. Run it with ``ucmcli demo MOUNTPOINT`` or
``python3 -m ucmfs demo MOUNTPOINT``; read it as the example to copy.
"""

import os

from .client import (GPU, SimRegion, block_path, block_xattrs, chain, crc32c, escape_model, exists, flush, lookup_prefix, make_header, meta, prefetch, prefix, read_layer, test_payload, write_block)
from .sparse import read_repr, topk


def demo(mnt: str, model_name: str = "demo-org/Demo-1B") -> None:
    """What an engine does with ucmfs, once: hash, store, match, load a layer.

    The blocks go to the model model_name (its directory is the name
    escaped: demo-org--Demo-1B). A path that is not a ucmfs mount (no
    .ucm/stats: a mistyped mount point) is refused before anything is
    written there.
    """
    if not os.path.isfile(os.path.join(mnt, ".ucm", "stats")):
        raise SystemExit("ucmcli demo: %s is not a ucmfs mount (no .ucm/stats there); nothing was written" % mnt)
    dtype, block_size = "bfloat16", 16
    model = escape_model(model_name)
    os.makedirs(os.path.join(mnt, model), exist_ok=True)  # mkdir creates a namespace
    tokens = list(range(1000, 1000 + 4 * block_size + 5))  # 4 full blocks + 5 tokens
    ids = chain(meta(model_name, 1, dtype, 0), block_size, tokens)
    layers, heads, head_dim = 2, 2, 8
    for i, block_id in enumerate(ids[:3]):  # store the first 3 blocks only
        payload = test_payload(block_id, 0, layers * 2 * block_size * heads * head_dim * 2)
        hdr = make_header(block_id, payload, layers, block_size, dtype, heads, head_dim)
        new = write_block(mnt, model, hdr, payload, fsync=(i == 0))
        print("block %d %s: %s" % (i, block_id.hex(), "published" if new else "already present"))
    print("longest present prefix: %d of %d blocks" % (lookup_prefix(mnt, model, ids), len(ids)))
    print("the same through .ucm/lookup: %d; present: %s" % (
        prefix(mnt, model, ids), "".join("1" if p else "0" for p in exists(mnt, model, ids))))
    print("prefetch: queued %d, missing %d" % prefetch(mnt, model, ids))
    flush(mnt, model)
    print("flushed: every block of %s is durable" % model)
    layer1 = read_layer(mnt, model, ids[0], 1)
    print("layer 1 of block 0: %d bytes, crc32c %08x" % (len(layer1), crc32c(layer1)))
    rep = read_repr(mnt, model, ids[0])  # derived from the block's keys at this first read
    h = rep.header
    print("sidecar of block 0: %s, %d layers x %d heads x %d rows x %d %s values" % (
        h.kind, h.num_layers, h.num_kv_heads, h.rows, h.dim, h.dtype))
    hits, missing = topk(mnt, model, [1.0] * (heads * head_dim), ids, 2, heads, head_dim)
    print("top 2 of %d blocks for a query of ones on layer 0: %s; missing %d" % (
        len(ids), " ".join(bid.hex()[:8] for bid, _ in hits), len(missing)))
    if os.path.exists(os.path.join(mnt, ".ucm", "gpu")):
        payload = test_payload(ids[3], 0, layers * 2 * block_size * heads * head_dim * 2)
        block3 = make_header(ids[3], payload, layers, block_size, dtype, heads, head_dim).pack() + payload
        with SimRegion(2 * 4096) as region, GPU(mnt) as gpu:
            r = gpu.register_sim(region)
            gpu.load(r, model, [(ids[0], 4096, (1, 1))])
            same = region.mem[4096:4096 + len(layer1)] == layer1
            print("layer 1 of block 0 loaded into a sim region: %s" % ("same bytes" if same else "DIFFERENT"))
            region.mem[0:len(block3)] = block3  # the engine's own memory
            dumped, existing = gpu.dump(r, model, [(ids[3], 0, len(block3))])
            print("block 3 dumped from the region: %d published, %d already there" % (dumped, existing))
    for name, value in sorted(block_xattrs(block_path(mnt, model, ids[0])).items()):
        print("  %s=%s" % (name, value))
