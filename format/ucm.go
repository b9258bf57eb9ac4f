package format

import (
	"crypto/md5"
	"fmt"
	"strconv"
	"strings"
)

// UCMSeedString is the str UCM pickles into its chain's seed.
const UCMSeedString = "UCM_HASH_SEED"

// UCMMeta is the meta string of UCM's vLLM connector (its RequestHasher),
// "<model>:<tp_size>:<dtype>:<rank>": model as vLLM's model_config.model
// holds it (the --model argument: a Hugging Face name or a path), the
// tensor-parallel size, the dtype as str(torch.dtype) writes it
// ("torch.bfloat16"), and the tensor-parallel rank.
type UCMMeta struct {
	Model string
	TP    int
	Dtype string
	Rank  int
}

// String is the meta string.
func (m UCMMeta) String() string { return Meta(m.Model, m.TP, m.Dtype, m.Rank) }

// ParseMeta splits "<model>:<size>:<dtype>:<rank>" at its last three
// colons (a model path may hold colons), with size >= 1 and
// 0 <= rank < size.
func ParseMeta(s string) (UCMMeta, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 4 {
		return UCMMeta{}, fmt.Errorf("meta %q is not MODEL:SIZE:DTYPE:RANK", s)
	}
	n := len(parts)
	m := UCMMeta{Model: strings.Join(parts[:n-3], ":"), Dtype: parts[n-2]}
	var err1, err2 error
	m.TP, err1 = strconv.Atoi(parts[n-3])
	m.Rank, err2 = strconv.Atoi(parts[n-1])
	if err1 != nil || err2 != nil || m.TP < 1 || m.Rank < 0 || m.Rank >= m.TP {
		return UCMMeta{}, fmt.Errorf("meta %q: need SIZE >= 1 and 0 <= RANK < SIZE", s)
	}
	return m, nil
}

// ucmDigest is UCM's RequestHasher call: MD5(meta || input), input being
// pickle.dumps(v, protocol=5), or v itself when v is bytes (an id).
func ucmDigest(meta string, v any) ID {
	h := md5.New()
	h.Write([]byte(meta))
	if b, ok := v.([]byte); ok {
		h.Write(b)
	} else {
		p, err := Pickle(v)
		if err != nil {
			panic(err) // the values below are all picklable
		}
		h.Write(p)
	}
	var id ID
	h.Sum(id[:0])
	return id
}

// UCMSeed is the parent of UCM's first block: MD5(meta ||
// pickle("UCM_HASH_SEED")), meta being that of rank 0, as UCM's scheduler
// computes it.
func UCMSeed(m UCMMeta) ID {
	m.Rank = 0
	return ucmDigest(m.String(), UCMSeedString)
}

// UCMNextID is one link of UCM's chain: MD5(meta || pickle((parent,
// tuple(tokens)))), parent as a 16-byte bytes object, meta that of rank 0.
func UCMNextID(m UCMMeta, parent ID, tokens []uint32) ID {
	m.Rank = 0
	return ucmDigest(m.String(), PickleTuple{parent[:], tokens})
}

// UCMRankID is the id a worker of rank m.Rank stores block id under:
// MD5(meta || id), with m's own rank and the 16 raw bytes of id. UCM
// re-hashes on every rank but 0, except for MLA models, whose ranks share
// rank 0's blocks.
func UCMRankID(m UCMMeta, id ID) ID { return ucmDigest(m.String(), id[:]) }

// UCMChain returns UCM's ids of every full block of blockSize tokens, as
// the worker of rank m.Rank names them: the chain of rank 0, re-hashed
// with UCMRankID when m.Rank != 0 and mla is false. It returns nil when
// blockSize < 1.
func UCMChain(m UCMMeta, mla bool, blockSize int, tokens []uint32) []ID {
	if blockSize < 1 {
		return nil
	}
	ids := make([]ID, 0, len(tokens)/blockSize)
	parent := UCMSeed(m)
	for i := 0; i+blockSize <= len(tokens); i += blockSize {
		parent = UCMNextID(m, parent, tokens[i:i+blockSize])
		ids = append(ids, parent)
	}
	if m.Rank != 0 && !mla {
		for i, id := range ids {
			ids[i] = UCMRankID(m, id)
		}
	}
	return ids
}
