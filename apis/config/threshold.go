package config

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Threshold is an eviction threshold: a quantity, or a percentage of the resource's capacity.
type Threshold struct {
	Quantity *resource.Quantity
	Percent  float64
}

// ParseThreshold reads "500Mi" or "10%" as the kubelet does.
func ParseThreshold(v string) (Threshold, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		// The kubelet takes 0% and 100% as no threshold, and Bottlerocket refuses them.
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f <= 0 || f >= 100 {
			return Threshold{}, fmt.Errorf("a percentage must be above 0%% and below 100%%")
		}
		return Threshold{Percent: f}, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 {
		return Threshold{}, fmt.Errorf("must be a positive quantity (500Mi) or a percentage (10%%)")
	}
	return Threshold{Quantity: &q}, nil
}
