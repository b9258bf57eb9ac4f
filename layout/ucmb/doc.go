// Package ucmb is the ucmb layout (docs/spec.md §2), the default one:
// <model>/<hh>/<id>.bin holding a block with its 64-byte UCMB header, and
// <id>.repr beside it, the block's sidecar (a UCMR header and the block's
// representations). A name is its block's content: a second publish of
// it is a copy, dropped. Staging names are <final>.tmp and rsync's
// .<final>.XXXXXX (format/staging.go).
package ucmb
