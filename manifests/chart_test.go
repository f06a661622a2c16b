package manifests

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"sigs.k8s.io/yaml"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/config/validation"
	"github.com/tailor-eks/tailor/pkg/profile"
)

const (
	chartDir     = "charts/tailor"
	deployValues = "deploy/values.yaml"
	deployFile   = "deploy/tailor.yaml"
)

// chartDefaults are the two values the chart has no default for: with them its defaults render.
var chartDefaults = []string{"--set", "settings.clusterName=x", "--set", "nodeInstanceProfile=tailor-node"}

// helmBinary is ../bin/helm (make tools builds it), or $HELM.
func helmBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = filepath.Join("..", "bin", "helm")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm not found at %s (%v): run make tools", bin, err)
	}
	return bin
}

// helm runs the helm binary in this directory and returns its standard output and error.
func helm(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// render is `helm template tailor charts/tailor` in namespace ns with extra arguments.
func render(t *testing.T, ns string, args ...string) []byte {
	t.Helper()
	out, stderr, err := helm(t, append([]string{"template", "tailor", chartDir, "--namespace", ns}, args...)...)
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderr)
	}
	return []byte(out)
}

func TestHelmLint(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"chart defaults", chartDefaults},
		{"example values", []string{"-f", deployValues}},
		{"every pool field", []string{"--set", "settings.clusterName=prod", "-f", valuesFile(t, everyPoolField)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := helm(t, append([]string{"lint", "--strict", chartDir}, tc.args...)...)
			if err != nil {
				t.Fatalf("helm lint: %v\n%s%s", err, out, stderr)
			}
			// Only [INFO] lines (the chart has no icon) may remain.
			for _, bad := range []string{"[WARNING]", "[ERROR]"} {
				if strings.Contains(out+stderr, bad) {
					t.Errorf("helm lint reports %s:\n%s%s", bad, out, stderr)
				}
			}
		})
	}
}

func TestDeployManifestsAreRendered(t *testing.T) {
	want := render(t, "kube-system", "-f", deployValues)
	got, err := os.ReadFile(deployFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the chart renders with %s: run make manifests", deployFile, deployValues)
	}
	if !bytes.Equal(deployYAML, want) {
		t.Fatalf("the embedded %s is stale: run make manifests and rebuild", deployFile)
	}
}

func TestChartCRDsAreManifestsCRDs(t *testing.T) {
	src, err := filepath.Glob("crds/*.yaml")
	if err != nil || len(src) == 0 {
		t.Fatalf("no CRDs in crds/: %v", err)
	}
	copied, err := filepath.Glob(filepath.Join(chartDir, "crds", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range copied {
		names = append(names, filepath.Base(c))
	}
	for _, s := range src {
		name := filepath.Base(s)
		if !slices.Contains(names, name) {
			t.Errorf("%s/crds lacks %s: run make manifests", chartDir, name)
			continue
		}
		a, _ := os.ReadFile(s)
		b, _ := os.ReadFile(filepath.Join(chartDir, "crds", name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s/crds/%s differs from crds/%s: run make manifests", chartDir, name, name)
		}
	}
	if len(copied) != len(src) {
		t.Errorf("%s/crds has %v, crds/ has %v: run make manifests", chartDir, names, src)
	}
}

// The PodGroup CRD is the one of the scheduler-plugins module the binary's Coscheduling is built
// from, so its PodGroups decode as the plugin reads them.
func TestPodGroupCRDIsTheModules(t *testing.T) {
	goBin := filepath.Join(goruntime.GOROOT(), "bin", "go")
	dir, err := exec.Command(goBin, "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/scheduler-plugins").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/scheduler-plugins: %v", err)
	}
	want, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "config", "crd", "bases", "scheduling.x-k8s.io_podgroups.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile("crds/scheduling.x-k8s.io_podgroups.yaml"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("crds/scheduling.x-k8s.io_podgroups.yaml is not the module's (%v): run make manifests", err)
	}
}

func TestClusterNameIsRequired(t *testing.T) {
	_, stderr, err := helm(t, "template", "tailor", chartDir, "--set", "nodeInstanceProfile=tailor-node")
	if err == nil {
		t.Fatal("the chart rendered without settings.clusterName")
	}
	if !strings.Contains(stderr, "settings.clusterName") {
		t.Errorf("the error does not name settings.clusterName:\n%s", stderr)
	}
}

// decode turns rendered documents into typed objects.
func decode(t *testing.T, docs [][]byte) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	for i, doc := range docs {
		obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, doc)
		}
		objs = append(objs, obj)
	}
	return objs
}

func only[T runtime.Object](t *testing.T, objs []runtime.Object) []T {
	t.Helper()
	var out []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// named is the one object of type T called name.
func named[T runtime.Object](t *testing.T, objs []runtime.Object, name string) T {
	t.Helper()
	var found []T
	for _, o := range only[T](t, objs) {
		if m, err := apimeta.Accessor(o); err == nil && m.GetName() == name {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("want one %T named %s, got %d", zero, name, len(found))
	}
	return found[0]
}

func one[T runtime.Object](t *testing.T, objs []runtime.Object) T {
	t.Helper()
	all := only[T](t, objs)
	if len(all) != 1 {
		var zero T
		t.Fatalf("want one %T, got %d", zero, len(all))
	}
	return all[0]
}

func TestDeployDocuments(t *testing.T) {
	docs, err := splitDocuments(deployYAML)
	if err != nil {
		t.Fatal(err)
	}
	if got := Deploy(); len(got) != len(docs) || len(got) == 0 {
		t.Fatalf("Deploy() returned %d documents, the file has %d", len(got), len(docs))
	}
	objs := decode(t, Deploy())
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind)
	}
	// Helm's install order: what the Deployment needs exists before it.
	if want := []string{"PodDisruptionBudget", "ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRole", "ClusterRoleBinding",
		"ClusterRoleBinding", "ClusterRoleBinding", "Role", "RoleBinding", "RoleBinding", "Service", "Deployment"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	checkRelease(t, objs, "kube-system")
}

// The chart in another namespace: leases, bindings and the config follow it; the authentication
// reader binding stays in kube-system.
func TestReleaseNamespace(t *testing.T) {
	docs, err := splitDocuments(render(t, "tailor", chartDefaults...))
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, docs)
	checkRelease(t, objs, "tailor")
	cfg := renderedConfig(t, objs)
	var le struct {
		LeaderElection struct{ ResourceNamespace, ResourceName string } `json:"leaderElection"`
	}
	if err := yaml.Unmarshal(cfg, &le); err != nil {
		t.Fatal(err)
	}
	if le.LeaderElection.ResourceNamespace != "tailor" || le.LeaderElection.ResourceName != "tailor-scheduler" {
		t.Errorf("leaderElection %+v, want the lease tailor/tailor-scheduler", le.LeaderElection)
	}
}

