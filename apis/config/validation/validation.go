// Package validation checks TailorArgs after defaulting, naming the offending field of every
// error so a bad profile stops the scheduler with a message the user can act on.
package validation

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

var (
	regionPattern = regexp.MustCompile(`^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+$`)
	zonePattern   = regexp.MustCompile(`^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+[a-z]$`)
	amiPattern    = regexp.MustCompile(`^ami-[0-9a-f]{8,17}$`)
	// An instance profile's name, or its ARN (with an optional path).
	instanceProfilePattern = regexp.MustCompile(`^([\w+=,.@-]{1,128}|arn:[a-z-]+:iam::[0-9]{12}:instance-profile/([\w+=,.@-]+/)*[\w+=,.@-]{1,128})$`)
	versionRegexp          = regexp.MustCompile(`^1\.[0-9]{2}$`)
	// clusterPattern is EKS's rule for cluster names.
	clusterPattern = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$`)
	// queueNamePattern is SQS's rule for queue names: up to 80 letters, digits, - and _, and a
	// FIFO queue's .fifo suffix (EventBridge may target either kind).
	queueNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$|^[A-Za-z0-9_-]{1,75}\.fifo$`)
	// accountPattern is an AWS account ID, the first segment of a queue URL's path.
	accountPattern = regexp.MustCompile(`^[0-9]{12}$`)

	// AMIAliases are the image aliases Tailor resolves through SSM.
	AMIAliases = sets.New("al2023", "bottlerocket")

	capacityTypes = sets.New("on-demand", "spot", "reserved")
	ipFamilies    = sets.New("ipv4", "ipv6")
	taintEffects  = sets.New(string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute))
	limitNames    = sets.New(corev1.ResourceCPU, corev1.ResourceMemory)

	// RequirementKeys are the labels a pool may constrain: the ones every candidate instance
	// type has a value for. Custom node labels belong in labels, not requirements.
	RequirementKeys = sets.New(
		corev1.LabelTopologyZone, corev1.LabelInstanceTypeStable, corev1.LabelArchStable, corev1.LabelOSStable,
		v1alpha1.LabelCapacityType, v1alpha1.LabelInstanceFamily, v1alpha1.LabelInstanceCategory,
		v1alpha1.LabelInstanceGeneration, v1alpha1.LabelInstanceSize, v1alpha1.LabelInstanceCPU,
		v1alpha1.LabelInstanceMemory, v1alpha1.LabelInstanceGPUCount, v1alpha1.LabelInstanceGPUName,
		v1alpha1.LabelInstanceGPUMemory,
	)

	// reservedLabelKeys are set by Tailor or the kubelet from the instance itself; a pool that
	// set them would lie about the node.
	reservedLabelKeys = RequirementKeys.Clone().Insert(v1alpha1.LabelPool, v1alpha1.LabelClaim, corev1.LabelHostname)
)

