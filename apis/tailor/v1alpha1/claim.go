package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the group and version of Claim.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}

// ClaimResource is the resource path of claims, for dynamic clients.
var ClaimResource = SchemeGroupVersion.WithResource("claims")

var (
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	AddToScheme   = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &Claim{}, &ClaimList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// ClaimPhase is where a claim is in its life.
type ClaimPhase string

const (
	// ClaimPending: recorded, launch not yet confirmed. A restart re-issues the launch with the
	// same client token, so the instance is never doubled.
	ClaimPending ClaimPhase = "Pending"
	// ClaimLaunched: EC2 returned an instance; its Node has not registered yet.
	ClaimLaunched ClaimPhase = "Launched"
	// ClaimRegistered: the Node registered and carries the promised labels and taints.
	ClaimRegistered ClaimPhase = "Registered"
	// ClaimFailed: no offering could be launched, or the node never registered. The instance (if
	// any) is terminated and the claim deleted shortly after.
	ClaimFailed ClaimPhase = "Failed"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Claim records one launch: the pods it was planned for, the instance, the node it becomes.
// It is cluster-scoped so `kubectl get claims` shows all in-flight capacity.
type Claim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClaimSpec   `json:"spec"`
	Status ClaimStatus `json:"status,omitempty"`
}

// ClaimSpec is the plan: what to launch and for whom.
type ClaimSpec struct {
	// Pool the capacity belongs to.
	Pool string `json:"pool"`
	// CapacityType is on-demand, spot or reserved.
	CapacityType string `json:"capacityType"`
	// CapacityReservation is, for reserved capacity, the reservation the instance launches into.
	CapacityReservation *CapacityReservation `json:"capacityReservation,omitempty"`
	// Zone the node is planned in.
	Zone string `json:"zone"`
	// InstanceTypes acceptable for the planned pods, preferred (cheapest) first.
	InstanceTypes []string `json:"instanceTypes"`
	// Pods the capacity was planned for.
	Pods []PodRef `json:"pods,omitempty"`
	// PodCount is len(Pods), kept for printer columns.
	PodCount int `json:"podCount"`
	// ExpectedPods are the workloads whose pods the plan put on the node before their
	// controllers had created them all: a rollout planned whole, not wave by wave.
	ExpectedPods []ExpectedPods `json:"expectedPods,omitempty"`
	// Daemons are the DaemonSets whose pods the plan counted on the node. Their controller
	// creates those pods only once the node has registered; until each has its pod there, the
	// node keeps its room, or the scheduler would fill it with other pods first.
	Daemons []DaemonPod `json:"daemons,omitempty"`
	// Resources is the allocatable the plan assumed for the node.
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Replacement is set on a claim launched to replace running nodes (consolidation,
	// interruption) until the replacement is over.
	Replacement *Replacement `json:"replacement,omitempty"`
	// Gang is set on the claims planned together for a gang (a Coscheduling PodGroup): they are
	// launched together or not at all.
	Gang *Gang `json:"gang,omitempty"`
}

// CapacityReservation is an On-Demand Capacity Reservation or a Capacity Block for ML.
type CapacityReservation struct {
	// ID is the reservation's (cr-…).
	ID string `json:"id"`
	// CapacityBlock says it is a Capacity Block, whose instances EC2 reclaims as it ends.
	CapacityBlock bool `json:"capacityBlock,omitempty"`
	// EndsAt is when it ends, if it does.
	EndsAt *metav1.Time `json:"endsAt,omitempty"`
}

// Gang names the plan of a gang a claim belongs to.
type Gang struct {
	// PodGroup is the gang's PodGroup, as namespace/name.
	PodGroup string `json:"podGroup"`
	// ID is shared by the claims of one plan of the gang, and by no other claim.
	ID string `json:"id"`
	// Claims is how many claims the plan has: the gang launches once all are recorded.
	Claims int `json:"claims"`
}

// Replacement is what a replacement claim replaces: those nodes drain once every claim of the
// replacement is Registered and its node Ready.
type Replacement struct {
	// Nodes are the nodes replaced, in the decision's order; the claims of one replacement name
	// the same nodes.
	Nodes []string `json:"nodes"`
	// Claims is how many claims the replacement has: with fewer, one was lost and the
	// replacement has failed.
	Claims int `json:"claims"`
}

// PodRef names a pod the claim was planned for.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// ExpectedPods is one workload's share of a claim: how many of its pods the plan put on the
// node, those its controller had not yet created included. Until that many run there, and while
// the workload has pods still to place, the node keeps their room: other pods do not fit into it
// (Tailor's Filter), the workload's pods prefer it (Tailor's Score), and consolidation leaves the
// node alone while the workload still creates pods.
type ExpectedPods struct {
	// Kind is ReplicaSet, StatefulSet or Job.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Count is how many of its pods the plan put on the node.
	Count int `json:"count"`
	// Requests are what one of its pods requests: the room each pod still to come keeps.
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// DaemonPod is a DaemonSet whose pod the plan counted on the node, and what that pod requests.
type DaemonPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Requests are what its pod requests: the room the node keeps until the pod is there.
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// ClaimStatus is what happened.
type ClaimStatus struct {
	Phase ClaimPhase `json:"phase,omitempty"`
	// InstanceID, InstanceType, Zone and CapacityType of the launched instance.
	InstanceID   string `json:"instanceID,omitempty"`
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	// PricePerHour in USD, as decimal text.
	PricePerHour string `json:"pricePerHour,omitempty"`
	// ProviderID the Node will carry (aws:///<zone>/<instance-id>).
	ProviderID string `json:"providerID,omitempty"`
	// NodeName is the expected (then actual) Node name: the instance's private DNS name.
	NodeName     string       `json:"nodeName,omitempty"`
	LaunchedAt   *metav1.Time `json:"launchedAt,omitempty"`
	RegisteredAt *metav1.Time `json:"registeredAt,omitempty"`
	// InitializedAt is when the Node was first seen Ready without startup taints (its pool's,
	// Tailor's or the node lifecycle's). A node not initialized within registrationTimeout of
	// its launch is given up: terminated, and its pods planned again.
	InitializedAt *metav1.Time `json:"initializedAt,omitempty"`
	// Request is the launch request as resolved for the first attempt, recorded before it was
	// sent: every later attempt (a retry, or a resume after a crash) sends exactly this, so
	// EC2 answers it with the first attempt's instance even when the pool's image alias, subnets
	// or security groups resolve differently by then.
	Request *LaunchRequest `json:"request,omitempty"`
	// Message explains the phase, e.g. why a launch failed.
	Message string `json:"message,omitempty"`
	// RetryAt is, on a claim whose launch failed, when the pods that waited on it are planned
	// again: at once when the failure left its offerings or capacity type out of plans (no
	// capacity, the spot quota), after a backoff otherwise, so a persistent error or EC2's
	// throttling is not a hot loop.
	RetryAt *metav1.Time `json:"retryAt,omitempty"`
	// UnavailableOfferings are the offerings the launch found without capacity, and
	// CapacityTypeUnavailable the code (SpotQuota, SpotNotEnabled) for which no offering of the
	// claim's capacity type launches now: the launch records them so that every replica,
	// whichever plans, leaves them out of its plans for a while.
	UnavailableOfferings    []UnavailableOffering `json:"unavailableOfferings,omitempty"`
	CapacityTypeUnavailable string                `json:"capacityTypeUnavailable,omitempty"`
}

// UnavailableOffering is an instance type in a zone that EC2 had no capacity for, and its code.
type UnavailableOffering struct {
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	Code         string `json:"code,omitempty"`
}

// LaunchRequest is what a claim's launch resolved from its pool: the AMI and the network.
type LaunchRequest struct {
	// ImageID is the AMI the pool's image (an ID or an alias such as al2023) resolved to.
	ImageID string `json:"imageID"`
	// SubnetIDs are the pool's subnets in the claim's zone.
	SubnetIDs []string `json:"subnetIDs"`
	// SecurityGroupIDs are the pool's security groups.
	SecurityGroupIDs []string `json:"securityGroupIDs"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClaimList is a list of claims.
type ClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Claim `json:"items"`
}