// checkRelease checks the security settings and wiring of one rendered release in namespace ns.
func checkRelease(t *testing.T, objs []runtime.Object, ns string) {
	t.Helper()
	sa := one[*corev1.ServiceAccount](t, objs)
	dep := one[*appsv1.Deployment](t, objs)
	cm := one[*corev1.ConfigMap](t, objs)
	pod := dep.Spec.Template.Spec
	podLabels := labels.Set(dep.Spec.Template.Labels)

	for _, o := range objs {
		m, err := apimeta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		if m.GetNamespace() != "" && m.GetNamespace() != ns && m.GetName() != "tailor-extension-apiserver-authentication-reader" {
			t.Errorf("%s %s is in namespace %s, not the release's %s", o.GetObjectKind().GroupVersionKind().Kind, m.GetName(), m.GetNamespace(), ns)
		}
	}

	// RBAC: nothing is a wildcard; every subject is the service account.
	var rules []rbacv1.PolicyRule
	var subjects []rbacv1.Subject
	var roleRefs []string // namespace:kind/name, no namespace for ClusterRoleBindings
	for _, o := range objs {
		switch v := o.(type) {
		case *rbacv1.ClusterRole:
			rules = append(rules, v.Rules...)
		case *rbacv1.Role:
			rules = append(rules, v.Rules...)
		case *rbacv1.ClusterRoleBinding:
			subjects = append(subjects, v.Subjects...)
			roleRefs = append(roleRefs, v.RoleRef.Kind+"/"+v.RoleRef.Name)
		case *rbacv1.RoleBinding:
			subjects = append(subjects, v.Subjects...)
			roleRefs = append(roleRefs, v.Namespace+":"+v.RoleRef.Kind+"/"+v.RoleRef.Name)
		}
	}
	for _, r := range rules {
		for _, list := range [][]string{r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs} {
			if slices.Contains(list, "*") {
				t.Errorf("rule %+v uses *", r)
			}
		}
	}
	for _, s := range subjects {
		if s.Kind != "ServiceAccount" || s.Name != sa.Name || s.Namespace != ns {
			t.Errorf("subject %+v, want the service account %s/%s", s, ns, sa.Name)
		}
	}
	cr := named[*rbacv1.ClusterRole](t, objs, "tailor")
	role := named[*rbacv1.Role](t, objs, "tailor-leases")
	for _, want := range []string{"ClusterRole/system:kube-scheduler", "ClusterRole/system:volume-scheduler", "ClusterRole/" + cr.Name,
		"kube-system:Role/extension-apiserver-authentication-reader", ns + ":Role/" + role.Name} {
		if !slices.Contains(roleRefs, want) {
			t.Errorf("no binding to %s among %v", want, roleRefs)
		}
	}

	allows := func(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	for _, want := range []struct{ group, resource, verb string }{
		{"tailor.dev", "claims", "create"}, {"tailor.dev", "claims/status", "update"}, {"tailor.dev", "claims", "delete"},
		{"", "nodes", "delete"}, {"", "nodes", "update"}, {"", "nodes", "patch"}, {"", "pods/eviction", "create"},
		{"policy", "poddisruptionbudgets", "watch"}, {"apps", "daemonsets", "watch"},
		{"", "events", "create"}, {"events.k8s.io", "events", "patch"},
	} {
		if !allows(cr.Rules, want.group, want.resource, want.verb) {
			t.Errorf("ClusterRole %s does not allow %s on %s.%s", cr.Name, want.verb, want.resource, want.group)
		}
	}
	for _, notWanted := range []struct{ group, resource, verb string }{
		{"", "pods", "delete"}, {"coordination.k8s.io", "leases", "create"}, {"", "secrets", "get"}, {"tailor.dev", "claims", "deletecollection"},
	} {
		if allows(cr.Rules, notWanted.group, notWanted.resource, notWanted.verb) {
			t.Errorf("ClusterRole %s allows %s on %s.%s", cr.Name, notWanted.verb, notWanted.resource, notWanted.group)
		}
	}

	// The scrapers' role: get /metrics, nothing else, bound to nobody unless metrics.readers says.
	if reader := named[*rbacv1.ClusterRole](t, objs, "tailor-metrics-reader"); len(reader.Rules) != 1 ||
		!slices.Equal(reader.Rules[0].NonResourceURLs, []string{"/metrics"}) || !slices.Equal(reader.Rules[0].Verbs, []string{"get"}) ||
		len(reader.Rules[0].Resources) > 0 {
		t.Errorf("ClusterRole tailor-metrics-reader rules %+v, want get on /metrics only", reader.Rules)
	}

	// Leases: create anywhere in the namespace, the rest only on the two leases.
	if role.Namespace != ns {
		t.Errorf("lease Role in %s, want %s", role.Namespace, ns)
	}
	for _, r := range role.Rules {
		if !slices.Equal(r.APIGroups, []string{"coordination.k8s.io"}) || !slices.Equal(r.Resources, []string{"leases"}) {
			t.Errorf("lease Role rule %+v is about more than leases", r)
		}
		switch {
		case len(r.ResourceNames) == 0:
			if !slices.Equal(r.Verbs, []string{"create"}) {
				t.Errorf("lease Role grants %v on every lease, want only create", r.Verbs)
			}
		default:
			if !slices.Equal(r.ResourceNames, []string{"tailor-scheduler", "tailor-controllers"}) || !slices.Equal(r.Verbs, []string{"get", "update", "patch"}) {
				t.Errorf("lease Role rule %+v, want get, update, patch on tailor-scheduler and tailor-controllers", r)
			}
		}
	}
	if len(role.Rules) != 2 {
		t.Errorf("lease Role has %d rules, want 2", len(role.Rules))
	}

	// The Deployment.
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", dep.Spec.Replicas)
	}
	if pod.ServiceAccountName != sa.Name {
		t.Errorf("serviceAccountName %q, want %q", pod.ServiceAccountName, sa.Name)
	}
	if pod.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName %q", pod.PriorityClassName)
	}
	if pod.SchedulerName != "" {
		t.Errorf("Tailor's own pods are placed by %q; they must be placed by the default scheduler", pod.SchedulerName)
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v, want runAsNonRoot, runAsUser 65532, seccomp RuntimeDefault", psc)
	}
	if !slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Key == "CriticalAddonsOnly" && tol.Operator == corev1.TolerationOpExists
	}) {
		t.Errorf("tolerations %+v lack CriticalAddonsOnly", pod.Tolerations)
	}
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || !slices.ContainsFunc(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
		func(term corev1.PodAffinityTerm) bool {
			return term.TopologyKey == corev1.LabelHostname && selects(t, term.LabelSelector, podLabels)
		}) {
		t.Errorf("no required pod anti-affinity on %s between the replicas: %+v", corev1.LabelHostname, pod.Affinity)
	}
	if !slices.ContainsFunc(pod.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
		return c.TopologyKey == corev1.LabelTopologyZone && selects(t, c.LabelSelector, podLabels)
	}) {
		t.Errorf("no topology spread over %s: %+v", corev1.LabelTopologyZone, pod.TopologySpreadConstraints)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
		*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v, want readOnlyRootFilesystem, no privilege escalation, drop ALL", sc)
	}
	if !slices.Contains(c.Args, "--config=/etc/tailor/"+SchedulerConfigKey) || !slices.Contains(c.Args, "-v=2") {
		t.Errorf("args %v", c.Args)
	}
	if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
		return v.ConfigMap != nil && v.ConfigMap.Name == cm.Name
	}) || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/tailor" }) {
		t.Errorf("ConfigMap %s is not mounted at /etc/tailor: %+v %+v", cm.Name, pod.Volumes, c.VolumeMounts)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
	}) {
		t.Errorf("no POD_NAMESPACE from metadata.namespace in %+v", c.Env)
	}
	for _, probe := range []struct {
		p    *corev1.Probe
		path string
	}{{c.LivenessProbe, "/healthz"}, {c.ReadinessProbe, "/readyz"}} {
		if probe.p == nil || probe.p.HTTPGet == nil || probe.p.HTTPGet.Path != probe.path || probe.p.HTTPGet.Scheme != corev1.URISchemeHTTPS ||
			(probe.p.HTTPGet.Port.IntValue() != 10259 && !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
				return p.Name == probe.p.HTTPGet.Port.String() && p.ContainerPort == 10259
			})) {
			t.Errorf("probe %+v, want HTTPS GET %s on 10259", probe.p, probe.path)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resources %+v, want cpu and memory requests", c.Resources)
	}

	pdb := one[*policyv1.PodDisruptionBudget](t, objs)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || !selects(t, pdb.Spec.Selector, podLabels) {
		t.Errorf("PodDisruptionBudget %+v, want maxUnavailable 1 over the pods", pdb.Spec)
	}
	svc := one[*corev1.Service](t, objs)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "https-metrics" || svc.Spec.Ports[0].Port != 10259 ||
		!labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Errorf("metrics Service %+v, want https-metrics on 10259 over the pods", svc.Spec)
	}
}

