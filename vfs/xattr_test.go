package vfs

import (
	"errors"
	"testing"

	"github.com/ucmfs/ucmfs/store"
)

// TestXattrAnswers checks which answers of the attribute requests are
// plain refusals (a name not served, a short buffer) and which are not.
func TestXattrAnswers(t *testing.T) {
	x := &store.Attrs{
		Names:    []string{"state", "pinned"},
		Writable: map[string]bool{"pinned": true},
		Get:      func(string) (string, error) { return "clean", nil },
		Set:      func(string, string) error { return store.ErrInvalid },
	}
	if n, err := Getxattr(x, "user.ucm.state", make([]byte, 16)); err != nil || n != 5 {
		t.Errorf("getxattr: %d, %v", n, err)
	}
	for _, c := range []struct {
		name   string
		err    error
		target error
		plain  bool
	}{
		{"unknown name", second(Getxattr(x, "user.ucm.nope", nil)), store.ErrNoAttr, true},
		{"other namespace", second(Getxattr(x, "security.selinux", nil)), ErrOtherNS, true},
		{"short buffer", second(Getxattr(x, "user.ucm.state", make([]byte, 2))), ErrRange, true},
		{"short list", second(Listxattr(x, make([]byte, 2))), ErrRange, true},
		{"read-only", Setxattr(x, "user.ucm.state", []byte("1")), store.ErrImmutable, false},
		{"bad value", Setxattr(x, "user.ucm.pinned", []byte("7")), store.ErrInvalid, false},
		{"remove", Removexattr(x, "user.ucm.pinned"), store.ErrImmutable, false},
		{"none on the node", NoXattr("user.ucm.state"), store.ErrNoAttr, true},
	} {
		if !errors.Is(c.err, c.target) || IsPlain(c.err) != c.plain {
			t.Errorf("%s: %v (plain %v), want %v (plain %v)", c.name, c.err, IsPlain(c.err), c.target, c.plain)
		}
	}
}

func second(_ uint32, err error) error { return err }
