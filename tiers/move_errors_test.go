package tiers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestFlushErrorsOneLine: a flush that fails for 5,000 blocks is one
// short line (the count and the first failure), and errors.Is sees them.
func TestFlushErrorsOneLine(t *testing.T) {
	var errs []error
	for i := 0; i < 5000; i++ {
		errs = append(errs, fmt.Errorf("block %d: %w", i, ErrStalled))
	}
	errs = append(errs, nil)
	err := joinFlush(errs)
	if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 200 || !strings.HasPrefix(msg, "5000 blocks") {
		t.Errorf("message %q", msg)
	}
	if !errors.Is(err, ErrStalled) {
		t.Error("errors.Is does not see the failures")
	}
	if joinFlush([]error{nil}) != nil {
		t.Error("no failure is not nil")
	}
}
