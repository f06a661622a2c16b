package scheme

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/tailor-eks/tailor/apis/config"
)

// A KubeSchedulerConfiguration naming TailorArgs decodes into the internal type, defaulted.
func TestDecodeDefaults(t *testing.T) {
	data := []byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: tailor
  pluginConfig:
  - name: Tailor
    args:
      clusterName: prod
      pools:
      - name: general
`)
	codecs := serializer.NewCodecFactory(Scheme, serializer.EnableStrict)
	obj, _, err := codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := obj.(*schedconfig.KubeSchedulerConfiguration)
	args, ok := cfg.Profiles[0].PluginConfig[0].Args.(*config.TailorArgs)
	if !ok {
		t.Fatalf("args decoded as %T", cfg.Profiles[0].PluginConfig[0].Args)
	}
	p := args.Pools[0]
	switch {
	case args.KubernetesVersion != "", args.RebalanceRecommendations != config.RebalanceAdvisory, args.BatchIdleDuration.Duration != 100*time.Millisecond,
		args.BatchMaxDuration.Duration != time.Second, args.RegistrationTimeout.Duration != 15*time.Minute,
		args.ConsolidationInterval.Duration != 15*time.Second, args.ConsolidationMinSavingsPercent != 10:
		t.Errorf("top-level defaults not applied: %+v", args)
	case len(p.CapacityTypes) != 1 || p.CapacityTypes[0] != "on-demand", p.AMI != "al2023",
		p.SubnetSelector.Tags["tailor.dev/discovery"] != "prod", p.SecurityGroupSelector.Tags["tailor.dev/discovery"] != "prod":
		t.Errorf("pool defaults not applied: %+v", p)
	case p.Disruption.ConsolidationPolicy != config.WhenEmptyOrUnderutilized, p.Disruption.ConsolidateAfter.Duration != 30*time.Second,
		p.Disruption.ExpireAfter.Duration != 0, len(p.Disruption.Budgets) != 1 || p.Disruption.Budgets[0].Nodes != "10%":
		t.Errorf("disruption defaults not applied: %+v", p.Disruption)
	}

	// Unknown fields are refused, not silently dropped.
	bad := []byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: tailor
  pluginConfig:
  - name: Tailor
    args: {clusterName: prod, pool: [{name: x}]}
`)
	if _, _, err := codecs.UniversalDecoder().Decode(bad, nil, nil); err == nil {
		t.Error("unknown field accepted")
	}
}
