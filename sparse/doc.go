// Package sparse derives sparse-attention representations from the K
// tensors of UCMB blocks, encodes and decodes them as UCMR sidecars
// (<id>.repr, docs/spec.md §5), and ranks candidate blocks against a query by
// their representations (top-k retrieval), the block selection step of the
// ESA, GSA and KVStar sparse-attention algorithms.
//
// A representation summarises the keys of one block per layer and KV head:
//
//   - kind 0 (mean) is the mean of the block's key vectors,
//   - kind 1 (max) their element-wise maximum,
//   - kind 2 (merged, KVStar) the means of groups of param consecutive
//     tokens, ceil(block_size / param) vectors per head,
//   - kind 3 (sign-hash, GSA on-device) the signs of a fixed random
//     orthogonal projection of the mean key, param bits packed 8 per byte.
//
// Derive (and AppendDerive) turn a block file into a complete sidecar
// file; ParseRepr decodes one. A Builder collects the sidecars of a set of
// candidate blocks into an Index, one contiguous matrix scanned by every
// Search: the score of a candidate for kinds 0-2 is the sum over layers
// and heads of the dot product of the query head with the candidate's
// vector (for kind 2 the best of the head's rows), higher first; for kind
// 3 it is the Hamming distance between the sign-hash codes of the query
// and of the candidate, lower first. Ties go to the smaller id. The byte
// layouts, the projection and the scoring rules are in docs/sparse.md.
//
// The package imports only format of ucmfs. Errors wrap ErrUnsupported,
// ErrArgument, ErrMismatch, or format.ErrFormat for malformed files.
package sparse
