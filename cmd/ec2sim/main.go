// Command ec2sim serves the EC2 (and SSM GetParameter, Pricing GetProducts, EKS
// DescribeCluster and SQS) simulator of package ec2sim over HTTP, so Tailor and the AWS CLI can
// run against a simulated region:
//
//	ec2sim --listen 127.0.0.1:0 --cluster demo --queue demo-interruptions
//	export AWS_ENDPOINT_URL_EC2=<printed URL> AWS_ENDPOINT_URL_SSM=<printed URL> \
//	       AWS_ENDPOINT_URL_PRICING=<printed URL> AWS_ENDPOINT_URL_SQS=<printed URL> AWS_REGION=us-east-1 \
//	       AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x AWS_EC2_METADATA_DISABLED=true
//
// Without AWS_ENDPOINT_URL_PRICING, Tailor uses its shipped on-demand prices and does not ask the
// Pricing API. With interruptionQueue: demo-interruptions in Tailor's args, an interruption event
// for an instance is put on the queue as EventBridge would put it with
//
//	curl -X POST <URL>/_ec2sim/sqs/demo-interruptions -d '{"kind": "spot-interruption", "instanceId": "i-…"}'
//
// (kinds: spot-interruption, rebalance-recommendation, scheduled-change, and state-change with
// "state": "stopping"; ?raw=1 sends the body itself, well-formed or not).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on (port 0 picks a free port)")
	region := flag.String("region", "us-east-1", "simulated region")
	cluster := flag.String("cluster", "tailor", "cluster name in the discovery tags of subnets and security group")
	zones := flag.String("zones", "", "comma-separated zones (default <region>a,b,c)")
	subnets := flag.Int("subnets-per-zone", 2, "subnets per zone")
	pending := flag.Duration("pending", time.Second, "how long instances stay pending")
	shutting := flag.Duration("shutting-down", time.Second, "how long instances stay shutting-down")
	verbose := flag.Bool("v", false, "log every request")
	queues := flag.String("queue", "", "comma-separated SQS queues to create (more with CreateQueue)")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	opts := ec2sim.Options{Region: *region, ClusterName: *cluster, SubnetsPerZone: *subnets,
		PendingFor: instantIfZero(*pending), ShuttingDownFor: instantIfZero(*shutting), Logger: logger}
	if *zones != "" {
		opts.Zones = strings.Split(*zones, ",")
	}
	if *queues != "" {
		opts.Queues = strings.Split(*queues, ",")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ec2sim:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	srv := &http.Server{Handler: ec2sim.New(opts), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "ec2sim:", err)
		os.Exit(1)
	}
}

// instantIfZero maps a zero flag value to ec2sim.Immediately (a zero Option means the default).
func instantIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return ec2sim.Immediately
	}
	return d
}
