package integration

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
)

// expectedRejections holds the instances a test launched to be refused at bootstrap; any other
// refusal fails the suite (checkBootstraps).
var expectedRejections sync.Map

// checkBootstraps fails the suite unless every instance it launched bootstrapped from its user
// data (nodeadm's check and rules, or Bottlerocket's settings), except those a test expected.
func checkBootstraps() error {
	var bad []string
	for id, why := range world.Agent.Rejected() {
		if _, ok := expectedRejections.Load(id); !ok {
			bad = append(bad, id+": "+why)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d instances failed to bootstrap from the user data Tailor sent:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	if world.Agent.Bootstrapped() == 0 && flag.Lookup("test.run").Value.String() == "" {
		return fmt.Errorf("no instance bootstrapped: the suite proved nothing about user data")
	}
	return nil
}

// TestUserDataWithoutEndpointNeverRegisters launches through a cloud client that knows only the
// cluster's name, as Tailor did before it read DescribeCluster: nodeadm refuses the NodeConfig,
// so the instance runs but its Node never appears, exactly as on EKS.
func TestUserDataWithoutEndpointNeverRegisters(t *testing.T) {
	newNamespace(t) // its cleanup terminates the instance
	ctx := context.Background()
	token := "no-endpoint-" + rand.String(5)
	nameOnly, err := ec2.New(ctx, ec2.Options{Region: world.Region, ClusterName: clusterName, KubernetesVersion: "1.34"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := nameOnly.Launch(ctx, cloud.LaunchRequest{
		ClientToken:      token,
		CapacityType:     cloud.OnDemand,
		Overrides:        []cloud.Override{{InstanceType: "m5.large", SubnetID: world.Sim.Subnets()[0].ID}},
		Image:            "al2023",
		InstanceProfile:  "tailor-node",
		SecurityGroupIDs: []string{world.Sim.ClusterSecurityGroupID()},
		NodeLabels:       map[string]string{"team": "a"},
		// No tailor.dev/claim tag: Tailor does not own it and leaves it alone. The pool tag
		// Tailor always sends: the controller IAM policy allows launches only with it (the suite
		// checks every call signed as Tailor against the policy).
		Tags:         map[string]string{v1alpha1.TagClusterPrefix + clusterName: v1alpha1.TagOwnedValue, v1alpha1.TagPool: "general"},
		TemplateTags: map[string]string{v1alpha1.TagPool: "general"},
	})
	if err != nil || res.Instance == nil {
		t.Fatalf("launch: %+v %v", res, err)
	}
	in := res.Instance
	expectedRejections.Store(in.ID, true)
	ud, _ := world.Sim.UserData(in.ID)
	if strings.Contains(ud, "apiServerEndpoint") {
		t.Fatalf("the test's client should not know the endpoint:\n%s", ud)
	}
	waitFor(t, "the node agent to refuse the instance", func() bool {
		return strings.Contains(world.Agent.Rejected()[in.ID], "Apiserver endpoint is missing in cluster configuration")
	})
	// The refusal is final (an instance boots once): the instance keeps running, with no Node.
	if _, err := world.Client.CoreV1().Nodes().Get(ctx, in.PrivateDNSName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node %s: %v, want NotFound", in.PrivateDNSName, err)
	}
	insts, err := world.Cloud.Instances(ctx, map[string]string{v1alpha1.TagClusterPrefix + clusterName: v1alpha1.TagOwnedValue})
	if err != nil {
		t.Fatal(err)
	}
	running := false
	for _, i := range insts {
		running = running || (i.ID == in.ID && i.State == cloud.StateRunning)
	}
	if !running {
		t.Errorf("instance %s is not running: a refused bootstrap leaves the instance up, as EC2 does", in.ID)
	}
}

// A pool on Bottlerocket launches with TOML settings that Bottlerocket's kubelet accepts (the
// node agent decodes them with a TOML library and refuses missing or unknown settings): the pod
// runs on a node registered from them, with the pool's label and the type's pod limit.
func TestBottlerocketPoolBootstraps(t *testing.T) {
	restartScheduler(t, func(args map[string]any) {
		args["pools"].([]any)[0].(map[string]any)["ami"] = "bottlerocket"
	})
	ns := newNamespace(t)
	createPod(t, ns, "on-bottlerocket", "500m", "512Mi")
	pods := waitRunning(t, ns, 1)
	node := getNode(t, pods[0].Spec.NodeName)
	id := lifecycle.InstanceID(node.Spec.ProviderID)
	ud, ok := world.Sim.UserData(id)
	if !ok || !strings.HasPrefix(ud, "[settings.kubernetes]") {
		t.Fatalf("instance %s user data is not Bottlerocket's:\n%s", id, ud)
	}
	if _, refused := world.Agent.Rejected()[id]; refused {
		t.Fatalf("instance %s was refused", id)
	}
	if node.Labels["tailor.dev/pool"] != "general" {
		t.Errorf("node labels %v, want the pool's", node.Labels)
	}
	if !strings.Contains(ud, "max-pods = "+node.Status.Capacity.Pods().String()+"\n") {
		t.Errorf("node pods capacity %s is not the user data's max-pods:\n%s", node.Status.Capacity.Pods(), ud)
	}
}
