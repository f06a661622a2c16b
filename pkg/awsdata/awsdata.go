// Package awsdata holds the EC2 facts Tailor ships with: the DescribeInstanceTypes records of
// us-east-1, Linux on-demand prices and the per-type ENI limits the EKS-optimized AMI uses for
// max pods. The files are embedded compressed; see data/README.md for where each came from.
//
// Each loader parses its file once (on first use) and is safe for concurrent use.
package awsdata

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

//go:embed data/*.gz
var files embed.FS

const (
	instanceTypesFile = "data/instance-types-us-east-1.json.gz"
	pricesFile        = "data/on-demand-prices-us-east-1.json.gz"
	eniLimitsFile     = "data/eks-instance-eni-limits.jsonl.gz"
)

// Region is the region the shipped instance types and prices describe.
const Region = "us-east-1"

// ENILimit is what the EKS-optimized AMI uses to compute max pods for an instance type:
// maxPods = MaxENIs * (IPv4PerENI - 1) + 2.
type ENILimit struct {
	MaxENIs    int64
	IPv4PerENI int64
}

var (
	typesOnce sync.Once
	typesData []ec2types.InstanceTypeInfo
	typesErr  error

	pricesOnce sync.Once
	pricesData map[string]float64
	pricesErr  error

	eniOnce sync.Once
	eniData map[string]ENILimit
	eniErr  error
)

// InstanceTypes returns the shipped DescribeInstanceTypes records, sorted by type name.
//
// The slice is new on every call, but the records' pointer fields (VCpuInfo, NetworkInfo, ...)
// are shared between calls: treat them as read-only.
func InstanceTypes() ([]ec2types.InstanceTypeInfo, error) {
	typesOnce.Do(func() { typesData, typesErr = loadInstanceTypes() })
	if typesErr != nil {
		return nil, typesErr
	}
	return slices.Clone(typesData), nil
}

// OnDemandPrices returns the Linux on-demand price in USD per hour by instance type (us-east-1
// list prices). The EC2 provider falls back on them when the Pricing API cannot be asked, and the
// simulator serves them. The map is a copy the caller may change.
func OnDemandPrices() (map[string]float64, error) {
	pricesOnce.Do(func() { pricesData, pricesErr = loadPrices() })
	if pricesErr != nil {
		return nil, pricesErr
	}
	return maps.Clone(pricesData), nil
}

// ENILimits returns the ENI limits by instance type. The map is a copy the caller may change.
func ENILimits() (map[string]ENILimit, error) {
	eniOnce.Do(func() { eniData, eniErr = loadENILimits() })
	if eniErr != nil {
		return nil, eniErr
	}
	return maps.Clone(eniData), nil
}

func readGzip(name string) ([]byte, error) {
	raw, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("awsdata: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("awsdata: %s: %w", name, err)
	}
	defer zr.Close()
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("awsdata: %s: %w", name, err)
	}
	return b, nil
}

// instanceTypesDoc is the shape of instance-types-us-east-1.json.
type instanceTypesDoc struct {
	GeneratedAt   string                     `json:"generated_at"`
	InstanceTypes map[string]json.RawMessage `json:"instance_types"`
}

func loadInstanceTypes() ([]ec2types.InstanceTypeInfo, error) {
	b, err := readGzip(instanceTypesFile)
	if err != nil {
		return nil, err
	}
	recs, err := decodeInstanceTypes(b, false)
	if err != nil {
		return nil, fmt.Errorf("awsdata: %s: %w", instanceTypesFile, err)
	}
	return recs, nil
}

// decodeInstanceTypes decodes the records of an instance types document; with strict set, a JSON
// key without a matching InstanceTypeInfo field is an error.
func decodeInstanceTypes(b []byte, strict bool) ([]ec2types.InstanceTypeInfo, error) {
	var doc instanceTypesDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if len(doc.InstanceTypes) == 0 {
		return nil, fmt.Errorf("no instance types")
	}
	out := make([]ec2types.InstanceTypeInfo, 0, len(doc.InstanceTypes))
	for _, name := range slices.Sorted(maps.Keys(doc.InstanceTypes)) {
		dec := json.NewDecoder(bytes.NewReader(doc.InstanceTypes[name]))
		if strict {
			dec.DisallowUnknownFields()
		}
		var info ec2types.InstanceTypeInfo
		if err := dec.Decode(&info); err != nil {
			return nil, fmt.Errorf("instance type %s: %w", name, err)
		}
		if string(info.InstanceType) != name {
			return nil, fmt.Errorf("instance type %s: record names %q", name, info.InstanceType)
		}
		out = append(out, info)
	}
	return out, nil
}

// pricesDoc is the shape of on-demand-prices-us-east-1.json.
type pricesDoc struct {
	Region   string             `json:"region"`
	Currency string             `json:"currency"`
	Prices   map[string]float64 `json:"prices"`
}

func loadPrices() (map[string]float64, error) {
	b, err := readGzip(pricesFile)
	if err != nil {
		return nil, err
	}
	var doc pricesDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("awsdata: %s: %w", pricesFile, err)
	}
	if doc.Currency != "USD" || len(doc.Prices) == 0 {
		return nil, fmt.Errorf("awsdata: %s: want USD prices, got currency %q and %d prices", pricesFile, doc.Currency, len(doc.Prices))
	}
	return doc.Prices, nil
}

// eniLine is one line of eks-instance-eni-limits.jsonl.
type eniLine struct {
	InstanceType              string `json:"instanceType"`
	DefaultMaxENIs            int64  `json:"defaultMaxENIs"`
	IPv4AddressesPerInterface int64  `json:"ipv4AddressesPerInterface"`
}

func loadENILimits() (map[string]ENILimit, error) {
	b, err := readGzip(eniLimitsFile)
	if err != nil {
		return nil, err
	}
	out := map[string]ENILimit{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var l eniLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("awsdata: %s line %d: %w", eniLimitsFile, n, err)
		}
		if l.InstanceType == "" {
			return nil, fmt.Errorf("awsdata: %s line %d: no instanceType", eniLimitsFile, n)
		}
		out[l.InstanceType] = ENILimit{MaxENIs: l.DefaultMaxENIs, IPv4PerENI: l.IPv4AddressesPerInterface}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("awsdata: %s: %w", eniLimitsFile, err)
	}
	return out, nil
}
