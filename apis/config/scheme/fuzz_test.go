package scheme

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/config/validation"
)

// FuzzDecodeAndValidate feeds arbitrary Tailor plugin args, inside a KubeSchedulerConfiguration,
// through the strict decoder (conversion and defaults included) and validation, as the scheduler
// reads its configuration: each step answers or errs, never panics, and a validation error names
// a field under TailorArgs.
func FuzzDecodeAndValidate(f *testing.F) {
	for _, seed := range []string{
		`{clusterName: prod, pools: [{name: general}]}`,
		`{clusterName: prod, pools: [{name: a, weight: 10, capacityTypes: [spot, on-demand], instanceProfile: x, requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}], limits: {cpu: "100"}, disruption: {consolidationPolicy: WhenEmpty, budgets: [{nodes: "20%", schedule: "0 9 * * 1-5", duration: 8h}]}}]}`,
		`{clusterName: prod, interruptionQueue: "https://sqs.us-east-1.amazonaws.com/123456789012/q", pools: [{name: g, taints: [{key: a, value: b, effect: NoSchedule}], startupTaints: [{key: tailor.dev/disrupting, effect: NoSchedule}]}]}`,
		`{clusterName: "", pools: []}`,
		`{clusterName: prod, batchIdleDuration: -1s, pools: [{name: x, limits: {memory: -5Gi}, requirements: [{key: "", operator: Gt, values: [a]}]}]}`,
		`{clusterName: prod, pools: [{name: x, disruption: {budgets: [{nodes: "200%"}, {nodes: "-1"}, {nodes: "x", schedule: "61 * * * *"}]}}]}`,
	} {
		f.Add(seed)
	}
	codecs := serializer.NewCodecFactory(Scheme, serializer.EnableStrict)
	f.Fuzz(func(t *testing.T, args string) {
		doc := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: tailor\n  pluginConfig:\n  - name: Tailor\n    args: " + args + "\n"
		obj, _, err := codecs.UniversalDecoder().Decode([]byte(doc), nil, nil)
		if err != nil {
			return
		}
		cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
		if !ok || len(cfg.Profiles) != 1 || len(cfg.Profiles[0].PluginConfig) != 1 {
			return
		}
		a, ok := cfg.Profiles[0].PluginConfig[0].Args.(*config.TailorArgs)
		if !ok {
			return
		}
		if err := validation.ValidateTailorArgs(field.NewPath("TailorArgs"), a); err != nil && !strings.Contains(err.Error(), "TailorArgs") {
			t.Fatalf("a validation error that names no field: %v", err)
		}
	})
}
