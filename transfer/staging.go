package transfer

import (
	"fmt"

	"github.com/ucmfs/ucmfs/gpu"
)

// Pinned staging. Bytes that are not in a registered memory-tier mapping
// (a dump's blocks on their way to the memory tier; a load of a block the
// tier holds without a mapping, or that memory cannot take) pass through
// the session's staging buffer: anonymous memory registered with the
// device (gpu.NewStaging), so the driver DMAs to and from it directly
// instead of staging every copy through pageable Go memory. A request
// fills it with all of its staged items and submits them with its mapped
// ones in one batch; only a request whose staged bytes pass stagingCap
// is copied in rounds of that size.

const (
	// stagingCap is the largest staging buffer a request fills before it
	// submits a round (or one item's size, when larger).
	stagingCap = 64 << 20
	// gpuKeepBuffer is the largest staging buffer a session keeps between
	// requests.
	gpuKeepBuffer = 16 << 20
	// stagingRound rounds buffer sizes up, so that growing requests do
	// not map and register a new buffer each time.
	stagingRound = 1 << 20
)

// stagingSize is the buffer a request needs whose staged items total
// bytes, the largest of them largest bytes.
func stagingSize(total, largest int64) int64 { return min(total, max(stagingCap, largest)) }

// stagingBuf returns the session's staging buffer, at least n bytes long
// (n > 0), mapping and registering a larger one when needed.
func (g *Session) stagingBuf(n int64) ([]byte, error) {
	if g.staging != nil && int64(len(g.staging.Bytes())) >= n {
		return g.staging.Bytes(), nil
	}
	g.closeStaging()
	size := (n + stagingRound - 1) / stagingRound * stagingRound
	st, err := gpu.NewStaging(g.e.dev, int(size))
	if err != nil {
		return nil, fmt.Errorf("a pinned staging buffer of %d bytes: %w", size, err)
	}
	g.staging = st
	return st.Bytes(), nil
}

// trimStaging drops a staging buffer larger than gpuKeepBuffer after a
// request.
func (g *Session) trimStaging() {
	if g.staging != nil && len(g.staging.Bytes()) > gpuKeepBuffer {
		g.closeStaging()
	}
}

// closeStaging unregisters and unmaps the staging buffer.
func (g *Session) closeStaging() {
	if g.staging == nil {
		return
	}
	if err := g.staging.Close(); err != nil {
		g.e.log.Warn("gpu: releasing a staging buffer", "err", err)
	}
	g.staging = nil
}
