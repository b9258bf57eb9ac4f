package tier

import "fmt"

// Health is the state of a tier below memory (Lower): Up, Unstable or
// Down. A directory tier's are told in package tiers/dir (dir.Health):
// Unstable when its directory answers with I/O errors, Down when it does
// not answer in time, and then its operations fail fast with ErrStalled.
type Health int32

// The states of a tier; see Health.
const (
	Up Health = iota
	Unstable
	Down
)

// String is "up", "unstable" or "down".
func (h Health) String() string {
	switch h {
	case Up:
		return "up"
	case Unstable:
		return "unstable"
	case Down:
		return "down"
	}
	return fmt.Sprintf("health(%d)", int32(h))
}
