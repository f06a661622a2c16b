package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scrape reads the running scheduler's /metrics as Prometheus would: over HTTPS with the token
// of a service account allowed to get /metrics, authenticated and authorized by the API server.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	ctx := context.Background()
	const sa = "metrics-reader"
	for _, create := range []func() error{
		func() error {
			_, err := world.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := world.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: sa},
				Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := world.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: sa},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: sa}}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	tok, err := world.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := schedulerAddr.Load().(string)
	// The scheduler serves with a self-signed certificate, as kube-scheduler does by default.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var families map[string]*dto.MetricFamily
	var last error
	waitFor(t, "the scheduler's /metrics to answer", func() bool {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
		resp, err := client.Do(req)
		if err != nil {
			last = err
			return false
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("HTTP %d", resp.StatusCode)
			return false
		}
		var p expfmt.TextParser
		families, last = p.TextToMetricFamilies(resp.Body)
		return last == nil
	})
	if families == nil {
		t.Fatalf("scrape: %v", last)
	}
	return families
}

// value sums the family's samples whose labels include want.
func value(f *dto.MetricFamily, want map[string]string) (float64, bool) {
	if f == nil {
		return 0, false
	}
	sum, found := 0.0, false
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			ok = ok && labels[k] == v
		}
		if !ok {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, found
}

// A pod provisioned past an insufficient-capacity answer shows in the scheduler's /metrics:
// its batch, plan, launch, the offering EC2 refused, its claim, the fleet's price and the
// node's registration time; the waiting gauge and consolidation's series are served too.
func TestProvisioningMetricsScraped(t *testing.T) {
	ns := newNamespace(t)
	cheapest, _ := cheapestHolder(t, "1", "2Gi")
	world.Sim.SetCapacity(cheapest, "", "", 0)
	t.Cleanup(func() { world.Sim.SetCapacity(cheapest, "", "", -1) })
	createPod(t, ns, "counted", "1", "2Gi")
	pods := waitRunning(t, ns, 1)
	node := getNode(t, pods[0].Spec.NodeName)
	pool, typ := node.Labels["tailor.dev/pool"], node.Labels[corev1.LabelInstanceTypeStable]

	fams := scrape(t)
	checks := []struct {
		family  string
		labels  map[string]string
		atLeast float64
	}{
		{"tailor_provisioning_batches_total", nil, 1},
		{"tailor_provisioning_batch_pods", nil, 1},
		{"tailor_provisioning_plan_duration_seconds", nil, 1},
		{"tailor_provisioning_launches_total", map[string]string{"pool": pool, "instance_type": typ, "capacity_type": "on-demand", "result": "launched"}, 1},
		{"tailor_provisioning_offerings_marked_unavailable_total", map[string]string{"instance_type": cheapest, "code": "InsufficientInstanceCapacity"}, 1},
		{"tailor_provisioning_registration_duration_seconds", map[string]string{"pool": pool}, 1},
		{"tailor_claims", map[string]string{"phase": "Registered"}, 1},
		{"tailor_fleet_dollars_per_hour", map[string]string{"pool": pool}, 0.001},
		{"tailor_provisioning_pods_waiting", nil, 0},
		{"tailor_consolidation_saved_dollars_per_hour_total", nil, 0},
		{"tailor_consolidation_rollbacks_total", nil, 0},
	}
	for _, c := range checks {
		v, ok := value(fams[c.family], c.labels)
		if !ok || v < c.atLeast {
			t.Errorf("%s%v = %v (served: %v), want at least %v", c.family, c.labels, v, ok, c.atLeast)
		}
	}
}
