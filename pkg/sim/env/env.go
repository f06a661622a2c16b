// Package env assembles a whole simulated cluster from real parts: the EC2 simulator on a
// loopback HTTP port, a real control plane, kwok as the kubelets and the node agent as the
// kubelet registration and cloud controller. The sandbox (make run) and the integration tests
// both start it, then add Tailor's scheduler on top.
package env

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/utils/ktesting"
	"sigs.k8s.io/yaml"

	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/sim/controlplane"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
	"github.com/tailor-eks/tailor/pkg/sim/nodeagent"
)

// Options shape the environment.
type Options struct {
	// Dir holds etcd data, kubeconfig, scheduler config and logs.
	Dir string
	// ClusterName must match the scheduler profile's clusterName.
	ClusterName string
	Region      string
	// KwokPath is the kwok binary (make tools builds it into bin/kwok).
	KwokPath string
	// NodeadmPath is the nodeadm binary the node agent validates AL2023 user data with (make
	// tools builds it into bin/nodeadm).
	NodeadmPath string
	// Sim tunes the EC2 simulator; Region and ClusterName are filled in.
	Sim ec2sim.Options
	// TB receives the API server's logs and cleanups.
	TB ktesting.TB
}

// Environment is a running simulated cluster.
type Environment struct {
	Options
	Sim    *ec2sim.Sim
	SimURL string
	CP     *controlplane.ControlPlane
	Client kubernetes.Interface
	// Cloud is an EC2 client of the simulator, through the real SDK.
	Cloud *ec2.Provider
	// Agent registers the Nodes of instances whose user data bootstraps.
	Agent *nodeagent.Agent
	// SchedulerKubeconfig authenticates as the chart's service account: Tailor's scheduler
	// runs with exactly the RBAC the chart installs, never as admin.
	SchedulerKubeconfig string
	// schedulerConfig is the chart's KubeSchedulerConfiguration, read back from its ConfigMap.
	schedulerConfig []byte

	stops []func()
}

// Start brings everything up. Call Stop when done.
func Start(ctx context.Context, o Options) (*Environment, error) {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.KwokPath == "" {
		o.KwokPath = "bin/kwok"
	}
	if o.NodeadmPath == "" {
		o.NodeadmPath = "bin/nodeadm"
	}
	for _, p := range []string{o.KwokPath, o.NodeadmPath} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s not found (run `make tools`): %w", p, err)
		}
	}
	e := &Environment{Options: o}
	o.Sim.Region, o.Sim.ClusterName = o.Region, o.ClusterName
	e.Sim = ec2sim.New(o.Sim)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: e.Sim, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	e.stops = append(e.stops, func() { _ = srv.Close() })
	e.SimURL = "http://" + ln.Addr().String()
	for k, v := range e.AWSEnv() {
		if err := os.Setenv(k, v); err != nil {
			e.Stop()
			return nil, err
		}
	}

	e.CP, err = controlplane.Start(ctx, o.TB, o.Dir)
	if err != nil {
		e.Stop()
		return nil, err
	}
	e.stops = append(e.stops, e.CP.Stop)
	e.Client = kubernetes.NewForConfigOrDie(e.CP.Config)
	if err := e.installChart(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	if e.schedulerConfig, err = e.installedSchedulerConfig(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	if e.SchedulerKubeconfig, err = e.writeServiceAccountKubeconfig(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	// The cluster is "active" once its API server is up: DescribeCluster then reports what nodes
	// need to join it, as EKS does.
	e.Sim.SetCluster(ec2sim.ClusterInfo{Endpoint: e.CP.Config.Host, CABundle: base64.StdEncoding.EncodeToString(e.CP.Config.CAData)})

	// The harness signs with a key of its own, so the simulator's authorization log tells its
	// calls (and the node agent's) from Tailor's.
	cfg, err := ec2.LoadConfig(ctx, o.Region)
	if err != nil {
		e.Stop()
		return nil, err
	}
	cfg.Credentials = credentials.NewStaticCredentialsProvider(HarnessAccessKeyID, "harness", "")
	e.Cloud, err = ec2.NewFromConfig(cfg, ec2.Options{ClusterName: o.ClusterName})
	if err != nil {
		e.Stop()
		return nil, err
	}
	if err := e.startKwok(); err != nil {
		e.Stop()
		return nil, err
	}
	if err := e.addSystemNode(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	agentCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.Agent = &nodeagent.Agent{
		Cloud: e.Cloud, Client: e.Client, ClusterName: o.ClusterName, Region: o.Region,
		Cluster: func() (nodeagent.Cluster, bool) {
			c, ok := e.Sim.Cluster()
			return nodeagent.Cluster{Name: o.ClusterName, Endpoint: c.Endpoint, CABundle: c.CABundle, ServiceCIDR: c.ServiceCIDR}, ok
		},
		UserData:  e.Sim.UserData,
		VolumeGiB: e.Sim.VolumeGiB,
		Nodeadm:   o.NodeadmPath,
		Launches:  e.Sim.Launches,
	}
	go e.Agent.Run(agentCtx)
	e.stops = append(e.stops, cancel)
	return e, nil
}

// SystemNodeName is the node that stands for the managed node group Tailor itself runs on.
const SystemNodeName = "system-0"

// addSystemNode registers the cluster's one static node, as an EKS managed node group would: it
// is where Tailor and cluster add-ons run, it is tainted for critical add-ons only, and Tailor
// does not own it. (kube-scheduler does not run PostFilter at all in a cluster with no node, so
// Tailor, like Karpenter, needs the node it runs on.)
func (e *Environment) addSystemNode(ctx context.Context) error {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: SystemNodeName,
			Labels: map[string]string{corev1.LabelHostname: SystemNodeName, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
				corev1.LabelTopologyZone: e.Region + "a", "eks.amazonaws.com/nodegroup": "system"},
			Annotations: map[string]string{nodeagent.KwokAnnotation: nodeagent.KwokValue},
		},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl},
	}
	_, err := e.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	return err
}

