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
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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
		{"chart defaults", []string{"--set", "settings.clusterName=x"}},
		{"example values", []string{"-f", deployValues}},
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
	_, stderr, err := helm(t, "template", "tailor", chartDir)
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
	if want := []string{"PodDisruptionBudget", "ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding",
		"ClusterRoleBinding", "ClusterRoleBinding", "Role", "RoleBinding", "RoleBinding", "Service", "Deployment"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	checkRelease(t, objs, "kube-system")
}

// The chart in another namespace: leases, bindings and the config follow it; the authentication
// reader binding stays in kube-system.
func TestReleaseNamespace(t *testing.T) {
	docs, err := splitDocuments(render(t, "tailor", "--set", "settings.clusterName=x"))
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
	cr := one[*rbacv1.ClusterRole](t, objs)
	role := one[*rbacv1.Role](t, objs)
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
// prove something.
func TestSchedulerConfigRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"settings.ipFamily=ipv5", "ipFamily"},
		{"settings.region=Mars", "region"},
		{"settings.batch.idleDuration=soon", `invalid duration "soon"`},
		{"settings.consolidation.minSavingsPercent=95", "consolidationMinSavingsPercent"},
		{"settings.interruptionQueue=arn:aws:sqs:us-east-1:123456789012:q", "interruptionQueue"},
		{"pools[0].capacityTypes[0]=reserved", "capacityTypes"},
		{"gangScheduling.zonePolicy=Nearby", "gangZonePolicy"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			docs, err := splitDocuments(render(t, "kube-system", "-f", deployValues, "--set", tc.set))
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
			if a.ClusterName != "sandbox" || a.Region != "us-east-1" || a.KubernetesVersion != "1.34" {
				t.Errorf("cluster %q region %q version %q", a.ClusterName, a.Region, a.KubernetesVersion)
			}
			var names []string
			for _, p := range a.Pools {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, []string{"general", "spot", "gpu"}) {
				t.Errorf("pools %v", names)
			}
			if a.ClusterEndpoint != "" || a.ClusterCABundle != "" || a.ServiceCIDR != "" || a.IPFamily != "" {
				t.Errorf("the example sets cluster bootstrap overrides: %+v", a)
			}
		},
	}, {
		name: "chart defaults",
		args: []string{"--set", "settings.clusterName=prod"},
		check: func(t *testing.T, a *config.TailorArgs) {
			if a.ClusterName != "prod" || a.Region != "" || len(a.Pools) != 1 || a.InterruptionQueue != "" {
				t.Errorf("cluster %q region %q pools %d interruption queue %q", a.ClusterName, a.Region, len(a.Pools), a.InterruptionQueue)
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
			"--set", "gangScheduling.zonePolicy=AnyZone"},
		check: func(t *testing.T, a *config.TailorArgs) {
			got := []any{a.ClusterName, a.Region, a.KubernetesVersion, a.ClusterEndpoint, a.ClusterCABundle == ca, a.ServiceCIDR, a.IPFamily,
				a.RegistrationTimeout.Duration, a.BatchIdleDuration.Duration, a.BatchMaxDuration.Duration, a.ConsolidationInterval.Duration,
				a.ConsolidationMinSavingsPercent, a.InterruptionQueue, a.GangZonePolicy}
			want := []any{"prod_1", "eu-west-1", "1.33", "https://ABC.gr7.eu-west-1.eks.amazonaws.com", true, "fd00:10:96::/112", "ipv6",
				20 * time.Minute, 250 * time.Millisecond, 5 * time.Second, time.Minute, int32(0), "https://sqs.eu-west-1.amazonaws.com/123456789012/tailor-prod", "AnyZone"}
			if !slices.Equal(got, want) {
				t.Errorf("args %v, want %v", got, want)
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
