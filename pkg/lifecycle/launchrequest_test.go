package lifecycle

import (
	"slices"
	"testing"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// A launch offers every subnet of the zone unless types × subnets would pass CreateFleet's 300
// overrides; then the subnets with the most free addresses, and never fewer than one.
func TestSubnetsFor(t *testing.T) {
	var subnets []cloud.Subnet
	for i := range 8 {
		subnets = append(subnets, cloud.Subnet{ID: string(rune('a' + i)), Zone: "z1", AvailableIPs: int64(i * 10)})
	}
	subnets = append(subnets, cloud.Subnet{ID: "other", Zone: "z2", AvailableIPs: 1000})
	for _, tc := range []struct {
		types int
		want  []string
	}{
		{10, []string{"a", "b", "c", "d", "e", "f", "g", "h"}},
		{60, []string{"h", "g", "f", "e", "d"}},
		{301, []string{"h"}},
	} {
		if got := subnetsFor(subnets, "z1", tc.types); !slices.Equal(got, tc.want) {
			t.Errorf("%d types: subnets %v, want %v", tc.types, got, tc.want)
		}
	}
}
