package awsdata

import (
	"slices"
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestInstanceTypes(t *testing.T) {
	types, err := InstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	if len(types) != 1166 {
		t.Errorf("got %d instance types, want 1166", len(types))
	}
	byName := map[string]ec2types.InstanceTypeInfo{}
	for _, it := range types {
		byName[string(it.InstanceType)] = it
	}
	if !slices.IsSortedFunc(types, func(a, b ec2types.InstanceTypeInfo) int {
		return compareStrings(string(a.InstanceType), string(b.InstanceType))
	}) {
		t.Error("instance types are not sorted by name")
	}

	tests := []struct {
		name       string
		vcpus      int32
		memMiB     int64
		arch       ec2types.ArchitectureType
		maxENIs    int32
		ipv4PerENI int32
		gpus       int32
		spot       bool
		bareMetal  bool
		hypervisor ec2types.InstanceTypeHypervisor
	}{
		{name: "a1.2xlarge", vcpus: 8, memMiB: 16384, arch: "arm64", maxENIs: 4, ipv4PerENI: 15, spot: true, hypervisor: "nitro"},
		{name: "m5.large", vcpus: 2, memMiB: 8192, arch: "x86_64", maxENIs: 3, ipv4PerENI: 10, spot: true, hypervisor: "nitro"},
		{name: "m5.metal", vcpus: 96, memMiB: 393216, arch: "x86_64", maxENIs: 15, ipv4PerENI: 50, spot: true, bareMetal: true},
		{name: "g5.xlarge", vcpus: 4, memMiB: 16384, arch: "x86_64", maxENIs: 4, ipv4PerENI: 15, gpus: 1, spot: true, hypervisor: "nitro"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, ok := byName[tt.name]
			if !ok {
				t.Fatalf("%s missing", tt.name)
			}
			if got := *it.VCpuInfo.DefaultVCpus; got != tt.vcpus {
				t.Errorf("vCPUs = %d, want %d", got, tt.vcpus)
			}
			if got := *it.MemoryInfo.SizeInMiB; got != tt.memMiB {
				t.Errorf("memory = %d, want %d", got, tt.memMiB)
			}
			if !slices.Contains(it.ProcessorInfo.SupportedArchitectures, tt.arch) {
				t.Errorf("architectures = %v, want %s", it.ProcessorInfo.SupportedArchitectures, tt.arch)
			}
			if got := *it.NetworkInfo.MaximumNetworkInterfaces; got != tt.maxENIs {
				t.Errorf("max ENIs = %d, want %d", got, tt.maxENIs)
			}
			if got := *it.NetworkInfo.Ipv4AddressesPerInterface; got != tt.ipv4PerENI {
				t.Errorf("IPv4 per ENI = %d, want %d", got, tt.ipv4PerENI)
			}
			var gpus int32
			if it.GpuInfo != nil {
				for _, g := range it.GpuInfo.Gpus {
					gpus += *g.Count
				}
			}
			if gpus != tt.gpus {
				t.Errorf("GPUs = %d, want %d", gpus, tt.gpus)
			}
			if got := slices.Contains(it.SupportedUsageClasses, ec2types.UsageClassTypeSpot); got != tt.spot {
				t.Errorf("spot = %v, want %v", got, tt.spot)
			}
			if got := *it.BareMetal; got != tt.bareMetal {
				t.Errorf("bare metal = %v, want %v", got, tt.bareMetal)
			}
			if it.Hypervisor != tt.hypervisor {
				t.Errorf("hypervisor = %q, want %q", it.Hypervisor, tt.hypervisor)
			}
		})
	}

	// The loader returns a new slice each time: changing it does not change the next result.
	types[0].InstanceType = "changed"
	again, _ := InstanceTypes()
	if again[0].InstanceType == "changed" {
		t.Error("InstanceTypes shares its slice between calls")
	}
}

// TestInstanceTypeKeysMatchSDK decodes every record strictly: every JSON key of the shipped
// records must name a field of the SDK's InstanceTypeInfo (at every depth).
func TestInstanceTypeKeysMatchSDK(t *testing.T) {
	b, err := readGzip(instanceTypesFile)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := decodeInstanceTypes(b, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1166 {
		t.Errorf("got %d records", len(recs))
	}
}

func TestOnDemandPrices(t *testing.T) {
	prices, err := OnDemandPrices()
	if err != nil {
		t.Fatal(err)
	}
	if len(prices) != 1367 {
		t.Errorf("got %d prices, want 1367", len(prices))
	}
	tests := []struct {
		name string
		want float64
	}{
		{"a1.2xlarge", 0.204},
		{"a1.medium", 0.0255},
		{"c3.large", 0.105},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := prices[tt.name]; !ok || got != tt.want {
				t.Errorf("price = %v (%v), want %v", got, ok, tt.want)
			}
		})
	}
	types, err := InstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, it := range types {
		if _, ok := prices[string(it.InstanceType)]; !ok {
			missing = append(missing, string(it.InstanceType))
		}
	}
	if len(missing) != 8 {
		t.Errorf("types without a price: %v, want the 8 mac types", missing)
	}
	prices["a1.2xlarge"] = 99
	again, _ := OnDemandPrices()
	if again["a1.2xlarge"] != 0.204 {
		t.Error("OnDemandPrices shares its map between calls")
	}
}

func TestENILimits(t *testing.T) {
	limits, err := ENILimits()
	if err != nil {
		t.Fatal(err)
	}
	if len(limits) != 1384 {
		t.Errorf("got %d limits, want 1384", len(limits))
	}
	tests := []struct {
		name string
		want ENILimit
	}{
		{"a1.2xlarge", ENILimit{MaxENIs: 4, IPv4PerENI: 15}},
		{"a1.4xlarge", ENILimit{MaxENIs: 8, IPv4PerENI: 30}},
		{"a1.large", ENILimit{MaxENIs: 3, IPv4PerENI: 10}},
		{"m5.large", ENILimit{MaxENIs: 3, IPv4PerENI: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := limits[tt.name]; got != tt.want {
				t.Errorf("limit = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
