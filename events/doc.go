// Package events is the journal of what the mount's tiers hold: one
// event per block that enters a tier (stored) or leaves one (removed),
// and one "cleared" when the daemon starts, each with a sequence number.
//
// The tiers report every change of their indexes (tiers.Observer); the
// store appends the changes of blocks and of the files of files models
// to a Journal (journal.go), a ring of a fixed number of events. An
// append takes a short mutex and never waits for a reader: a reader that
// falls a whole window behind loses the oldest events and is told how
// many, by sequence number (Journal.Read). Two readers consume it:
// .ucm/events, one JSON object per line (line.go, served by package
// control), and the vLLM-format ZMQ publisher of package events/vllm,
// which needs each block's engine hash and its tier's medium (names.go).
// An event carries the hash its block had when it was appended, since a
// files model's key_pattern may change it after (the store then appends
// the changed files' removals under the old hash and storings under the
// new one).
// docs/control.md and docs/engines.md are the users' reference.
package events