func selects(t *testing.T, sel *metav1.LabelSelector, set labels.Set) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(set)
}

// renderedConfig is the scheduler configuration in the rendered ConfigMap.
func renderedConfig(t *testing.T, objs []runtime.Object) []byte {
	t.Helper()
	cfg, ok := one[*corev1.ConfigMap](t, objs).Data[SchedulerConfigKey]
	if !ok {
		t.Fatalf("the ConfigMap has no %s", SchedulerConfigKey)
	}
	return []byte(cfg)
}

// loadConfig reads a scheduler configuration the way the scheduler does (kube-scheduler's own
// loader and validation) and returns Tailor's args from it, validated by Tailor's validation.
func loadConfig(t *testing.T, cfg []byte) (*config.TailorArgs, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), SchedulerConfigKey)
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	kcfg, err := scheduleroptions.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler cannot load the configuration: %w", err)
	}
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(kcfg); err != nil {
		return nil, fmt.Errorf("kube-scheduler refuses the configuration: %w", err)
	}
	prof, err := profile.Load(cfg, "tailor")
	if err != nil {
		return nil, fmt.Errorf("profile.Load: %w", err)
	}
	if err := validation.ValidateTailorArgs(field.NewPath("TailorArgs"), prof.Tailor); err != nil {
		return nil, fmt.Errorf("Tailor refuses its args: %w", err)
	}
	return prof.Tailor, nil
}

func load(t *testing.T, cfg []byte) *config.TailorArgs {
	t.Helper()
	a, err := loadConfig(t, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, cfg)
	}
	return a
}

