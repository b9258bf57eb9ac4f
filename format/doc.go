// Package format is the naming and format layer of ucmfs: block ids, the
// hash chain that derives them from token ids (with extra keys: salt,
// LoRA, multimodal inputs, prompt embeddings, KV-cache group), UCM's own
// chain and the pickle encoder it needs, model-name escaping, the
// <model>/<hh>/<id>.bin layout shared by the mount and every tier
// directory, and the codecs of the 64-byte UCMB block header and UCMR
// sidecar header (with CRC-32C).
//
// It imports only the standard library, so every other package of ucmfs
// (and any tool) can depend on it. The byte layouts are documented in
// docs/format.md; the rules are those of docs/spec.md §2-5.
package format
