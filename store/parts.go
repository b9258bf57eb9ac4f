package store

// The parts of the store, one job each, reached by an accessor (doc.go
// says why they are types of this package, not packages of their own):
//
//   - Writes: the life of a file being written, a Draft, from its create
//     to its publish or discard (writes*.go, publish.go, gens.go);
//   - Models: the registry of models and what each one's settings,
//     owner, users and quota decide (models.go, owners.go, users.go,
//     quota_rights.go, layout.go, group.go, model_times.go);
//   - Sidecars: the per-model kind, derivation, and the gathering of
//     topk candidates (repr_*.go, topk_gather.go).
//
// A part is a small value (the store it belongs to): taking it costs
// nothing, and callers hold the *Store and ask it for the part they need.

// Writes is the part of the store that runs files being written (Draft):
// their start and descriptors, the write table, the renames, moves and
// versions of a files model's names, and the publish rules.
type Writes struct{ s *Store }

// Writes is the store's part for files being written.
func (s *Store) Writes() Writes { return Writes{s} }

// Models is the part of the store that knows the models: which exist,
// their layout, settings, owner and group, and the quotas of models and
// users.
type Models struct{ s *Store }

// Models is the store's part for the models.
func (s *Store) Models() Models { return Models{s} }

// Sidecars is the part of the store for sidecars (.repr): the kind each
// model derives, the derivation from a block, and the sidecars topk
// gathers.
type Sidecars struct{ s *Store }

// Sidecars is the store's part for sidecars.
func (s *Store) Sidecars() Sidecars { return Sidecars{s} }