// Settings the scheduler would refuse are refused by the same loading code: the checks above
// prove something. The chart's schema refuses these values before rendering
// (TestValuesSchemaRefusesBadValues); they are rendered here without it, as by `helm template
// --skip-schema-validation`, because the scheduler's validation is the authority and must hold
// on its own.
func TestSchedulerConfigRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"settings.ipFamily=ipv5", "ipFamily"},
		{"settings.region=Mars", "region"},
		{"settings.batch.idleDuration=soon", `invalid duration "soon"`},
		{"settings.consolidation.minSavingsPercent=95", "consolidationMinSavingsPercent"},
		{"settings.interruptionQueue=arn:aws:sqs:us-east-1:123456789012:q", "interruptionQueue"},
		{"pools[0].capacityTypes[0]=dedicated", "capacityTypes"},
		{"pools[0].capacityTypes[0]=reserved", "capacityReservationSelector"},
		{"gangScheduling.zonePolicy=Nearby", "gangZonePolicy"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			docs, err := splitDocuments(render(t, "kube-system", "--skip-schema-validation", "-f", deployValues, "--set", tc.set))
			if err != nil {
				t.Fatal(err)
			}
			_, err = loadConfig(t, renderedConfig(t, decode(t, docs)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// testCABundle is a self-signed CA certificate, base64-encoded PEM as DescribeCluster gives it.
func testCABundle(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestSchedulerConfigLoads(t *testing.T) {
	ca := testCABundle(t)
	for _, tc := range []struct {
		name  string
		args  []string
		check func(t *testing.T, a *config.TailorArgs)
	}{{
		name: "example values",
		args: []string{"-f", deployValues},
		check: func(t *testing.T, a *config.TailorArgs) {
			// No version: the AMIs follow the control plane's.
			if a.ClusterName != "sandbox" || a.Region != "us-east-1" || a.KubernetesVersion != "" {
				t.Errorf("cluster %q region %q version %q", a.ClusterName, a.Region, a.KubernetesVersion)
			}
			var names []string
			for _, p := range a.Pools {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, []string{"general", "spot", "gpu"}) {
				t.Errorf("pools %v", names)
			}
			for _, p := range a.Pools {
				if p.InstanceProfile != "tailor-node" {
					t.Errorf("pool %s has instanceProfile %q, want nodeInstanceProfile's tailor-node", p.Name, p.InstanceProfile)
				}
			}
			if a.ClusterEndpoint != "" || a.ClusterCABundle != "" || a.ServiceCIDR != "" || a.IPFamily != "" {
				t.Errorf("the example sets cluster bootstrap overrides: %+v", a)
			}
		},
	}, {
		name: "chart defaults",
		args: []string{"--set", "settings.clusterName=prod", "--set", "nodeInstanceProfile=prod-node"},
		check: func(t *testing.T, a *config.TailorArgs) {
			if a.ClusterName != "prod" || a.Region != "" || len(a.Pools) != 1 || a.InterruptionQueue != "" {
				t.Errorf("cluster %q region %q pools %d interruption queue %q", a.ClusterName, a.Region, len(a.Pools), a.InterruptionQueue)
			}
			if len(a.Pools) > 0 && a.Pools[0].InstanceProfile != "prod-node" {
				t.Errorf("the default pool's instanceProfile is %q, want nodeInstanceProfile's prod-node", a.Pools[0].InstanceProfile)
			}
		},
	}, {
		name: "every setting",
		args: []string{"-f", deployValues,
			"--set", "settings.clusterName=prod_1", "--set", "settings.region=eu-west-1", "--set", "settings.kubernetesVersion=1.33",
			"--set", "settings.clusterEndpoint=https://ABC.gr7.eu-west-1.eks.amazonaws.com", "--set", "settings.clusterCABundle=" + ca,
			"--set", "settings.serviceCIDR=fd00:10:96::/112", "--set", "settings.ipFamily=ipv6",
			"--set", "settings.registrationTimeout=20m", "--set", "settings.batch.idleDuration=250ms", "--set", "settings.batch.maxDuration=5s",
			"--set", "settings.consolidation.interval=1m", "--set", "settings.consolidation.minSavingsPercent=0",
			"--set", "settings.interruptionQueue=https://sqs.eu-west-1.amazonaws.com/123456789012/tailor-prod",
			"--set", "settings.rebalanceRecommendations=Replace", "--set", "gangScheduling.zonePolicy=AnyZone"},
		check: func(t *testing.T, a *config.TailorArgs) {
			got := []any{a.ClusterName, a.Region, a.KubernetesVersion, a.ClusterEndpoint, a.ClusterCABundle == ca, a.ServiceCIDR, a.IPFamily,
				a.RegistrationTimeout.Duration, a.BatchIdleDuration.Duration, a.BatchMaxDuration.Duration, a.ConsolidationInterval.Duration,
				a.ConsolidationMinSavingsPercent, a.InterruptionQueue, a.RebalanceRecommendations, a.GangZonePolicy}
			want := []any{"prod_1", "eu-west-1", "1.33", "https://ABC.gr7.eu-west-1.eks.amazonaws.com", true, "fd00:10:96::/112", "ipv6",
				20 * time.Minute, 250 * time.Millisecond, 5 * time.Second, time.Minute, int32(0), "https://sqs.eu-west-1.amazonaws.com/123456789012/tailor-prod",
				"Replace", "AnyZone"}
			if !slices.Equal(got, want) {
				t.Errorf("args %v, want %v", got, want)
			}
		},
	}, {
		name: "a pool's own instance profile",
		args: []string{"-f", deployValues, "--set", "pools[1].instanceProfile=arn:aws:iam::123456789012:instance-profile/spot/tailor-spot"},
		check: func(t *testing.T, a *config.TailorArgs) {
			var got []string
			for _, p := range a.Pools {
				got = append(got, p.InstanceProfile)
			}
			if want := []string{"tailor-node", "arn:aws:iam::123456789012:instance-profile/spot/tailor-spot", "tailor-node"}; !slices.Equal(got, want) {
				t.Errorf("instance profiles %v, want %v", got, want)
			}
		},
	}, {
		// The schema lets every pool field through in its ordinary form.
		name: "every pool field",
		args: []string{"--set", "settings.clusterName=prod", "-f", valuesFile(t, everyPoolField)},
		check: func(t *testing.T, a *config.TailorArgs) {
			if len(a.Pools) != 1 {
				t.Fatalf("%d pools, want 1", len(a.Pools))
			}
			p := a.Pools[0]
			if p.Name != "batch-2" || p.Weight != 100 || len(p.Requirements) != 5 || len(p.Disruption.Budgets) != 2 ||
				p.Limits.Cpu().Value() != 1000 || p.Disruption.ExpireAfter.Duration != 720*time.Hour || p.AMI != "ami-0123456789abcdef0" {
				t.Errorf("pool %+v", p)
			}
			if len(p.BlockDeviceMappings) != 1 || p.BlockDeviceMappings[0].VolumeSize.String() != "200Gi" || p.BlockDeviceMappings[0].IOPS != 6000 ||
				p.MetadataOptions.HTTPPutResponseHopLimit != 2 || p.Tags["team"] != "data" || !p.DetailedMonitoring {
				t.Errorf("launch settings %+v %+v %v %v", p.BlockDeviceMappings, p.MetadataOptions, p.Tags, p.DetailedMonitoring)
			}
			if p.Requirements[4].MinValues != 3 || p.CapacityReservationSelector.Tags["team"] != "data" || p.ImageFamily != "bottlerocket" ||
				!strings.Contains(p.UserData, "lockdown") || p.AssociatePublicIPAddress == nil || *p.AssociatePublicIPAddress ||
				p.InstanceStorePolicy != "RAID0" || p.Kubelet.MaxPods != 110 || p.Kubelet.MaxPodsPolicy != "PrefixDelegation" ||
				p.Kubelet.EvictionSoftGracePeriod["memory.available"].Duration != 2*time.Minute || len(p.Kubelet.ClusterDNS) != 1 {
				t.Errorf("node settings: minValues %d, reservations %v, family %s, user data %q, public IP %v, instance store %s, kubelet %+v",
					p.Requirements[4].MinValues, p.CapacityReservationSelector, p.ImageFamily, p.UserData, p.AssociatePublicIPAddress, p.InstanceStorePolicy, p.Kubelet)
			}
		},
	}, {
		name: "consolidation savings",
		args: []string{"-f", deployValues, "--set", "settings.consolidation.minSavingsPercent=25"},
		check: func(t *testing.T, a *config.TailorArgs) {
			if a.ConsolidationMinSavingsPercent != 25 {
				t.Errorf("consolidationMinSavingsPercent %d, want 25", a.ConsolidationMinSavingsPercent)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := splitDocuments(render(t, "kube-system", tc.args...))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, load(t, renderedConfig(t, decode(t, docs))))
		})
	}
}

// manifests.SchedulerConfig is the rendered ConfigMap's configuration, and it loads.
func TestSchedulerConfigIsTheRenderedOne(t *testing.T) {
	cfg, err := LoadSchedulerConfig()
	if err != nil {
		t.Fatal(err)
	}
	if want := renderedConfig(t, decode(t, Deploy())); !bytes.Equal(cfg, want) || !bytes.Equal(SchedulerConfig, want) {
		t.Fatalf("SchedulerConfig is not the ConfigMap's %s", SchedulerConfigKey)
	}
	load(t, cfg)
	if _, err := schedulerConfig([]byte("apiVersion: v1\nkind: ServiceAccount\n")); err == nil || !strings.Contains(err.Error(), "make manifests") {
		t.Errorf("a file without the ConfigMap gives %v", err)
	}
}

// Gang scheduling is on by default, with Coscheduling's own wait; the chart value turns it off
// and sets the wait, and every variant loads.
func TestGangSchedulingValues(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		contains []string
		lacks    []string
	}{
		{"default", nil, []string{"name: Coscheduling", "name: PrioritySort"}, []string{"permitWaitingTimeSeconds"}},
		{"wait", []string{"--set", "gangScheduling.permitWaitingTimeSeconds=300"}, []string{"permitWaitingTimeSeconds: 300"}, nil},
		{"off", []string{"--set", "gangScheduling.enabled=false"}, nil, []string{"Coscheduling", "PrioritySort"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := splitDocuments(render(t, "kube-system", append([]string{"-f", deployValues}, tc.args...)...))
			if err != nil {
				t.Fatal(err)
			}
			cfg := renderedConfig(t, decode(t, docs))
			for _, s := range tc.contains {
				if !strings.Contains(string(cfg), s) {
					t.Errorf("the configuration lacks %q:\n%s", s, cfg)
				}
			}
			for _, s := range tc.lacks {
				if strings.Contains(string(cfg), s) {
					t.Errorf("the configuration has %q:\n%s", s, cfg)
				}
			}
			load(t, cfg)
		})
	}
}

// everyPoolField is a pool that sets every field TailorArgs has, each as a user would write it.
const everyPoolField = `pools:
- name: batch-2
  weight: 100
  requirements:
  - {key: tailor.dev/instance-category, operator: In, values: [c, m]}
  - {key: tailor.dev/instance-generation, operator: Gt, values: ["5"]}
  - {key: tailor.dev/instance-gpu-count, operator: DoesNotExist}
  - {key: topology.kubernetes.io/zone, operator: NotIn, values: [us-east-1e]}
  - {key: tailor.dev/instance-family, operator: Exists, minValues: 3}
  capacityTypes: [reserved, spot, on-demand]
  capacityReservationSelector: {tags: {team: data}}
  zones: [us-east-1a, us-east-1b]
  subnetSelector: {ids: [subnet-0123456789abcdef0]}
  securityGroupSelector: {tags: {tailor.dev/discovery: prod, team: "*"}}
  ami: ami-0123456789abcdef0
  imageFamily: bottlerocket
  userData: |
    [settings.kernel]
    lockdown = "integrity"
  associatePublicIPAddress: false
  instanceProfile: arn:aws:iam::123456789012:instance-profile/nodes/tailor-node
  labels: {workload-class: batch, example.com/team: data}
  taints: [{key: example.com/batch, value: "true", effect: NoSchedule}]
  startupTaints: [{key: node.cilium.io/agent-not-ready, effect: NoExecute}]
  blockDeviceMappings:
  - {deviceName: /dev/xvda, volumeSize: 200Gi, volumeType: gp3, iops: 6000, throughput: 250, encrypted: true,
     kmsKeyID: "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab", deleteOnTermination: true}
  metadataOptions: {httpTokens: required, httpPutResponseHopLimit: 2, httpProtocolIPv6: false}
  tags: {team: data, cost-center: "4711"}
  detailedMonitoring: true
  instanceStorePolicy: RAID0
  kubelet:
    maxPods: 110
    maxPodsPolicy: PrefixDelegation
    podsPerCore: 20
    systemReserved: {cpu: 100m, memory: 200Mi}
    kubeReserved: {cpu: 200m, memory: 1Gi, ephemeral-storage: 2Gi}
    evictionHard: {memory.available: 5%, nodefs.available: 10%}
    evictionSoft: {memory.available: 10%}
    evictionSoftGracePeriod: {memory.available: 2m}
    evictionMaxPodGracePeriod: 60
    clusterDNS: [169.254.20.10]
  limits: {cpu: 1000, memory: 4000Gi}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 1m30s
    expireAfter: 720h
    budgets:
    - {nodes: "20%"}
    - {nodes: "0", schedule: "0 9 * * 1-5", duration: 8h}
`

// valuesFile writes a values file for one test and returns its path.
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// values.schema.json refuses a bad value before anything renders, in `helm template` (as in
// install and upgrade) and `helm lint`, with the value's path in the message. Pools are changed
// on the example values: a --set of pools[i] without a values file holding pools would replace
// the chart's whole list.
func TestValuesSchemaRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// want are the parts of the message: the path of the bad value and what is wrong.
		want []string
	}{
		{"unknown capacity type", []string{"--set", "pools[0].capacityTypes[0]=dedicated"}, []string{"/pools/0/capacityTypes/0", "'on-demand', 'spot', 'reserved'"}},
		{"weight out of range", []string{"--set", "pools[0].weight=101"}, []string{"/pools/0/weight", "maximum"}},
		{"volume size", []string{"--set", "pools[0].blockDeviceMappings[0].deviceName=/dev/xvda", "--set", "pools[0].blockDeviceMappings[0].volumeSize=20G"},
			[]string{"/pools/0/blockDeviceMappings/0/volumeSize"}},
		{"hop limit", []string{"--set", "pools[0].metadataOptions.httpPutResponseHopLimit=65"}, []string{"/pools/0/metadataOptions/httpPutResponseHopLimit"}},
		{"Tailor's tag", []string{"--set", "pools[0].tags.tailor\\.dev/claim=x"}, []string{"invalid propertyName 'tailor.dev/claim'"}},
		{"no instance profile", []string{"--set", "nodeInstanceProfile="}, []string{"/nodeInstanceProfile", "/pools/0': missing property 'instanceProfile'"}},
		{"instance profile not a name", []string{"--set", "pools[0].instanceProfile=arn:aws:iam::123456789012:role/tailor-node"}, []string{"/pools/0/instanceProfile"}},
		{"pool name", []string{"--set", "pools[1].name=Spot_Pool"}, []string{"/pools/1/name"}},
		{"no pools", []string{"-f", valuesFile(t, "pools: []\n")}, []string{"/pools", "minItems"}},
		{"unknown pool field", []string{"--set", "pools[0].zone=us-east-1a"}, []string{"/pools/0", "'zone' not allowed"}},
		{"requirement key", []string{"--set", "pools[0].requirements[0].key=karpenter.k8s.aws/instance-family"}, []string{"/pools/0/requirements/0/key"}},
		{"requirement operator", []string{"--set", "pools[0].requirements[0].operator=Like"}, []string{"/pools/0/requirements/0/operator"}},
		{"Gt of a word", []string{"--set", "pools[0].requirements[1].values[0]=four"}, []string{"/pools/0/requirements/1/values/0"}},
		{"Gt of a number, not a string", []string{"--set", "pools[0].requirements[1].values[0]=4"}, []string{"/pools/0/requirements/1/values/0", "want string"}},
		{"negative limit", []string{"--set", "pools[0].limits.cpu=-5"}, []string{"/pools/0/limits/cpu"}},
		{"limit that is no quantity", []string{"--set", "pools[0].limits.memory=lots"}, []string{"/pools/0/limits/memory"}},
		{"limit of another resource", []string{"--set", "pools[0].limits.nvidia\\.com/gpu=8"}, []string{"/pools/0/limits", "'nvidia.com/gpu' not allowed"}},
		{"duration without a unit", []string{"--set-string", "pools[0].disruption.consolidateAfter=30"}, []string{"/pools/0/disruption/consolidateAfter"}},
		{"duration as a number", []string{"--set", "pools[0].disruption.expireAfter=720"}, []string{"/pools/0/disruption/expireAfter", "want string"}},
		{"consolidation policy", []string{"--set", "pools[0].disruption.consolidationPolicy=Always"}, []string{"/pools/0/disruption/consolidationPolicy"}},
		{"budget over 100%", []string{"--set", "pools[0].disruption.budgets[0].nodes=200%"}, []string{"/pools/0/disruption/budgets/0/nodes"}},
		{"budget schedule without a duration", []string{"--set", "pools[0].disruption.budgets[0].nodes=1", "--set", "pools[0].disruption.budgets[0].schedule=@daily"}, []string{"/pools/0/disruption/budgets/0", "'duration' required"}},
		{"taint effect", []string{"--set", "pools[1].taints[0].effect=NoEvict"}, []string{"/pools/1/taints/0/effect"}},
		{"ami", []string{"--set", "pools[0].ami=ubuntu"}, []string{"/pools/0/ami"}},
		{"zone", []string{"--set", "pools[0].zones[0]=us-east-1"}, []string{"/pools/0/zones/0"}},
		{"subnet id", []string{"--set", "pools[0].subnetSelector.ids[0]=sg-123"}, []string{"/pools/0/subnetSelector/ids/0"}},
		{"ipFamily", []string{"--set", "settings.ipFamily=ipv5"}, []string{"/settings/ipFamily"}},
		{"region", []string{"--set", "settings.region=Mars"}, []string{"/settings/region"}},
		{"Kubernetes version as a number", []string{"-f", valuesFile(t, "settings: {kubernetesVersion: 1.30}\n")}, []string{"/settings/kubernetesVersion", "want string"}},
		{"batch duration", []string{"--set", "settings.batch.idleDuration=soon"}, []string{"/settings/batch/idleDuration"}},
		{"savings over 90%", []string{"--set", "settings.consolidation.minSavingsPercent=95"}, []string{"/settings/consolidation/minSavingsPercent"}},
		{"interruption queue ARN", []string{"--set", "settings.interruptionQueue=arn:aws:sqs:us-east-1:123456789012:q"}, []string{"/settings/interruptionQueue"}},
		{"gang zone policy", []string{"--set", "gangScheduling.zonePolicy=Nearby"}, []string{"/gangScheduling/zonePolicy"}},
		{"rebalance setting", []string{"--set", "settings.rebalanceRecommendations=Drain"}, []string{"/settings/rebalanceRecommendations"}},
		{"pull policy", []string{"--set", "controller.image.pullPolicy=Sometimes"}, []string{"/controller/image/pullPolicy"}},
		{"digest", []string{"--set", "controller.image.digest=latest"}, []string{"/controller/image/digest"}},
		{"metrics reader without namespace", []string{"--set", "metrics.readers[0].kind=ServiceAccount", "--set", "metrics.readers[0].name=prometheus"}, []string{"/metrics/readers/0", "'namespace'"}},
		{"scrape interval", []string{"--set", "serviceMonitor.interval=soon"}, []string{"/serviceMonitor/interval"}},
		{"misspelt value", []string{"--set", "setting.clusterName=prod"}, []string{"'setting' not allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-f", deployValues}, tc.args...)
			for _, cmd := range [][]string{{"template", "tailor", chartDir}, {"lint", "--strict", chartDir}} {
				out, stderr, err := helm(t, append(cmd, args...)...)
				if err == nil {
					t.Errorf("helm %s accepts %v", cmd[0], tc.args)
					continue
				}
				for _, w := range tc.want {
					if !strings.Contains(out+stderr, w) {
						t.Errorf("helm %s refuses %v without naming %q:\n%s%s", cmd[0], tc.args, w, out, stderr)
					}
				}
			}
		})
	}
}

