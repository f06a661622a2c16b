package ec2sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// EKS's DescribeCluster, the one EKS call Tailor makes: at start it reads what nodes need to
// join (endpoint, CA bundle, service CIDR, IP family). EKS speaks REST-JSON: GET /clusters/{name}.

// ClusterInfo is what the simulated EKS control plane reports about the cluster.
type ClusterInfo struct {
	// Endpoint is the API server URL (the sandbox's local API server).
	Endpoint string
	// CABundle is the API server's CA, base64-encoded PEM.
	CABundle string
	// ServiceCIDR defaults to 10.100.0.0/16, as EKS picks for most VPCs.
	ServiceCIDR string
	// IPFamily defaults to ipv4.
	IPFamily string
}

// SetCluster sets what DescribeCluster reports. Until it is called, DescribeCluster of the
// simulator's cluster answers with the cluster still CREATING and no endpoint, as EKS does.
func (s *Sim) SetCluster(c ClusterInfo) {
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.100.0.0/16"
	}
	if c.IPFamily == "" {
		c.IPFamily = "ipv4"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cluster = &c
}

// Cluster returns what DescribeCluster reports (false before SetCluster).
func (s *Sim) Cluster() (ClusterInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cluster == nil {
		return ClusterInfo{}, false
	}
	return *s.cluster, true
}

const eksClustersPath = "/clusters/"

func isEKSRequest(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, eksClustersPath)
}

func (s *Sim) serveEKS(w http.ResponseWriter, r *http.Request, begin time.Time) {
	const op = "DescribeCluster"
	name, err := url.PathUnescape(strings.TrimPrefix(r.URL.Path, eksClustersPath))
	if err != nil || name == "" || strings.Contains(name, "/") {
		s.writeEKSError(w, op, &apiError{status: 404, code: "ResourceNotFoundException", message: "No cluster found for the given path."}, begin)
		return
	}
	fault := s.record(op, url.Values{"Name": {name}})
	writeErr := func(e *apiError) { s.writeEKSError(w, op, e, begin) }
	if fault != nil && fault.delayAndFail(r, writeErr) {
		return
	}
	s.mu.Lock()
	s.authorizeAs(principalOf(r), "eks:DescribeCluster", []AuthorizedResource{{Type: "cluster", ID: name, Tags: map[string]string{}}}, nil)
	own, info, region, account := name == s.opts.ClusterName, s.cluster, s.opts.Region, s.opts.AccountID
	reqID := s.newRequestID()
	s.mu.Unlock()
	if !own {
		writeErr(&apiError{status: 404, code: "ResourceNotFoundException", message: fmt.Sprintf("No cluster found for name: %s.", name)})
		return
	}
	cluster := map[string]any{
		"name":    name,
		"arn":     fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", region, account, name),
		"version": "1.34",
		"status":  "CREATING",
	}
	if info != nil {
		network := map[string]any{"ipFamily": info.IPFamily}
		if info.IPFamily == "ipv6" {
			network["serviceIpv6Cidr"] = info.ServiceCIDR
		} else {
			network["serviceIpv4Cidr"] = info.ServiceCIDR
		}
		cluster["status"] = "ACTIVE"
		cluster["endpoint"] = info.Endpoint
		cluster["certificateAuthority"] = map[string]any{"data": info.CABundle}
		cluster["kubernetesNetworkConfig"] = network
	}
	out, _ := json.Marshal(map[string]any{"cluster": cluster})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-RequestId", reqID)
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	s.log.Debug("ec2sim request", "action", op, "status", 200, "duration", time.Since(begin))
}

// writeEKSError writes a REST-JSON error: the code travels in X-Amzn-ErrorType
// only, the body carries just the message.
func (s *Sim) writeEKSError(w http.ResponseWriter, op string, e *apiError, begin time.Time) {
	s.writeErrorBody(w, op, e, begin, "application/json", map[string]string{"message": e.message})
}
