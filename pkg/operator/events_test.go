package operator

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		note string
		cut  bool
	}{
		{"short", "claim c: launched", false},
		{"at the limit", strings.Repeat("a", noteLimit), false},
		{"over it", strings.Repeat("a", noteLimit+1), true},
		{"over it in multibyte runes", strings.Repeat("é", noteLimit), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bounded(tc.note)
			if len(got) > noteLimit || !utf8.ValidString(got) || strings.HasSuffix(got, "…") != tc.cut || !tc.cut && got != tc.note {
				t.Errorf("bounded gives %d bytes (valid UTF-8 %v), ending %q", len(got), utf8.ValidString(got), got[max(0, len(got)-6):])
			}
		})
	}
}
