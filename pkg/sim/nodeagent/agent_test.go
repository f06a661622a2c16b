package nodeagent

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	cloudfake "github.com/tailor-eks/tailor/pkg/cloud/fake"
)

// launchSignal is the simulator's Launches for a test: Launch closes the current channel.
type launchSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (l *launchSignal) Launches() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ch == nil {
		l.ch = make(chan struct{})
	}
	return l.ch
}

func (l *launchSignal) Launch() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ch != nil {
		close(l.ch)
	}
	l.ch = make(chan struct{})
}

func TestRunRegistersALaunchedInstanceWithoutWaitingForThePoll(t *testing.T) {
	const userData = "[settings.kubernetes]\ncluster-name = \"demo\"\napi-server = \"https://127.0.0.1:6443\"\n" +
		"cluster-dns-ip = \"10.100.0.10\"\n"
	types := []cloud.InstanceType{{Name: "m6i.large", Arch: "amd64", VCPUs: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10}}
	for _, tc := range []struct {
		name     string
		signal   bool
		wantNode bool
	}{
		{"told of the launch", true, true},
		{"left to its poll", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cl := cloudfake.New(types, nil, nil)
			client := fake.NewClientset()
			signal := &launchSignal{}
			a := &Agent{
				Cloud: cl, Client: client, ClusterName: "demo", Region: "us-east-1",
				Cluster: func() (Cluster, bool) { return testCluster, true },
				UserData: func(string) (string, bool) {
					return userData + "cluster-certificate = \"" + testCluster.CABundle + "\"\n", true
				},
				Period: time.Hour, // only a launch signal makes it look again
			}
			if tc.signal {
				a.Launches = signal.Launches
			}
			go a.Run(ctx)
			// Let the first sync (an empty cloud) pass, then launch.
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
				return len(client.Actions()) > 0, nil
			}); err != nil {
				t.Fatal("the agent never listed nodes")
			}
			cl.AddInstance(cloud.Instance{ID: "i-1", Type: "m6i.large", Zone: "us-east-1a", PrivateDNSName: "ip-10-0-0-1.ec2.internal",
				PrivateIP: "10.0.0.1", Tags: map[string]string{v1alpha1.TagClusterPrefix + "demo": v1alpha1.TagOwnedValue}})
			signal.Launch()
			err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := client.CoreV1().Nodes().Get(ctx, "ip-10-0-0-1.ec2.internal", metav1.GetOptions{})
				return err == nil, nil
			})
			if got := err == nil; got != tc.wantNode {
				t.Errorf("node registered within 2s: %v, want %v", got, tc.wantNode)
			}
		})
	}
}