// The access key IDs that sign calls to the simulator: Tailor's (the AWS environment of
// AWSEnv, which the scheduler reads) and the harness's (Environment.Cloud, the node agent).
// ec2sim.AuthorizationRequest.Principal is one of them.
const (
	TailorAccessKeyID  = "sandbox"
	HarnessAccessKeyID = "harness"
)

// AWSEnv is the environment an AWS SDK client needs to talk to the simulator, as Tailor.
func (e *Environment) AWSEnv() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_EC2":      e.SimURL,
		"AWS_ENDPOINT_URL_SSM":      e.SimURL,
		"AWS_ENDPOINT_URL_PRICING":  e.SimURL,
		"AWS_ENDPOINT_URL_EKS":      e.SimURL,
		"AWS_ENDPOINT_URL_SQS":      e.SimURL,
		"AWS_REGION":                e.Region,
		"AWS_ACCESS_KEY_ID":         TailorAccessKeyID,
		"AWS_SECRET_ACCESS_KEY":     "sandbox",
		"AWS_EC2_METADATA_DISABLED": "true",
	}
}

func (e *Environment) startKwok() error {
	logPath := filepath.Join(e.Dir, "kwok.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(e.KwokPath,
		"--kubeconfig", e.CP.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+nodeagent.KwokAnnotation+"="+nodeagent.KwokValue,
		"--node-lease-duration-seconds=40",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting kwok: %w", err)
	}
	e.stops = append(e.stops, func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
	})
	klog.V(2).Info("kwok started", "log", logPath)
	return nil
}

// Stop tears everything down, newest first.
func (e *Environment) Stop() {
	for i := len(e.stops) - 1; i >= 0; i-- {
		e.stops[i]()
	}
	e.stops = nil
}

// WriteSchedulerConfig writes the scheduler configuration the chart installed (its ConfigMap,
// read back from the API server), pointed at this environment's API server as the chart's
// service account, after letting mutate edit the Tailor args, and returns its path.
func (e *Environment) WriteSchedulerConfig(name string, leaderElect bool, mutate func(args map[string]any)) (string, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(e.schedulerConfig, &cfg); err != nil {
		return "", err
	}
	cfg["clientConnection"] = map[string]any{"kubeconfig": e.SchedulerKubeconfig, "qps": 100, "burst": 200}
	cfg["leaderElection"].(map[string]any)["leaderElect"] = leaderElect
	profile := cfg["profiles"].([]any)[0].(map[string]any)
	args := profile["pluginConfig"].([]any)[0].(map[string]any)["args"].(map[string]any)
	args["clusterName"], args["region"] = e.ClusterName, e.Region
	if mutate != nil {
		mutate(args)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.Dir, name)
	return path, os.WriteFile(path, b, 0o600)
}
