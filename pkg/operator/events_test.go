package operator

import (
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
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

// A Claim from the API gets its kind for the event; anything else passes as it is.
func TestWithKind(t *testing.T) {
	cl := &v1alpha1.Claim{}
	cl.Name = "general-1"
	got, ok := withKind(cl).(*v1alpha1.Claim)
	if !ok || got.Kind != "Claim" || got.APIVersion != v1alpha1.SchemeGroupVersion.String() || cl.Kind != "" {
		t.Errorf("withKind gives %+v (the caller's claim now of kind %q)", got.TypeMeta, cl.Kind)
	}
	pod := &corev1.Pod{}
	if withKind(pod) != runtime.Object(pod) {
		t.Error("withKind changed a pod")
	}
}