// ValidateTailorArgs returns every problem of args, each naming its field under path.
func ValidateTailorArgs(path *field.Path, args *config.TailorArgs) error {
	var errs field.ErrorList
	if args.ClusterName == "" {
		errs = append(errs, field.Required(path.Child("clusterName"), "the EKS cluster name scopes every tag and name Tailor writes"))
	} else if !clusterPattern.MatchString(args.ClusterName) {
		errs = append(errs, field.Invalid(path.Child("clusterName"), args.ClusterName, "not an EKS cluster name: letters, digits, - and _, starting with a letter or digit, at most 100 characters"))
	}
	if args.Region != "" && !regionPattern.MatchString(args.Region) {
		errs = append(errs, field.Invalid(path.Child("region"), args.Region, "not an AWS region name such as us-east-1"))
	}
	if v := args.KubernetesVersion; v != "" && !versionRegexp.MatchString(v) {
		errs = append(errs, field.Invalid(path.Child("kubernetesVersion"), v, `must look like "1.34", or be empty to follow the control plane`))
	}
	errs = append(errs, validateClusterBootstrap(path, args)...)
	if args.BatchIdleDuration.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("batchIdleDuration"), args.BatchIdleDuration.String(), "must be positive"))
	}
	if args.BatchMaxDuration.Duration < args.BatchIdleDuration.Duration {
		errs = append(errs, field.Invalid(path.Child("batchMaxDuration"), args.BatchMaxDuration.String(), "must be at least batchIdleDuration"))
	}
	if args.RegistrationTimeout.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("registrationTimeout"), args.RegistrationTimeout.String(), "must be positive"))
	}
	if args.ConsolidationInterval.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("consolidationInterval"), args.ConsolidationInterval.String(), "must be positive"))
	}
	if args.ConsolidationMinSavingsPercent < 0 || args.ConsolidationMinSavingsPercent > 90 {
		errs = append(errs, field.Invalid(path.Child("consolidationMinSavingsPercent"), args.ConsolidationMinSavingsPercent, "must be between 0 and 90"))
	}
	if p := args.GangZonePolicy; p != config.GangSameZone && p != config.GangAnyZone {
		errs = append(errs, field.NotSupported(path.Child("gangZonePolicy"), p, []string{config.GangSameZone, config.GangAnyZone}))
	}
	if r := args.RebalanceRecommendations; r != config.RebalanceAdvisory && r != config.RebalanceReplace {
		errs = append(errs, field.NotSupported(path.Child("rebalanceRecommendations"), r, []string{config.RebalanceAdvisory, config.RebalanceReplace}))
	}
	if q := args.InterruptionQueue; q != "" {
		if err := ValidateQueue(q); err != "" {
			errs = append(errs, field.Invalid(path.Child("interruptionQueue"), q, err))
		}
	}
	if len(args.Pools) == 0 {
		errs = append(errs, field.Required(path.Child("pools"), "at least one pool is needed to launch anything"))
	}
	names := sets.New[string]()
	for i := range args.Pools {
		p := path.Child("pools").Index(i)
		errs = append(errs, validatePool(p, &args.Pools[i])...)
		if names.Has(args.Pools[i].Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), args.Pools[i].Name))
		}
		names.Insert(args.Pools[i].Name)
	}
	return errs.ToAggregate()
}

// ValidateQueue says what is wrong with an SQS queue given by name (tailor-prod) or by URL
// (https://sqs.us-east-1.amazonaws.com/123456789012/tailor-prod, or any endpoint's
// http(s)://host/<account>/<name>), or "" if nothing is. A URL is told from a name by its
// scheme.
func ValidateQueue(q string) string {
	if !strings.Contains(q, "://") {
		if !queueNamePattern.MatchString(q) {
			return "not an SQS queue name (up to 80 letters, digits, - and _, optionally ending .fifo) nor a queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>)"
		}
		return ""
	}
	u, err := url.Parse(q)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "not an SQS queue URL: want https://sqs.<region>.amazonaws.com/<account>/<name>"
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(parts) != 2 || !accountPattern.MatchString(parts[0]) || !queueNamePattern.MatchString(parts[1]) {
		return "an SQS queue URL's path is /<12-digit account ID>/<queue name>"
	}
	return ""
}

// validateClusterBootstrap checks the optional overrides of what eks:DescribeCluster reports:
// a node given a wrong one never joins, so it is refused here rather than after a launch.
func validateClusterBootstrap(path *field.Path, args *config.TailorArgs) field.ErrorList {
	var errs field.ErrorList
	if ep := args.ClusterEndpoint; ep != "" {
		u, err := url.Parse(ep)
		if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			errs = append(errs, field.Invalid(path.Child("clusterEndpoint"), ep, "must be the API server's https:// URL, as eks:DescribeCluster reports it"))
		}
	}
	if ca := args.ClusterCABundle; ca != "" {
		pemBytes, err := base64.StdEncoding.DecodeString(ca)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("clusterCABundle"), "<bundle>", "must be base64-encoded PEM, as eks:DescribeCluster reports certificateAuthority.data"))
		} else if block, _ := pem.Decode(pemBytes); block == nil || block.Type != "CERTIFICATE" {
			errs = append(errs, field.Invalid(path.Child("clusterCABundle"), "<bundle>", "the decoded bundle holds no PEM CERTIFICATE block"))
		} else if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			errs = append(errs, field.Invalid(path.Child("clusterCABundle"), "<bundle>", fmt.Sprintf("the first certificate does not parse: %v", err)))
		}
	}
	if args.IPFamily != "" && !ipFamilies.Has(args.IPFamily) {
		errs = append(errs, field.NotSupported(path.Child("ipFamily"), args.IPFamily, sets.List(ipFamilies)))
	}
	if c := args.ServiceCIDR; c != "" {
		prefix, err := netip.ParsePrefix(c)
		switch {
		case err != nil || prefix.Masked() != prefix:
			errs = append(errs, field.Invalid(path.Child("serviceCIDR"), c, "must be a network in CIDR notation such as 10.100.0.0/16"))
		case args.IPFamily == "ipv6" && !prefix.Addr().Is6(), args.IPFamily == "ipv4" && !prefix.Addr().Is4():
			errs = append(errs, field.Invalid(path.Child("serviceCIDR"), c, "is not of the cluster's ipFamily "+args.IPFamily))
		}
	}
	return errs
}

