#!/usr/bin/env python3
"""UCM's block ids, computed as UCM's vLLM connector (RequestHasher) does,
with Python's own pickle. Reads one JSON object a line from stdin,
{"model", "tp", "dtype", "rank", "mla", "block", "tokens"}, and prints the
seed and the ids in hex, space-separated. The Go tests of package format
(ucm_test.go) run it when python3 is present."""
import hashlib
import json
import pickle
import sys


def digest(meta: bytes, value) -> bytes:
    data = value if isinstance(value, bytes) else pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.md5(meta + data).digest()


for line in sys.stdin:
    c = json.loads(line)
    meta0 = f"{c['model']}:{c['tp']}:{c['dtype']}:0".encode()
    meta = f"{c['model']}:{c['tp']}:{c['dtype']}:{c['rank']}".encode()
    seed = parent = digest(meta0, "UCM_HASH_SEED")
    block, tokens, ids = c["block"], c["tokens"] or [], []
    for start in range(0, len(tokens) - block + 1, block):
        parent = digest(meta0, (parent, tuple(tokens[start:start + block])))
        ids.append(parent)
    if c["rank"] != 0 and not c["mla"]:
        ids = [digest(meta, i) for i in ids]
    print(" ".join(x.hex() for x in [seed] + ids))
