package operator

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// noteLimit is the longest event note (message) the API server accepts.
const noteLimit = 1024

// boundedRecorder cuts event notes to what the API server accepts. It refuses a longer one, and
// the news is lost: EC2's insufficient-capacity messages run to 300 characters each, and a failed
// launch or a gang given up quotes several. It also names a Claim's kind (withKind).
type boundedRecorder struct{ events.EventRecorder }

func (r boundedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.EventRecorder.Eventf(withKind(regarding), related, eventtype, reason, action, "%s", bounded(fmt.Sprintf(note, args...)))
}

// withKind is obj, a Claim with its kind set: one read from the API has none, and the
// scheduler's recorder cannot look Claim up in its scheme, so the event would be dropped.
func withKind(obj runtime.Object) runtime.Object {
	cl, ok := obj.(*v1alpha1.Claim)
	if !ok || cl.Kind != "" {
		return obj
	}
	out := cl.DeepCopy()
	out.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("Claim"))
	return out
}

// bounded is note, cut on a rune boundary to at most noteLimit bytes, ending in "…" if cut.
func bounded(note string) string {
	if len(note) <= noteLimit {
		return note
	}
	const ellipsis = "…"
	cut := noteLimit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + ellipsis
}