func validatePool(path *field.Path, p *config.Pool) field.ErrorList {
	var errs field.ErrorList
	if p.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else if msgs := validation.IsDNS1123Label(p.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(path.Child("name"), p.Name, msgs[0]))
	}
	if p.Weight < 0 || p.Weight > 100 {
		errs = append(errs, field.Invalid(path.Child("weight"), p.Weight, "must be between 0 and 100"))
	}
	for i, r := range p.Requirements {
		errs = append(errs, validateRequirement(path.Child("requirements").Index(i), r.NodeSelectorRequirement)...)
		errs = append(errs, validateMinValues(path.Child("requirements").Index(i), r)...)
	}
	if len(p.CapacityTypes) == 0 {
		errs = append(errs, field.Required(path.Child("capacityTypes"), "on-demand, spot or both"))
	}
	seen := sets.New[string]()
	for i, ct := range p.CapacityTypes {
		if !capacityTypes.Has(ct) {
			errs = append(errs, field.NotSupported(path.Child("capacityTypes").Index(i), ct, sets.List(capacityTypes)))
		} else if seen.Has(ct) {
			errs = append(errs, field.Duplicate(path.Child("capacityTypes").Index(i), ct))
		}
		seen.Insert(ct)
	}
	rp := path.Child("capacityReservationSelector")
	switch empty := len(p.CapacityReservationSelector.IDs) == 0 && len(p.CapacityReservationSelector.Tags) == 0; {
	case seen.Has("reserved") && empty:
		errs = append(errs, field.Required(rp, "the reserved capacity type launches into the reservations this selects: {ids: [cr-…]} or {tags: {…}}"))
	case !seen.Has("reserved") && !empty:
		errs = append(errs, field.Invalid(path.Child("capacityTypes"), p.CapacityTypes, "a pool with a capacityReservationSelector needs the reserved capacity type"))
	case !empty:
		errs = append(errs, validateSelector(rp, p.CapacityReservationSelector, "cr-")...)
	}
	for i, z := range p.Zones {
		if !zonePattern.MatchString(z) {
			errs = append(errs, field.Invalid(path.Child("zones").Index(i), z, "not an availability zone name such as us-east-1a"))
		}
	}
	errs = append(errs, validateSelector(path.Child("subnetSelector"), p.SubnetSelector, "subnet-")...)
	errs = append(errs, validateSelector(path.Child("securityGroupSelector"), p.SecurityGroupSelector, "sg-")...)
	// Without an instance profile a node has no credentials to join with: EC2 launches it, it
	// never registers, and it is replaced every registrationTimeout.
	switch ip := p.InstanceProfile; {
	case ip == "":
		errs = append(errs, field.Required(path.Child("instanceProfile"), "the IAM instance profile (name or ARN) of the pool's nodes, whose role the cluster lets join"))
	case !instanceProfilePattern.MatchString(ip):
		errs = append(errs, field.Invalid(path.Child("instanceProfile"), ip, "must be an IAM instance profile name (up to 128 of letters, digits and +=,.@_-) or ARN (arn:<partition>:iam::<account>:instance-profile/<path><name>)"))
	}
	errs = append(errs, validateImage(path, p)...)
	for k, v := range p.Labels {
		lp := path.Child("labels").Key(k)
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(lp, k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(lp, v, msg))
		}
		if reservedLabelKeys.Has(k) {
			errs = append(errs, field.Forbidden(lp, "set by Tailor from the instance; constrain it with requirements instead"))
		} else if kubernetesNamespace(k) && !kubeletapis.IsKubeletLabel(k) {
			errs = append(errs, field.Forbidden(lp, "the kubelet may not set labels in the kubernetes.io and k8s.io namespaces except its own"))
		}
	}
	errs = append(errs, validateTaints(path.Child("taints"), p.Taints)...)
	errs = append(errs, validateTaints(path.Child("startupTaints"), p.StartupTaints)...)
	errs = append(errs, validateLaunchSettings(path, p)...)
	errs = append(errs, validateKubelet(path.Child("kubelet"), &p.Kubelet, p.ImageFamily)...)
	if p.InstanceStorePolicy != "" && p.InstanceStorePolicy != config.InstanceStoreRAID0 {
		errs = append(errs, field.NotSupported(path.Child("instanceStorePolicy"), p.InstanceStorePolicy, []string{config.InstanceStoreRAID0}))
	}
	for name, q := range p.Limits {
		lp := path.Child("limits").Key(string(name))
		if !limitNames.Has(name) {
			errs = append(errs, field.NotSupported(lp, name, []string{"cpu", "memory"}))
		} else if q.Sign() < 0 {
			errs = append(errs, field.Invalid(lp, q.String(), "must not be negative"))
		}
	}
	errs = append(errs, validateDisruption(path.Child("disruption"), &p.Disruption)...)
	return errs
}