// Without the schema (helm template --skip-schema-validation), the chart still refuses a pool
// without an instance profile, naming it: a node launched without one never joins.
func TestInstanceProfileIsRequired(t *testing.T) {
	_, stderr, err := helm(t, "template", "tailor", chartDir, "--skip-schema-validation", "--set", "settings.clusterName=x")
	if err == nil {
		t.Fatal("the chart rendered a pool without an instance profile")
	}
	for _, want := range []string{"pools[0].instanceProfile", "nodeInstanceProfile"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the error does not name %s:\n%s", want, stderr)
		}
	}
}

// The schema's lists of names are the scheduler validation's, so it refuses nothing the
// scheduler takes and lets nothing through that it refuses.
func TestValuesSchemaMatchesValidation(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs struct {
			AMIAlias    struct{ Enum []string } `json:"amiAlias"`
			Requirement struct {
				Properties struct{ Key struct{ Enum []string } }
			} `json:"requirement"`
			Pool struct {
				Properties struct {
					Disruption struct {
						Properties struct{ ConsolidationPolicy struct{ Enum []string } }
					}
				}
			} `json:"pool"`
		} `json:"definitions"`
		Properties struct {
			Settings struct {
				Properties struct {
					RebalanceRecommendations struct{ Enum []string }
				}
			}
			GangScheduling struct {
				Properties struct{ ZonePolicy struct{ Enum []string } }
			}
		}
	}
	if err := yaml.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	for _, c := range []struct {
		what         string
		schema, want []string
	}{
		{"requirement keys", schema.Defs.Requirement.Properties.Key.Enum, sets.List(validation.RequirementKeys)},
		{"AMI aliases", schema.Defs.AMIAlias.Enum, sets.List(validation.AMIAliases)},
		{"consolidation policies", schema.Defs.Pool.Properties.Disruption.Properties.ConsolidationPolicy.Enum, sorted([]string{config.WhenEmpty, config.WhenEmptyOrUnderutilized})},
		{"gang zone policies", schema.Properties.GangScheduling.Properties.ZonePolicy.Enum, sorted([]string{"", config.GangSameZone, config.GangAnyZone})},
		{"rebalance settings", schema.Properties.Settings.Properties.RebalanceRecommendations.Enum, sorted([]string{"", config.RebalanceAdvisory, config.RebalanceReplace})},
	} {
		if got := sorted(c.schema); !slices.Equal(got, c.want) {
			t.Errorf("the schema's %s are %v, the scheduler's %v", c.what, got, c.want)
		}
	}
}

