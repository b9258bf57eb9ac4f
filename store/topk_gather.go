package store

import (
	"errors"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers"
)

// Gathering the sidecar of each topk candidate: the stored one, from the
// cache or the tiers, when it has the request's kind and param; else one
// derived from the block, from the cache or computed now (and stored
// when the request's kind and param are the model's own).

// SourceToken is what a candidate's sidecar was gathered from: the tokens
// of its stored sidecar and of its block, each absent or not. Equal
// tokens gather the same sidecar, so an index built from them still
// holds.
type SourceToken struct {
	repr, block       fileToken
	hasRepr, hasBlock bool
}

// CandidateToken is the token of candidate id of model now.
func (sc Sidecars) CandidateToken(model string, id format.ID) SourceToken {
	var t SourceToken
	bk := sc.s.Models().BlockKey(model, id)
	rk, ok := registry.Of(bk).Sidecar(bk)
	if !ok {
		return t // a layout without sidecars has no candidates
	}
	t.repr, t.hasRepr = sc.s.statToken(rk)
	t.block, t.hasBlock = sc.s.statToken(bk)
	return t
}

// reprIs reports whether a sidecar file has kind and param (param counts
// for kinds 2 and 3 only).
func reprIs(data []byte, kind format.ReprKind, param uint32) bool {
	h, err := format.DecodeReprHeader(data)
	if err != nil || h.Kind != kind {
		return false
	}
	return kind == format.ReprMean || kind == format.ReprMax || h.Param == param
}

// Topk gathers the sidecar file of candidate id of model, of kind
// and param, with the token of what it came from; nil when the block is
// not stored or allows no derivation. derived tells whether it was
// derived for this call.
func (sc Sidecars) Topk(model string, id format.ID, kind format.ReprKind, param uint32) (data []byte, tok SourceToken, derived bool) {
	tok = sc.CandidateToken(model, id)
	if !tok.hasBlock {
		return nil, tok, false // a sidecar without its block is not a candidate's
	}
	bk := sc.s.Models().BlockKey(model, id)
	rk := sidecarOf(bk)
	if tok.hasRepr {
		ck := reprCacheKey{key: rk}
		data = sc.s.reprCache.get(ck, tok.repr)
		if data == nil {
			if d, _, err := sc.s.readWhole(rk); err == nil {
				data = d
				sc.s.reprCache.put(ck, tok.repr, d)
			}
		}
		if data != nil && reprIs(data, kind, param) {
			return data, tok, false
		}
	}
	ck := reprCacheKey{key: bk, kind: kind, param: param}
	if data = sc.s.reprCache.get(ck, tok.block); data != nil {
		return data, tok, false
	}
	data, err := sc.s.deriveBytes(bk, kind, param)
	if err != nil {
		if errors.Is(err, ErrNoSidecar) || errors.Is(err, tiers.ErrNotFound) || errors.Is(err, ErrTooBig) {
			sc.s.log.Debug("topk: no sidecar for a candidate", "key", rk.Path(), "err", err)
		} else {
			sc.s.log.Warn("topk: deriving a candidate's sidecar failed", "key", rk.Path(), "err", err)
		}
		return nil, tok, false
	}
	if set := sc.Setting(model); !tok.hasRepr && !set.Off && set.Kind == kind && set.Param == param {
		if err := sc.s.storeDerived(rk, data); err != nil {
			sc.s.log.Warn("topk: storing a derived sidecar failed", "key", rk.Path(), "err", err)
		} else if t, ok := sc.s.statToken(rk); ok && sameFile(t, data) {
			tok.repr, tok.hasRepr = t, true
			sc.s.reprCache.put(reprCacheKey{key: rk}, t, data)
			return data, tok, true
		}
	}
	sc.s.reprCache.put(ck, tok.block, data)
	return data, tok, true
}

// sameFile reports whether a stored file with token t holds data, a
// sidecar file with its CRC set (one stored meanwhile by another writer
// may differ).
func sameFile(t fileToken, data []byte) bool {
	h, err := format.DecodeReprHeader(data)
	return err == nil && h.HasCRC() && t.size == int64(len(data)) && (!t.hasCRC || t.crc == h.PayloadCRC)
}