var consolidationPolicies = sets.New(config.WhenEmpty, config.WhenEmptyOrUnderutilized)

func validateDisruption(path *field.Path, d *config.Disruption) field.ErrorList {
	var errs field.ErrorList
	if !consolidationPolicies.Has(d.ConsolidationPolicy) {
		errs = append(errs, field.NotSupported(path.Child("consolidationPolicy"), d.ConsolidationPolicy, sets.List(consolidationPolicies)))
	}
	if d.ConsolidateAfter.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("consolidateAfter"), d.ConsolidateAfter.String(), "must not be negative"))
	}
	if d.ExpireAfter.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("expireAfter"), d.ExpireAfter.String(), "must not be negative (0 means never)"))
	}
	for i, b := range d.Budgets {
		bp := path.Child("budgets").Index(i)
		if _, _, err := ParseBudgetNodes(b.Nodes); err != nil {
			errs = append(errs, field.Invalid(bp.Child("nodes"), b.Nodes, err.Error()))
		}
		switch {
		case b.Schedule == "" && b.Duration.Duration != 0:
			errs = append(errs, field.Required(bp.Child("schedule"), "a duration needs a schedule that starts the window"))
		case b.Schedule != "" && b.Duration.Duration <= 0:
			errs = append(errs, field.Required(bp.Child("duration"), "a schedule needs a positive duration for the window it starts"))
		}
		if b.Schedule != "" {
			if _, err := ParseSchedule(b.Schedule); err != nil {
				errs = append(errs, field.Invalid(bp.Child("schedule"), b.Schedule, err.Error()))
			}
		}
	}
	return errs
}

// ParseBudgetNodes reads a budget's nodes: a count ("3") or a percentage ("20%").
func ParseBudgetNodes(s string) (value int, percent bool, err error) {
	num, percent := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(num)
	switch {
	case err != nil || n < 0:
		return 0, false, fmt.Errorf("must be a non-negative count such as 2 or a percentage such as 20%%")
	case percent && n > 100:
		return 0, false, fmt.Errorf("a percentage must be at most 100%%")
	}
	return n, percent, nil
}

// ParseSchedule reads a budget's cron schedule (five fields, or a descriptor such as @daily).
func ParseSchedule(s string) (cron.Schedule, error) {
	return cron.ParseStandard(s)
}

func kubernetesNamespace(key string) bool {
	domain, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	return domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") || domain == "k8s.io" || strings.HasSuffix(domain, ".k8s.io")
}