// The chart's default image tag is its version, and the pull policy follows the tag: a tag that
// names one build for good is pulled once, a tag that moves on every pull.
func TestImagePullPolicy(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name, image, policy string
		args                []string
	}{
		{"chart version", "tailor-scheduler:0.1.0", "IfNotPresent", nil},
		{"release tag", "tailor-scheduler:v0.2.0", "IfNotPresent", []string{"--set", "controller.image.tag=v0.2.0"}},
		{"commit after a release", "tailor-scheduler:0.1.0-3-gabc1234", "IfNotPresent", []string{"--set", "controller.image.tag=0.1.0-3-gabc1234"}},
		{"uncommitted changes", "tailor-scheduler:0.1.0-3-gabc1234-dirty", "Always", []string{"--set", "controller.image.tag=0.1.0-3-gabc1234-dirty"}},
		{"dev", "tailor-scheduler:dev", "Always", []string{"--set", "controller.image.tag=dev"}},
		{"latest", "tailor-scheduler:latest", "Always", []string{"--set", "controller.image.tag=latest"}},
		{"commit without a release", "tailor-scheduler:abc1234", "Always", []string{"--set", "controller.image.tag=abc1234"}},
		{"digest", "tailor-scheduler@" + digest, "IfNotPresent", []string{"--set", "controller.image.tag=dev", "--set", "controller.image.digest=" + digest}},
		{"policy set", "tailor-scheduler:dev", "IfNotPresent", []string{"--set", "controller.image.tag=dev", "--set", "controller.image.pullPolicy=IfNotPresent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := splitDocuments(render(t, "kube-system", append([]string{"-f", deployValues}, tc.args...)...))
			if err != nil {
				t.Fatal(err)
			}
			c := one[*appsv1.Deployment](t, decode(t, docs)).Spec.Template.Spec.Containers[0]
			if c.Image != tc.image || string(c.ImagePullPolicy) != tc.policy {
				t.Errorf("image %s pulled %s, want %s pulled %s", c.Image, c.ImagePullPolicy, tc.image, tc.policy)
			}
		})
	}
}

