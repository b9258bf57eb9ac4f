// Package vllm publishes the mount's events (package events) as vLLM's
// KV events, the stream cache-aware routers already read (llm-d's
// KV-cache indexer, Dynamo's KV router): a ZMQ PUB socket sending, per
// batch, the frames [topic, sequence number (8 bytes, big-endian),
// msgpack KVEventBatch], and a ROUTER socket that replays the batches
// after a sequence number a subscriber asks for (8 bytes, big-endian),
// then an end marker (-1 and an empty payload), as vLLM's
// ZmqEventPublisher does.
//
// A KVEventBatch is [ts, [events...], data_parallel_rank] with each event
// a tagged array (msgspec's array_like structs): ["BlockStored",
// block_hashes, parent_block_hash, token_ids, block_size, lora_id,
// medium, lora_name], ["BlockRemoved", block_hashes, medium],
// ["AllBlocksCleared"]. Block hashes are events.EngineHash (unsigned
// 64-bit integers, vLLM's default form), the medium is the tier's
// (events.Mediums); a filesystem knows no token ids, so those are empty,
// the parent hash is nil and block_size 0. Blocks whose hash cannot be
// known are not published here (they are on .ucm/events).
//
// At start the publisher sends AllBlocksCleared, then walks what every
// tier holds (BlockStored, a batch at a time, paced), then follows the
// journal; a publisher that falls a whole journal window behind does
// the same again, since a router cannot be told which blocks it missed.
package vllm
