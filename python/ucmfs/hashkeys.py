"""ucmfs.hashkeys: block ids with extra keys, and UCM's own block ids.

Standard library only; the Go side is package format (docs/format.md
sections 2.1 and 2.2, docs/hybrid.md).

  * Keys and chain_keys: the chain of ucmfs.client.chain with extra keys:
    a tenant's salt (block 0), a LoRA adapter (every block), multimodal
    inputs "hash@offset" (the block holding the offset), prompt-embeddings
    hashes (one per block) and the KV-cache group id (block 0). A block's
    keys are tag (1 byte), length (4 bytes little-endian) and value, and
    it is hashed under MD5("UCMHASHKEYS" || parent || keys); with no key
    the ids are those of ucmfs.client.chain.
  * ucm_chain: the ids of UCM's vLLM connector (its RequestHasher):
    MD5(meta || pickle.dumps((parent, tuple(block)), protocol=5)) from the
    seed MD5(meta || pickle.dumps("UCM_HASH_SEED", protocol=5)), meta
    "<model>:<tp>:<torch dtype>:0"; a rank r != 0 re-hashes each id as
    MD5(meta_r || id), except for MLA models. This module uses Python's own
    pickle, the Go side its own encoder: the tests compare the two.
"""

import hashlib
import pickle
import struct
from typing import List, NamedTuple, Optional, Sequence, Tuple, Union

from .client import chain_seed, next_id

__all__ = [
    "KEYS_PREFIX", "Keys", "TAG_EMBEDS", "TAG_GROUP", "TAG_LORA", "TAG_MM", "TAG_SALT",
    "UCM_SEED_STRING", "block_keys", "chain_keys", "keyed_parent", "parse_mm", "ucm_chain",
    "ucm_meta", "ucm_next_id", "ucm_rank_id", "ucm_seed",
]

KEYS_PREFIX = b"UCMHASHKEYS"
TAG_SALT, TAG_LORA, TAG_MM, TAG_EMBEDS, TAG_GROUP = 1, 2, 3, 4, 5
UCM_SEED_STRING = "UCM_HASH_SEED"


class Keys(NamedTuple):
    """The extra keys of a prompt; the defaults are no key at all.

    mm holds (hash, offset) pairs, offset in tokens from the prompt's
    start; embeds[i] is block i's prompt-embeddings hash ("" for none);
    group is the KV-cache group id, or None. salt and lora are str, or
    bytes (taken as the str's UTF-8: b"tenant" is "tenant").
    """
    salt: Union[str, bytes] = ""
    lora: Union[str, bytes] = ""
    mm: Tuple[Tuple[str, int], ...] = ()
    embeds: Tuple[str, ...] = ()
    group: Optional[int] = None


def parse_mm(s: str) -> Tuple[str, int]:
    """Parse "hash@offset" (the hash is what precedes the last "@")."""
    h, sep, off = s.rpartition("@")
    if not sep or not h or not off.isdigit():
        raise ValueError("multimodal key %r is not hash@offset" % s)
    return h, int(off)


def _put(tag: int, value: Union[str, bytes]) -> bytes:
    v = value if isinstance(value, bytes) else value.encode("utf-8")
    return struct.pack("<BI", tag, len(v)) + v


def block_keys(keys: Keys, i: int, block_size: int) -> bytes:
    """The encoded keys of block i (b"" when it has none)."""
    enc = b""
    if i == 0 and keys.salt:
        enc += _put(TAG_SALT, keys.salt)
    if keys.lora:
        enc += _put(TAG_LORA, keys.lora)
    for h, off in sorted(keys.mm, key=lambda m: (m[1], m[0].encode("utf-8"))):
        if i * block_size <= off < (i + 1) * block_size:
            enc += _put(TAG_MM, "%s@%d" % (h, off))
    if i < len(keys.embeds) and keys.embeds[i]:
        enc += _put(TAG_EMBEDS, keys.embeds[i])
    if i == 0 and keys.group is not None:
        enc += _put(TAG_GROUP, str(keys.group))
    return enc


def keyed_parent(parent: bytes, enc: bytes) -> bytes:
    """parent when enc is empty, else MD5("UCMHASHKEYS" || parent || enc)."""
    return parent if not enc else hashlib.md5(KEYS_PREFIX + parent + enc).digest()


def chain_keys(meta_str: str, block_size: int, tokens: Sequence[int],
               keys: Keys = Keys()) -> List[bytes]:
    """The ids of every full block, with extra keys (docs/format.md 2.1)."""
    ids, parent = [], chain_seed(meta_str)
    for i in range(len(tokens) // block_size):
        k = keyed_parent(parent, block_keys(keys, i, block_size))
        parent = next_id(k, tokens[i * block_size:(i + 1) * block_size])
        ids.append(parent)
    return ids


# ---------------------------------------------------------------- UCM's ids


def ucm_meta(model: str, tp: int, dtype: str, rank: int) -> bytes:
    """UCM's meta "<model>:<tp>:<dtype>:<rank>" as UTF-8; dtype as
    str(torch.dtype) writes it, e.g. "torch.bfloat16"."""
    return ("%s:%d:%s:%d" % (model, tp, dtype, rank)).encode("utf-8")


def _digest(meta: bytes, value) -> bytes:
    data = value if isinstance(value, bytes) else pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.md5(meta + data).digest()


def ucm_seed(model: str, tp: int, dtype: str) -> bytes:
    """MD5(meta_0 || pickle("UCM_HASH_SEED")): the parent of block 0."""
    return _digest(ucm_meta(model, tp, dtype, 0), UCM_SEED_STRING)


def ucm_next_id(model: str, tp: int, dtype: str, parent: bytes, tokens: Sequence[int]) -> bytes:
    """MD5(meta_0 || pickle((parent, tuple(tokens))))."""
    return _digest(ucm_meta(model, tp, dtype, 0), (parent, tuple(tokens)))


def ucm_rank_id(model: str, tp: int, dtype: str, rank: int, block_id: bytes) -> bytes:
    """MD5(meta_rank || id): the id rank != 0 stores block_id under."""
    return _digest(ucm_meta(model, tp, dtype, rank), block_id)


def ucm_chain(model: str, tp: int, dtype: str, rank: int, block_size: int,
              tokens: Sequence[int], mla: bool = False) -> List[bytes]:
    """UCM's ids of every full block as the worker of rank names them."""
    ids, parent = [], ucm_seed(model, tp, dtype)
    for start in range(0, len(tokens) - block_size + 1, block_size):
        parent = ucm_next_id(model, tp, dtype, parent, tokens[start:start + block_size])
        ids.append(parent)
    if rank != 0 and not mla:
        ids = [ucm_rank_id(model, tp, dtype, rank, i) for i in ids]
    return ids
