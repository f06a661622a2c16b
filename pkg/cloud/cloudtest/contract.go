// Package cloudtest is the contract every cloud.Provider keeps, as tests: pkg/cloud/ec2 runs it
// against the EC2 simulator through the real SDK, pkg/cloud/fake against the in-memory fake, so
// unit tests written on the fake rely only on what the real provider does too.
package cloudtest

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Env is a provider under test and what a launch needs from its world.
type Env struct {
	Provider cloud.Provider
	// Request is a launchable request (overrides, image, security groups, the tags that mark
	// the instance as the test's); Contract sets ClientToken.
	Request cloud.LaunchRequest
}

// Contract runs the contract's cases, each on a fresh Env from newEnv.
func Contract(t *testing.T, newEnv func(t *testing.T) Env) {
	ctx := context.Background()
	t.Run("catalog prices are positive and finite", func(t *testing.T) {
		e := newEnv(t)
		types, err := e.Provider.InstanceTypes(ctx)
		if err != nil || len(types) == 0 {
			t.Fatalf("InstanceTypes: %d types, %v", len(types), err)
		}
		for _, it := range types {
			for _, o := range it.Offerings {
				if !(o.PricePerHour > 0) || math.IsInf(o.PricePerHour, 1) || o.Zone == "" {
					t.Fatalf("%s: offering %+v", it.Name, o)
				}
			}
		}
	})
	t.Run("one type is the list's entry of that name", func(t *testing.T) {
		e := newEnv(t)
		types, err := e.Provider.InstanceTypes(ctx)
		if err != nil || len(types) == 0 {
			t.Fatalf("InstanceTypes: %d types, %v", len(types), err)
		}
		for _, want := range []cloud.InstanceType{types[0], types[len(types)-1]} {
			got, ok, err := e.Provider.InstanceType(ctx, want.Name)
			if err != nil || !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("InstanceType(%s) = %+v, %v, %v; want %+v", want.Name, got, ok, err, want)
			}
		}
		if _, ok, err := e.Provider.InstanceType(ctx, "no.such-type"); ok || err != nil {
			t.Errorf("InstanceType of an unknown name: ok %v, err %v", ok, err)
		}
	})
	t.Run("a client token launches once", func(t *testing.T) {
		e := newEnv(t)
		req := e.Request
		req.ClientToken = "contract-once"
		first, err := e.Provider.Launch(ctx, req)
		if err != nil || first.Instance == nil || first.Instance.ID == "" {
			t.Fatalf("launch: %+v, %v", first, err)
		}
		second, err := e.Provider.Launch(ctx, req)
		if err != nil || second.Instance == nil || second.Instance.ID != first.Instance.ID {
			t.Fatalf("the same token again: %+v, %v; want instance %s", second, err, first.Instance.ID)
		}
		found, err := e.Provider.Instances(ctx, req.Tags)
		if err != nil || len(found) != 1 || found[0].ID != first.Instance.ID {
			t.Fatalf("instances with the launch's tags: %+v, %v; want just %s", found, err, first.Instance.ID)
		}
		in := found[0]
		for k, v := range req.Tags {
			if in.Tags[k] != v {
				t.Errorf("tag %s=%q on the instance, want %q", k, in.Tags[k], v)
			}
		}
		if in.Zone == "" || in.PrivateDNSName == "" || in.CapacityType != req.CapacityType {
			t.Errorf("instance %+v lacks zone, DNS name or capacity type %s", in, req.CapacityType)
		}
	})
	t.Run("terminated instances are not listed, and terminating is idempotent", func(t *testing.T) {
		e := newEnv(t)
		req := e.Request
		req.ClientToken = "contract-terminate"
		res, err := e.Provider.Launch(ctx, req)
		if err != nil || res.Instance == nil {
			t.Fatalf("launch: %+v, %v", res, err)
		}
		if err := e.Provider.Terminate(ctx, res.Instance.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.Provider.Terminate(ctx, res.Instance.ID); err != nil {
			t.Errorf("terminating again: %v", err)
		}
		found, err := e.Provider.Instances(ctx, req.Tags)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range found {
			if in.ID == res.Instance.ID && in.State != cloud.StateShuttingDown && in.State != cloud.StateTerminated {
				t.Errorf("terminated instance listed as %s", in.State)
			}
		}
	})
	t.Run("a launch runs the image resolved for it earlier", func(t *testing.T) {
		e := newEnv(t)
		req := e.Request
		var names []string
		for _, o := range req.Overrides {
			names = append(names, o.InstanceType)
		}
		id, err := e.Provider.ResolveImage(ctx, req.Image, names)
		if err != nil || !strings.HasPrefix(id, "ami-") {
			t.Fatalf("ResolveImage(%q): %q, %v; want an AMI ID", req.Image, id, err)
		}
		if again, err := e.Provider.ResolveImage(ctx, id, names); err != nil || again != id {
			t.Errorf("ResolveImage(%q): %q, %v; an AMI ID resolves to itself", id, again, err)
		}
		if _, err := e.Provider.ResolveImage(ctx, req.Image, nil); err == nil {
			t.Error("ResolveImage without instance types: no error")
		}
		req.ClientToken, req.ImageID = "contract-image", id
		res, err := e.Provider.Launch(ctx, req)
		if err != nil || res.Instance == nil || res.Instance.ImageID != id {
			t.Fatalf("launch with image ID %s: %+v, %v", id, res, err)
		}
	})
	t.Run("a launch without overrides is an error", func(t *testing.T) {
		e := newEnv(t)
		req := e.Request
		req.ClientToken, req.Overrides = "contract-none", nil
		if res, err := e.Provider.Launch(ctx, req); err == nil {
			t.Fatalf("launch without overrides: %+v", res)
		}
	})
}