func TestChartAppVersionIsItsVersion(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version == "" || chart.AppVersion != chart.Version {
		t.Errorf("Chart.yaml: version %q, appVersion %q: the default image tag is the chart's version", chart.Version, chart.AppVersion)
	}
}

// metrics.readers binds the metrics reader role to the scrapers given, and to nobody else.
func TestMetricsReaders(t *testing.T) {
	docs, err := splitDocuments(render(t, "monitoring-test", append(slices.Clone(chartDefaults),
		"--set", "metrics.readers[0].kind=ServiceAccount", "--set", "metrics.readers[0].name=prometheus-k8s", "--set", "metrics.readers[0].namespace=monitoring",
		"--set", "metrics.readers[1].kind=Group", "--set", "metrics.readers[1].name=scrapers")...))
	if err != nil {
		t.Fatal(err)
	}
	crb := named[*rbacv1.ClusterRoleBinding](t, decode(t, docs), "tailor-metrics-reader")
	want := []rbacv1.Subject{
		{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: "monitoring"},
		{Kind: "Group", Name: "scrapers", APIGroup: rbacv1.GroupName},
	}
	if crb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tailor-metrics-reader"}) || !slices.Equal(crb.Subjects, want) {
		t.Errorf("ClusterRoleBinding %+v %+v, want %+v bound to tailor-metrics-reader", crb.RoleRef, crb.Subjects, want)
	}
}

