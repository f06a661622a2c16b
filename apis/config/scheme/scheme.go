// Package scheme adds Tailor's plugin args to the kube-scheduler's configuration scheme, so a
// KubeSchedulerConfiguration naming TailorArgs is decoded strictly, defaulted and converted
// before the plugin sees it. Import it (for its side effect) wherever the scheduler is built.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/tailor-eks/tailor/apis/config"
	configv1 "github.com/tailor-eks/tailor/apis/config/v1"
)

// Scheme is the in-tree scheduler scheme, extended.
var Scheme = kubeschedulerscheme.Scheme

func init() {
	AddToScheme(Scheme)
}

// AddToScheme registers every version of TailorArgs.
func AddToScheme(scheme *runtime.Scheme) {
	utilruntime.Must(config.AddToScheme(scheme))
	utilruntime.Must(configv1.AddToScheme(scheme))
}
