package control

import (
	"context"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// Request parsing for the control files: tokens are separated by spaces
// or tabs; nothing here allocates per token or per id.

// controlModel reads the model token of a request: a valid name (EINVAL)
// of a model the mount knows (ENOENT) that the caller of ctx may reach
// (EACCES): want is store.AccessExec for a request that reads blocks or
// learns which exist (what a stat or open through the mount needs of the
// model's directories), with store.AccessWrite for one that publishes.
func (s *Env) controlModel(ctx context.Context, t *line.Tokens, want uint32, what string) (string, error) {
	model, err := line.Model(t, s.store.Models().Exists, store.ErrNotFound)
	if err != nil {
		return model, err
	}
	return model, line.CheckModel(ctx, model, s.store.Models().Permits, want, what)
}

// contentModel reads the model token of a request that returns the
// content of the model's files or scores computed from it (topk): besides
// controlModel's search permission, the caller must be allowed to read the
// files (EACCES), as a read of one through the mount would.
func (s *Env) contentModel(ctx context.Context, t *line.Tokens, what string) (string, error) {
	model, err := s.controlModel(ctx, t, store.AccessExec, what)
	if err != nil {
		return model, err
	}
	return model, line.CheckContent(ctx, model, s.store.Models().FilesPermit, what)
}

// parseIDs appends the remaining tokens of t, block ids, to ids: at
// least one (EINVAL), at most MaxIDs (E2BIG), each 32 lowercase hex
// digits (EINVAL, naming the first bad one by its position, from 1).
func parseIDs(t *line.Tokens, ids []format.ID) ([]format.ID, error) {
	return line.IDs(t, ids, MaxIDs)
}

// parseKeys appends the remaining tokens of t, the files of model, to
// keys: paths for a files model (parsePaths), block ids for the others
// (parseIDs, using ids as scratch). It returns both buffers for reuse.
func (s *Env) parseKeys(t *line.Tokens, model string, keys []format.Key, ids []format.ID) ([]format.Key, []format.ID, error) {
	if s.store.Models().LayoutOf(model).Tree() {
		keys, err := parsePaths(t, model, keys)
		return keys, ids, err
	}
	ids, err := parseIDs(t, ids[:0])
	for _, id := range ids {
		keys = append(keys, s.store.Models().BlockKey(model, id))
	}
	return keys, ids, err
}

// parsePaths appends the remaining tokens of t, paths of files of the
// files model model, to keys: at least one (EINVAL), at most MaxIDs
// (E2BIG), each a path format.ValidateFilePath accepts (EINVAL, naming
// the first bad one by its position, from 1).
func parsePaths(t *line.Tokens, model string, keys []format.Key) ([]format.Key, error) {
	for n := 1; !t.Done(); n++ {
		if n > MaxIDs {
			return keys, line.Err(line.ErrTooMany, "more than %d paths in one request", MaxIDs)
		}
		tok := t.Next()
		if err := format.ValidateFilePath(string(tok)); err != nil {
			return keys, line.Err(line.ErrInvalid, "path %d %q: %v", n, line.Clip(tok), err)
		}
		keys = append(keys, format.FileKey(model, string(tok)))
	}
	if len(keys) == 0 {
		return keys, line.Err(line.ErrInvalid, "no path")
	}
	return keys, nil
}