// The ServiceMonitor is off by default; on, it scrapes the metrics Service's port over HTTPS
// with Prometheus's own token.
func TestServiceMonitor(t *testing.T) {
	kinds := func(args ...string) (map[string][]map[string]any, []runtime.Object) {
		docs, err := splitDocuments(render(t, "kube-system", append(slices.Clone(chartDefaults), args...)...))
		if err != nil {
			t.Fatal(err)
		}
		byKind := map[string][]map[string]any{}
		var typed [][]byte
		for _, doc := range docs {
			var obj map[string]any
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				t.Fatal(err)
			}
			kind, _ := obj["kind"].(string)
			byKind[kind] = append(byKind[kind], obj)
			if kind != "ServiceMonitor" {
				typed = append(typed, doc)
			}
		}
		return byKind, decode(t, typed)
	}
	if off, _ := kinds(); len(off["ServiceMonitor"]) != 0 {
		t.Errorf("a ServiceMonitor by default")
	}
	on, objs := kinds("--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.additionalLabels.release=kube-prometheus-stack")
	if len(on["ServiceMonitor"]) != 1 {
		t.Fatalf("%d ServiceMonitors, want 1", len(on["ServiceMonitor"]))
	}
	raw, err := yaml.Marshal(on["ServiceMonitor"][0])
	if err != nil {
		t.Fatal(err)
	}
	var sm struct {
		Metadata struct {
			Namespace string
			Labels    map[string]string
		}
		Spec struct {
			NamespaceSelector struct{ MatchNames []string } `json:"namespaceSelector"`
			Selector          metav1.LabelSelector
			Endpoints         []struct {
				Port, Scheme, Path, Interval, BearerTokenFile string
				TLSConfig                                     struct{ InsecureSkipVerify bool } `json:"tlsConfig"`
			}
		}
	}
	if err := yaml.Unmarshal(raw, &sm); err != nil {
		t.Fatal(err)
	}
	svc := one[*corev1.Service](t, objs)
	if sm.Metadata.Namespace != "kube-system" || sm.Metadata.Labels["release"] != "kube-prometheus-stack" ||
		!slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{"kube-system"}) || !selects(t, &sm.Spec.Selector, svc.Labels) {
		t.Errorf("ServiceMonitor %+v does not select the metrics Service %s/%s (labels %v)", sm, svc.Namespace, svc.Name, svc.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("endpoints %+v, want one", sm.Spec.Endpoints)
	}
	e := sm.Spec.Endpoints[0]
	if e.Port != svc.Spec.Ports[0].Name || e.Scheme != "https" || e.Path != "/metrics" || e.Interval != "30s" ||
		e.BearerTokenFile != "/var/run/secrets/kubernetes.io/serviceaccount/token" || !e.TLSConfig.InsecureSkipVerify {
		t.Errorf("endpoint %+v, want HTTPS /metrics on %s every 30s with Prometheus's token", e, svc.Spec.Ports[0].Name)
	}
}

// cleanupOnUninstall (on by default) is a pre-delete hook Job running `cleanup` from the
// scheduler's image, as its service account, off Tailor's nodes; its Role lets it scale the
// scheduler's Deployment and nothing else. Off, and in deploy/tailor.yaml (applied with kubectl,
// which runs no hooks: the Job would run at every apply), nothing of it renders.
func TestCleanupHook(t *testing.T) {
	docs, err := splitDocuments(render(t, "tailor", append(slices.Clone(chartDefaults), "--set", "settings.region=eu-west-1")...))
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, docs)
	job := one[*batchv1.Job](t, objs)
	dep := one[*appsv1.Deployment](t, objs)
	sa := one[*corev1.ServiceAccount](t, objs)
	if job.Namespace != "tailor" || job.Annotations["helm.sh/hook"] != "pre-delete" ||
		job.Annotations["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
		t.Errorf("Job %s/%s annotations %v, want a pre-delete hook deleted when it succeeds or runs again", job.Namespace, job.Name, job.Annotations)
	}
	pod := job.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c, sched := pod.Containers[0], dep.Spec.Template.Spec.Containers[0]
	if c.Image != sched.Image || c.ImagePullPolicy != sched.ImagePullPolicy {
		t.Errorf("image %s (%s), want the scheduler's %s (%s)", c.Image, c.ImagePullPolicy, sched.Image, sched.ImagePullPolicy)
	}
	if pod.ServiceAccountName != sa.Name || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("serviceAccountName %q restartPolicy %q, want %q and Never", pod.ServiceAccountName, pod.RestartPolicy, sa.Name)
	}
	wantArgs := []string{"cleanup", "--cluster-name=x", "--region=eu-west-1", "--timeout=4m", "--scheduler-deployment=tailor/" + dep.Name, "-v=2"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %v, want %v", c.Args, wantArgs)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "AWS_REGION" && e.Value == "eu-west-1" }) {
		t.Errorf("env %+v lacks AWS_REGION", c.Env)
	}
	// Its pod is not one of the scheduler's: the scale-down waits for those to be gone.
	if selects(t, dep.Spec.Selector, labels.Set(job.Spec.Template.Labels)) {
		t.Errorf("the Deployment's selector %v selects the cleanup pod's labels %v", dep.Spec.Selector, job.Spec.Template.Labels)
	}
	if a := pod.Affinity; a == nil || a.NodeAffinity == nil || a.PodAntiAffinity != nil ||
		!reflect.DeepEqual(a.NodeAffinity, dep.Spec.Template.Spec.Affinity.NodeAffinity) {
		t.Errorf("affinity %+v, want the scheduler's node affinity (off Tailor's nodes) only", pod.Affinity)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container securityContext %+v", sc)
	}
	role := named[*rbacv1.Role](t, objs, "tailor-cleanup")
	want := []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, ResourceNames: []string{dep.Name}, Verbs: []string{"get", "update"}}}
	if role.Namespace != "tailor" || !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("cleanup Role %s rules %+v, want %+v", role.Namespace, role.Rules, want)
	}
	rb := named[*rbacv1.RoleBinding](t, objs, "tailor-cleanup")
	if rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 || rb.Subjects[0].Name != sa.Name {
		t.Errorf("cleanup RoleBinding %+v", rb)
	}

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"disabled", append(slices.Clone(chartDefaults), "--set", "cleanupOnUninstall.enabled=false")},
		{"deploy values", []string{"-f", deployValues}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := string(render(t, "kube-system", tc.args...))
			for _, notWanted := range []string{"kind: Job", "helm.sh/hook", "tailor-cleanup"} {
				if strings.Contains(out, notWanted) {
					t.Errorf("renders %q", notWanted)
				}
			}
		})
	}
	for _, bad := range [][]string{{"--set", "cleanupOnUninstall.timeout=soon"}, {"--set", "cleanupOnUninstall.wait=true"}} {
		if _, _, err := helm(t, append([]string{"template", "tailor", chartDir}, append(slices.Clone(chartDefaults), bad...)...)...); err == nil {
			t.Errorf("the schema accepts %v", bad)
		}
	}
}
