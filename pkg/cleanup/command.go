package cleanup

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/generated/clientset/versioned"
)

// DefaultTimeout is how long the command lets a running Tailor drain and terminate its nodes.
const DefaultTimeout = 10 * time.Minute

// NewCommand is the scheduler binary's `cleanup` subcommand.
func NewCommand() *cobra.Command {
	var (
		kubeconfig, clusterName, region, deployment string
		timeout                                     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Give back every node Tailor launched and remove its finalizers, before Tailor is uninstalled",
		Long: `cleanup deletes every Claim, so that Tailor, while it still runs, drains each of its nodes
through the Eviction API (PodDisruptionBudgets respected) and terminates its instance. What is left
after --timeout (Tailor is not running, or could not drain) is forced: the instances whose own tags
say Tailor launched them for this cluster are terminated, the tailor.dev/termination finalizer comes
off the remaining Claims and Nodes, and those Claims and Nodes are deleted. Then the launch templates
Tailor created for the cluster are deleted. It exits 0 only if no Claim and no Node with Tailor's
finalizer is left.

AWS credentials and the region come from the SDK's usual chain (AWS_REGION, IRSA, EKS Pod
Identity, shared files); AWS_ENDPOINT_URL_EC2 overrides the endpoint.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctx = klog.NewContext(ctx, klog.Background().WithName("cleanup"))
			c, err := newCleaner(ctx, kubeconfig, clusterName, region, deployment)
			if err != nil {
				return err
			}
			c.Timeout = timeout
			_, err = c.Run(ctx)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the pod's in-cluster service account)")
	fs.StringVar(&clusterName, "cluster-name", "", "name of the EKS cluster (Tailor's settings.clusterName); only its instances are terminated")
	fs.StringVar(&region, "region", "", "AWS region (default: the AWS SDK's, e.g. AWS_REGION)")
	fs.DurationVar(&timeout, "timeout", DefaultTimeout, "how long a running Tailor gets to drain and terminate its nodes before the rest is forced; 0 forces at once (Tailor is not running)")
	fs.StringVar(&deployment, "scheduler-deployment", "", "namespace/name of Tailor's Deployment, scaled to 0 before anything is forced so that nothing launches meanwhile (the chart's hook sets it)")
	_ = cmd.MarkFlagRequired("cluster-name")
	// kube-scheduler's help lists its own flag sets for every command under it; this one's flags
	// are its own, and the global ones it inherits (logging).
	usage := func(c *cobra.Command) string {
		return fmt.Sprintf("Usage:\n  %s\n\nFlags:\n%s\nGlobal flags:\n%s", c.UseLine(), c.LocalFlags().FlagUsages(), c.InheritedFlags().FlagUsages())
	}
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		_, err := fmt.Fprint(c.OutOrStderr(), usage(c))
		return err
	})
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		fmt.Fprintf(c.OutOrStdout(), "%s\n\n%s", c.Long, usage(c))
	})
	return cmd
}

// newCleaner builds the clients: the cluster's with the kubeconfig's identity (in the chart's
// hook, the install's service account), EC2's from the SDK's configuration.
func newCleaner(ctx context.Context, kubeconfig, clusterName, region, deployment string) (*Cleaner, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	awsCfg, err := ec2.LoadConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	provider, err := ec2.NewFromConfig(awsCfg, ec2.Options{ClusterName: clusterName})
	if err != nil {
		return nil, err
	}
	c, err := NewCleaner(cfg, provider, clusterName)
	if err != nil {
		return nil, err
	}
	if deployment != "" {
		ns, name, ok := strings.Cut(deployment, "/")
		if !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("--scheduler-deployment %q: want namespace/name", deployment)
		}
		c.StopTailor = ScaleDown(c.Kube, ns, name, DefaultStopTimeout)
	}
	return c, nil
}

// NewCleaner builds a Cleaner on a rest config (its identity is the cleanup's).
func NewCleaner(cfg *rest.Config, provider *ec2.Provider, clusterName string) (*Cleaner, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// A custom resource speaks JSON only; a scheduler's kubeconfig may ask for protobuf.
	jsonCfg := rest.CopyConfig(cfg)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	cs, err := versioned.NewForConfig(jsonCfg)
	if err != nil {
		return nil, err
	}
	return &Cleaner{Kube: kube, Claims: cs, Cloud: provider, ClusterName: clusterName}, nil
}