func validateRequirement(path *field.Path, r corev1.NodeSelectorRequirement) field.ErrorList {
	var errs field.ErrorList
	if !RequirementKeys.Has(r.Key) {
		errs = append(errs, field.NotSupported(path.Child("key"), r.Key, sets.List(RequirementKeys)))
	}
	vp := path.Child("values")
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			errs = append(errs, field.Required(vp, fmt.Sprintf("operator %s needs at least one value", r.Operator)))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) != 0 {
			errs = append(errs, field.Forbidden(vp, fmt.Sprintf("operator %s takes no values", r.Operator)))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			errs = append(errs, field.Invalid(vp, r.Values, fmt.Sprintf("operator %s needs exactly one integer value", r.Operator)))
		} else if _, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil {
			errs = append(errs, field.Invalid(vp.Index(0), r.Values[0], "must be an integer"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("operator"), r.Operator, []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}))
	}
	for i, v := range r.Values {
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(vp.Index(i), v, msg))
		}
	}
	return errs
}

// maxMinValues bounds minValues: a claim offers EC2 at most 60 types (CreateFleet's overrides
// cap), so more distinct values than that of any key cannot be offered.
const maxMinValues = 50

// validateMinValues checks a requirement's minValues: it needs a key whose values differ between
// instance types (a claim is for one zone and one capacity type) and enough values to meet.
func validateMinValues(path *field.Path, r config.Requirement) field.ErrorList {
	if r.MinValues == 0 {
		return nil
	}
	mp := path.Child("minValues")
	switch {
	case r.MinValues < 0 || r.MinValues > maxMinValues:
		return field.ErrorList{field.Invalid(mp, r.MinValues, fmt.Sprintf("must be between 1 and %d", maxMinValues))}
	case r.Key == corev1.LabelTopologyZone || r.Key == v1alpha1.LabelCapacityType || r.Key == corev1.LabelArchStable || r.Key == corev1.LabelOSStable:
		return field.ErrorList{field.Invalid(mp, r.MinValues, "a claim launches in one zone with one capacity type and one image (one architecture and OS): minValues counts the values of instance type labels")}
	case r.Operator == corev1.NodeSelectorOpIn && int(r.MinValues) > len(sets.New(r.Values...)):
		return field.ErrorList{field.Invalid(mp, r.MinValues, fmt.Sprintf("more than the %d distinct values the requirement allows", len(sets.New(r.Values...))))}
	case r.Operator == corev1.NodeSelectorOpDoesNotExist:
		return field.ErrorList{field.Invalid(mp, r.MinValues, "operator DoesNotExist leaves no value to count")}
	}
	return nil
}

func validateSelector(path *field.Path, s config.Selector, idPrefix string) field.ErrorList {
	var errs field.ErrorList
	switch {
	case len(s.IDs) == 0 && len(s.Tags) == 0:
		errs = append(errs, field.Required(path, "set ids or tags"))
	case len(s.IDs) > 0 && len(s.Tags) > 0:
		errs = append(errs, field.Invalid(path, "ids and tags", "set ids or tags, not both"))
	}
	for i, id := range s.IDs {
		if len(id) <= len(idPrefix) || id[:len(idPrefix)] != idPrefix {
			errs = append(errs, field.Invalid(path.Child("ids").Index(i), id, "must start with "+idPrefix))
		}
	}
	for k := range s.Tags {
		if k == "" {
			errs = append(errs, field.Invalid(path.Child("tags"), k, "tag keys must not be empty"))
		}
	}
	return errs
}

func validateTaints(path *field.Path, taints []corev1.Taint) field.ErrorList {
	var errs field.ErrorList
	for i, t := range taints {
		tp := path.Index(i)
		switch t.Key {
		case v1alpha1.TaintUnregistered:
			errs = append(errs, field.Forbidden(tp.Child("key"), "reserved for Tailor's registration"))
		case v1alpha1.TaintDisrupting:
			// Consolidation reads this taint as its own mark of a node being drained: a pool
			// that set it would have every node look mid-drain.
			errs = append(errs, field.Forbidden(tp.Child("key"), "reserved for Tailor's consolidation"))
		}
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(tp.Child("key"), t.Key, msg))
		}
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(tp.Child("value"), t.Value, msg))
		}
		if !taintEffects.Has(string(t.Effect)) {
			errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect, sets.List(taintEffects)))
		}
	}
	return errs
}

