package tiers

import "fmt"

// flushErrors are the failures of one flush of many blocks: its message is
// one line (how many failed, and the first failure), however many blocks
// failed, so that a shutdown with a stalled tier logs one line and not one
// per dirty block; errors.Is and errors.As see every failure.
type flushErrors []error

// Error says how many failed and shows the first.
func (e flushErrors) Error() string {
	if len(e) == 1 {
		return e[0].Error()
	}
	return fmt.Sprintf("%d blocks not written back; the first: %v", len(e), e[0])
}

// Unwrap returns every failure.
func (e flushErrors) Unwrap() []error { return e }

// joinFlush returns nil for no failures, else the failures as one error.
func joinFlush(errs []error) error {
	var out flushErrors
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
