package v1alpha1

// Labels Tailor puts on the nodes it launches, beside the well-known Kubernetes ones
// (topology.kubernetes.io/zone, node.kubernetes.io/instance-type, kubernetes.io/arch, kubernetes.io/os).
// Pools may write requirements over all of them; pods may select on them.
const (
	Group = "tailor.dev"

	LabelPool               = Group + "/pool"
	LabelCapacityType       = Group + "/capacity-type"
	LabelInstanceFamily     = Group + "/instance-family"
	LabelInstanceCategory   = Group + "/instance-category"
	LabelInstanceGeneration = Group + "/instance-generation"
	LabelInstanceSize       = Group + "/instance-size"
	LabelInstanceCPU        = Group + "/instance-cpu"
	LabelInstanceMemory     = Group + "/instance-memory" // MiB
	LabelInstanceGPUCount   = Group + "/instance-gpu-count"
	LabelInstanceGPUName    = Group + "/instance-gpu-name"
	LabelInstanceGPUMemory  = Group + "/instance-gpu-memory" // MiB, all GPUs together
	LabelClaim              = Group + "/claim"

	// TaintUnregistered is set by the kubelet at registration (through user data) and removed by
	// Tailor once it has matched the node to its claim and applied the pool's labels and taints,
	// so no pod lands on a node before it looks the way the plan promised.
	TaintUnregistered = Group + "/unregistered"

	// AnnotationDoNotDisrupt on a pod or node keeps consolidation away from it.
	AnnotationDoNotDisrupt = Group + "/do-not-disrupt"

	// AnnotationSafeToEvict "true" on a pod with local storage lets consolidation evict it
	// (Cluster Autoscaler's cluster-autoscaler.kubernetes.io/safe-to-evict is honoured too).
	AnnotationSafeToEvict = Group + "/safe-to-evict"

	// TaintDisrupting (NoSchedule, value: the reason) marks a node consolidation is taking away;
	// AnnotationDisruptingSince on the node says since when (RFC 3339). Together they are the
	// whole state of a drain, so a restarted loop resumes or rolls it back from the node alone.
	TaintDisrupting           = Group + "/disrupting"
	AnnotationDisruptingSince = Group + "/disrupting-since"

	// AnnotationWasCordoned on a node being drained records that it was cordoned before, so a
	// rollback leaves the cordon in place.
	AnnotationWasCordoned = Group + "/was-cordoned"

	// AnnotationDrained on a node (RFC 3339: since when) says its drain is over: consolidation then
	// deletes its claim, and the lifecycle's termination stage terminates the instance, deletes
	// the Node and lets the claim go. The drain decides (consolidation), termination carries it
	// out. It counts only on a node the drain tainted, or whose instance no longer runs.
	AnnotationDrained = Group + "/drained"

	// FinalizerTermination is on every claim and every node Tailor registered: deleting either
	// (kubectl delete claim/node) drains the node through the Eviction API, PodDisruptionBudgets
	// respected, and terminates the instance before the objects go.
	FinalizerTermination = Group + "/termination"

	// AnnotationInterrupted on a node says EC2 is taking its instance away, and why (a spot
	// interruption warning, a scheduled change, or the instance stopping or terminating); AnnotationInterruptedAt says since when (RFC 3339). Consolidation
	// then replaces and drains the node (or, for an instance already stopping, removes it at
	// once); the annotations are that work's whole state, so a restarted leader carries on.
	AnnotationInterrupted   = Group + "/interrupted"
	AnnotationInterruptedAt = Group + "/interrupted-at"
	// InterruptedInstanceGoing prefixes the AnnotationInterrupted value of an instance already
	// going, followed by its state (stopping, stopped, shutting-down, terminated).
	InterruptedInstanceGoing = "instance-"
	// AnnotationRebalanceRecommended on a node says since when (RFC 3339) EC2 has recommended
	// rebalancing its spot instance, with rebalanceRecommendations: Replace. Consolidation then
	// renews the node as a drifted one: within budgets, never evicting do-not-disrupt pods.
	AnnotationRebalanceRecommended = Group + "/rebalance-recommended-at"

	// AnnotationPoolHash on a claim is its pool's launch fingerprint when it launched; a node
	// whose pool has another fingerprint now has drifted and is replaced.
	AnnotationPoolHash = Group + "/pool-hash"
	// AnnotationImageDrift on a claim is the image its pool's AMI alias resolves to now for its
	// instance type, when that is no longer the image it launched with (a new EKS AMI release):
	// its node has drifted and is renewed. The lifecycle writes it, consolidation reads it.
	AnnotationImageDrift = Group + "/image-drift"
)

// Tags on every EC2 resource Tailor creates. An instance without TagClusterPrefix+<cluster>=owned
// and TagClaim is never touched.
const (
	TagClusterPrefix = "kubernetes.io/cluster/"
	TagEKSCluster    = "eks:eks-cluster-name"
	TagPool          = LabelPool
	TagClaim         = LabelClaim
	TagOwnedValue    = "owned"
	// TagPoolHash on a launch template is the launch fingerprint (config.Pool.LaunchHash) of the
	// pool it was made for: once neither the pool nor any claim has that fingerprint, the
	// template is deleted.
	TagPoolHash = AnnotationPoolHash
)