// Launch settings of a pool (see config.Pool).
var (
	deviceNamePattern = regexp.MustCompile(`^/dev/(sd|xvd)[a-z]{1,2}$`)
	kmsKeyPattern     = regexp.MustCompile(`^arn:[a-z-]+:kms:[a-z0-9-]+:[0-9]{12}:(key|alias)/.+$`)
	volumeTypes       = sets.New("gp3", "gp2", "io1", "io2", "st1", "sc1", "standard")
	httpTokens        = sets.New("required", "optional")
	// Tag keys Tailor, Kubernetes and AWS own: a pool's tags must not override them (Tailor's
	// IAM policy and its garbage collection read them).
	reservedTagPrefixes = []string{"kubernetes.io/cluster/", "tailor.dev/", "eks:", "aws:", "karpenter.sh/"}
)

const (
	maxVolume = 64 << 40 // EC2's largest EBS volume, 64 TiB
	gib       = 1 << 30
)

// validateLaunchSettings checks the block devices, IMDS settings and tags of a pool.
func validateLaunchSettings(path *field.Path, p *config.Pool) field.ErrorList {
	var errs field.ErrorList
	devices := sets.New[string]()
	for i, b := range p.BlockDeviceMappings {
		bp := path.Child("blockDeviceMappings").Index(i)
		switch {
		case !deviceNamePattern.MatchString(b.DeviceName):
			errs = append(errs, field.Invalid(bp.Child("deviceName"), b.DeviceName, "must be a device name such as /dev/xvda"))
		case devices.Has(b.DeviceName):
			errs = append(errs, field.Duplicate(bp.Child("deviceName"), b.DeviceName))
		}
		devices.Insert(b.DeviceName)
		if size := b.VolumeSize.Value(); size < gib || size > maxVolume || size%gib != 0 {
			errs = append(errs, field.Invalid(bp.Child("volumeSize"), b.VolumeSize.String(), "must be whole GiB from 1Gi to 64Ti"))
		}
		if !volumeTypes.Has(b.VolumeType) {
			errs = append(errs, field.NotSupported(bp.Child("volumeType"), b.VolumeType, sets.List(volumeTypes)))
		}
		if b.IOPS != 0 && (b.VolumeType != "gp3" && b.VolumeType != "io1" && b.VolumeType != "io2" || b.IOPS < 100 || b.IOPS > 256000) {
			errs = append(errs, field.Invalid(bp.Child("iops"), b.IOPS, "only gp3, io1 and io2 take iops, from 100 to 256000"))
		}
		if b.Throughput != 0 && (b.VolumeType != "gp3" || b.Throughput < 125 || b.Throughput > 2000) {
			errs = append(errs, field.Invalid(bp.Child("throughput"), b.Throughput, "only gp3 takes throughput, from 125 to 2000 MiB/s"))
		}
		if b.KMSKeyID != "" && (!b.Encrypted || !kmsKeyPattern.MatchString(b.KMSKeyID)) {
			errs = append(errs, field.Invalid(bp.Child("kmsKeyID"), b.KMSKeyID, "must be a KMS key or alias ARN, on an encrypted volume"))
		}
	}
	mo := path.Child("metadataOptions")
	if !httpTokens.Has(p.MetadataOptions.HTTPTokens) {
		errs = append(errs, field.NotSupported(mo.Child("httpTokens"), p.MetadataOptions.HTTPTokens, sets.List(httpTokens)))
	}
	if h := p.MetadataOptions.HTTPPutResponseHopLimit; h < 1 || h > 64 {
		errs = append(errs, field.Invalid(mo.Child("httpPutResponseHopLimit"), h, "must be between 1 and 64"))
	}
	for k, v := range p.Tags {
		tp := path.Child("tags").Key(k)
		switch {
		case len(k) == 0 || len(k) > 128:
			errs = append(errs, field.Invalid(tp, k, "a tag key has 1 to 128 characters"))
		case slices.ContainsFunc(reservedTagPrefixes, func(prefix string) bool { return strings.HasPrefix(strings.ToLower(k), prefix) }):
			errs = append(errs, field.Forbidden(tp, fmt.Sprintf("keys starting with %s are Tailor's, Kubernetes' or AWS's", strings.Join(reservedTagPrefixes, ", "))))
		}
		if len(v) > 256 {
			errs = append(errs, field.Invalid(tp, v, "a tag value has at most 256 characters"))
		}
	}
	return errs
}
