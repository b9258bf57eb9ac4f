package store

import (
	"errors"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// TestParseReprSetting: the text forms and their canonical spelling.
func TestParseReprSetting(t *testing.T) {
	good := map[string]string{
		"mean": "mean", "max": "max", "merged": "merged:4", "merged:1": "merged:1", "merged:16": "merged:16",
		"signhash": "signhash:128", "signhash:256": "signhash:256", " none ": "none",
	}
	for in, want := range good {
		r, err := ParseReprSetting(in)
		if err != nil || r.String() != want {
			t.Errorf("ParseReprSetting(%q) = %v, %v; want %s", in, r, err, want)
		}
	}
	for _, in := range []string{"", "avg", "mean:0", "max:3", "merged:", "merged:-1", "signhash:12", "signhash:99999", "2"} {
		if r, err := ParseReprSetting(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseReprSetting(%q) = %v, %v; want ErrInvalid", in, r, err)
		}
	}
	if (ReprSetting{}).String() != "mean" {
		t.Error("the zero setting is not mean")
	}
	for _, bad := range []ReprSetting{{Kind: 7}, {Kind: format.ReprMean, Param: 2}, {Kind: format.ReprSignHash, Param: 12}} {
		if _, err := New(nil, Options{Repr: bad}); !errors.Is(err, ErrInvalid) {
			t.Errorf("New with Repr %+v: %v, want ErrInvalid", bad, err)
		}
	}
}
