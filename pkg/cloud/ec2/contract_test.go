package ec2

import (
	"testing"

	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/cloudtest"
)

// The EC2 provider, against the simulator through the real SDK, keeps the contract the fake
// keeps (pkg/cloud/cloudtest).
func TestContract(t *testing.T) {
	cloudtest.Contract(t, func(t *testing.T) cloudtest.Env {
		e := newEnv(t)
		return cloudtest.Env{Provider: e.p, Request: e.request(t, "", cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: e.subnet(t, e.sim.Zones()[0])})}
	})
}
