"""A KV-event subscriber written from vLLM's
examples/online_serving/kv_events_subscriber.py: a ZMQ SUB socket on the
"kv-events" topic, messages [topic, seq (8 bytes big-endian), msgpack
KVEventBatch], a replay socket asked for the batches from a sequence
number on (8 bytes big-endian) when the stream shows a gap, and batches
decoded as msgspec encodes vLLM's array_like tagged structs:
[ts, [events], data_parallel_rank], each event ["BlockStored", hashes,
parent, token_ids, block_size, lora_id, medium, ...] or ["BlockRemoved",
hashes, medium, ...] or ["AllBlocksCleared"].

Unlike the example, the replay socket is a DEALER (the example's REQ
takes only the first reply of the several a replay sends). It prints one
JSON line per event, {"seq", "type", "hashes", "medium"}, and a "gap"
line for each replay, and exits when it sees the block hash given as
sentinel stored, or after the timeout.

usage: kv_subscriber.py PUB_ENDPOINT REPLAY_ENDPOINT SENTINEL TIMEOUT
"""
import json
import sys
import time

import msgpack
import zmq


def decode(payload):
    batch = msgpack.unpackb(payload, raw=False)
    ts, events = batch[0], batch[1]
    out = []
    for ev in events:
        tag = ev[0]
        if tag == "BlockStored":
            out.append({"type": tag, "hashes": ev[1], "medium": ev[6]})
        elif tag == "BlockRemoved":
            out.append({"type": tag, "hashes": ev[1], "medium": ev[2]})
        elif tag == "AllBlocksCleared":
            out.append({"type": tag, "hashes": [], "medium": None})
        else:
            raise ValueError("unknown event %r" % (tag,))
    return ts, out


def main():
    pub_ep, replay_ep, sentinel, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.connect(pub_ep)
    sub.setsockopt_string(zmq.SUBSCRIBE, "kv-events")
    replay = ctx.socket(zmq.DEALER)
    replay.connect(replay_ep)
    last_seq = -1
    end = time.time() + timeout
    done = False

    def emit(seq, payload):
        nonlocal done
        _, events = decode(payload)
        for ev in events:
            ev["seq"] = seq
            print(json.dumps(ev), flush=True)
            if ev["type"] == "BlockStored" and sentinel in ev["hashes"]:
                done = True

    while not done and time.time() < end:
        if not sub.poll(50):
            continue
        _, seq_bytes, payload = sub.recv_multipart()
        seq = int.from_bytes(seq_bytes, "big")
        if seq > last_seq + 1:
            start = last_seq + 1
            print(json.dumps({"type": "gap", "from": start, "to": seq - 1}), flush=True)
            replay.send_multipart([b"", start.to_bytes(8, "big")])
            while replay.poll(5000):
                _, rseq, rpayload = replay.recv_multipart()
                if not rpayload:
                    break  # the end marker: seq -1, an empty payload
                r = int.from_bytes(rseq, "big")
                if last_seq < r < seq:
                    emit(r, rpayload)
                    last_seq = r
        if seq > last_seq:
            emit(seq, payload)
            last_seq = seq
    sys.exit(0 if done else 3)


if __name__ == "__main__":
    main()
