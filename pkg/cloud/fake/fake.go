// Package fake is an in-memory cloud.Provider for fast unit tests of the code above pkg/cloud
// (launching, lifecycle, consolidation): no HTTP, no SDK, no simulator. It keeps the contract
// the EC2 provider keeps, which pkg/cloud/cloudtest checks for both, but none of EC2's detail
// (launch templates hold nothing, prices are what the test sets). Tests of behaviour across
// components use the wire-level simulator (pkg/sim/ec2sim) through the real provider instead.
package fake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Provider is the fake. The zero value is not usable: use New.
type Provider struct {
	mu        sync.Mutex
	types     []cloud.InstanceType
	subnets   []cloud.Subnet
	groups    []string
	instances []*cloud.Instance
	byToken   map[string]*cloud.Instance
	templates []cloud.LaunchTemplate
	failures  []failure
	capacity  map[string]int // "type/zone/capacity-type" → instances left; absent means unbounded
	images    map[string]string
	// reservations are what CapacityReservations returns, whatever the selector.
	reservations []cloud.CapacityReservation
	launches     int
	next         int
	now          func() time.Time
}

type failure struct {
	method string
	err    error
	times  int
}

var _ cloud.Provider = (*Provider)(nil)

// New returns a fake offering the given types in the subnets' zones, with the security groups.
func New(types []cloud.InstanceType, subnets []cloud.Subnet, securityGroups []string) *Provider {
	return &Provider{types: types, subnets: subnets, groups: securityGroups, byToken: map[string]*cloud.Instance{}, capacity: map[string]int{}, images: map[string]string{}, now: time.Now}
}

// Fail makes the next times calls of method (Launch, InstanceTypes, Instances, Terminate, ...)
// return err; times 0 means until ClearFailures.
func (p *Provider) Fail(method string, err error, times int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures = append(p.failures, failure{method: method, err: err, times: times})
}

// ClearFailures removes every failure set by Fail.
func (p *Provider) ClearFailures() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures = nil
}

// SetCapacity bounds the instances of a type, zone and capacity type that can still launch; a
// launch finding none left reports InsufficientInstanceCapacity for that override.
func (p *Provider) SetCapacity(instanceType, zone string, ct cloud.CapacityType, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.capacity[instanceType+"/"+zone+"/"+string(ct)] = n
}

// Launches is how many launches created an instance (a repeated client token creates none).
func (p *Provider) Launches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.launches
}

// AddInstance adds an instance as if someone had launched it (a launch whose answer was lost, one
// made before a restart, or somebody else's), with the tags and launch time it says; an empty
// state is running.
func (p *Provider) AddInstance(in cloud.Instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if in.State == "" {
		in.State = cloud.StateRunning
	}
	in.Tags = maps.Clone(in.Tags)
	p.instances = append(p.instances, &in)
}

// SetState changes an instance's state, as a console action or EC2 itself would.
func (p *Provider) SetState(id, state string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, in := range p.instances {
		if in.ID == id {
			in.State = state
		}
	}
}

// failing returns the error set for method, using it once. Callers hold mu.
func (p *Provider) failing(method string) error {
	for i, f := range p.failures {
		if f.method != method {
			continue
		}
		if f.times > 0 {
			if f.times--; f.times == 0 {
				p.failures = slices.Delete(p.failures, i, i+1)
			} else {
				p.failures[i] = f
			}
		}
		return f.err
	}
	return nil
}

// InstanceTypes implements cloud.Provider.
func (p *Provider) InstanceTypes(context.Context) ([]cloud.InstanceType, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("InstanceTypes"); err != nil {
		return nil, err
	}
	out := slices.Clone(p.types)
	for i := range out {
		out[i].Offerings = slices.Clone(out[i].Offerings)
	}
	return out, nil
}

// InstanceType implements cloud.Provider.
func (p *Provider) InstanceType(ctx context.Context, name string) (cloud.InstanceType, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("InstanceTypes"); err != nil {
		return cloud.InstanceType{}, false, err
	}
	for _, it := range p.types {
		if it.Name == name {
			it.Offerings = slices.Clone(it.Offerings)
			return it, true, nil
		}
	}
	return cloud.InstanceType{}, false, nil
}

// ResolveImageSelector returns the first of the selector's IDs, or a fixed image for tags.
func (p *Provider) ResolveImageSelector(_ context.Context, sel cloud.Selector, instanceTypes []string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("ResolveImageSelector"); err != nil {
		return "", err
	}
	if len(instanceTypes) == 0 {
		return "", errors.New("fake: no instance types")
	}
	if len(sel.IDs) > 0 {
		return sel.IDs[0], nil
	}
	return "ami-0fa4e5e1ec7ed0000", nil
}

// SetCapacityReservations sets the reservations CapacityReservations returns.
func (p *Provider) SetCapacityReservations(rs []cloud.CapacityReservation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reservations = slices.Clone(rs)
}

// CapacityReservations returns the reservations set, those of the selector's IDs if it has any.
func (p *Provider) CapacityReservations(_ context.Context, sel cloud.Selector) ([]cloud.CapacityReservation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("CapacityReservations"); err != nil {
		return nil, err
	}
	var out []cloud.CapacityReservation
	for _, r := range p.reservations {
		if len(sel.IDs) == 0 || slices.Contains(sel.IDs, r.ID) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Subnets implements cloud.Provider: by ID, or every subnet for a tag selector (the fake's
// subnets carry no tags).
func (p *Provider) Subnets(_ context.Context, sel cloud.Selector) ([]cloud.Subnet, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("Subnets"); err != nil {
		return nil, err
	}
	var out []cloud.Subnet
	for _, s := range p.subnets {
		if len(sel.IDs) == 0 || slices.Contains(sel.IDs, s.ID) {
			out = append(out, s)
		}
	}
	return out, nil
}

// SecurityGroups implements cloud.Provider: the groups named by ID, or all of them for tags.
func (p *Provider) SecurityGroups(_ context.Context, sel cloud.Selector) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("SecurityGroups"); err != nil {
		return nil, err
	}
	if len(sel.IDs) == 0 {
		return slices.Clone(p.groups), nil
	}
	var out []string
	for _, g := range p.groups {
		if slices.Contains(sel.IDs, g) {
			out = append(out, g)
		}
	}
	return out, nil
}

// SetImage makes an image alias (al2023, bottlerocket) resolve to the AMI, as a new release
// behind an SSM parameter would; an alias never set resolves to ami-fake.
func (p *Provider) SetImage(alias, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.images[alias] = id
}

// ResolveImage implements cloud.Provider: an AMI ID is itself, an alias what SetImage made it.
func (p *Provider) ResolveImage(_ context.Context, image string, instanceTypes []string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("ResolveImage"); err != nil {
		return "", err
	}
	if len(instanceTypes) == 0 {
		return "", errors.New("fake: resolving image: no instance types")
	}
	return p.resolve(image), nil
}

// resolve is ResolveImage's answer. Callers hold mu.
func (p *Provider) resolve(image string) string {
	if strings.HasPrefix(image, "ami-") {
		return image
	}
	if id, ok := p.images[image]; ok {
		return id
	}
	return "ami-fake"
}

// Launch implements cloud.Provider: the first override with capacity gets a running instance;
// a client token seen before returns that launch's instance and creates nothing.
func (p *Provider) Launch(_ context.Context, req cloud.LaunchRequest) (*cloud.LaunchResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("Launch"); err != nil {
		return nil, err
	}
	if len(req.Overrides) == 0 {
		return nil, errors.New("fake: launch without overrides")
	}
	if in, ok := p.byToken[req.ClientToken]; ok && req.ClientToken != "" {
		c := *in
		return &cloud.LaunchResult{Instance: &c}, nil
	}
	res := &cloud.LaunchResult{}
	for _, o := range req.Overrides {
		var sub *cloud.Subnet
		for i := range p.subnets {
			if p.subnets[i].ID == o.SubnetID {
				sub = &p.subnets[i]
			}
		}
		if sub == nil {
			return nil, fmt.Errorf("fake: launch: subnet %s does not exist", o.SubnetID)
		}
		key := o.InstanceType + "/" + sub.Zone + "/" + string(req.CapacityType)
		if left, bounded := p.capacity[key]; bounded && left <= 0 {
			res.Errors = append(res.Errors, cloud.OfferingError{InstanceType: o.InstanceType, Zone: sub.Zone, SubnetID: sub.ID,
				Code: "InsufficientInstanceCapacity", Message: "fake: no capacity left"})
			continue
		} else if bounded {
			p.capacity[key] = left - 1
		}
		image := req.ImageID
		if image == "" {
			image = p.resolve(req.Image)
		}
		p.next++
		in := &cloud.Instance{
			ID: fmt.Sprintf("i-%017x", p.next), Type: o.InstanceType, Zone: sub.Zone, SubnetID: sub.ID, ImageID: image,
			PrivateDNSName: fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", p.next/250, p.next%250+1), PrivateIP: fmt.Sprintf("10.0.%d.%d", p.next/250, p.next%250+1),
			State: cloud.StateRunning, CapacityType: req.CapacityType, LaunchTime: p.now(), Tags: maps.Clone(req.Tags),
		}
		p.instances = append(p.instances, in)
		if req.ClientToken != "" {
			p.byToken[req.ClientToken] = in
		}
		p.launches++
		c := *in
		res.Instance = &c
		return res, nil
	}
	return res, nil
}

// Instances implements cloud.Provider: the instances not terminated carrying every tag ("*"
// matches any value).
func (p *Provider) Instances(_ context.Context, tags map[string]string) ([]cloud.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("Instances"); err != nil {
		return nil, err
	}
	var out []cloud.Instance
	for _, in := range p.instances {
		if in.State != cloud.StateTerminated && tagsMatch(in.Tags, tags) {
			c := *in
			c.Tags = maps.Clone(in.Tags)
			out = append(out, c)
		}
	}
	return out, nil
}

// Terminate implements cloud.Provider; unknown or terminated IDs are not an error.
func (p *Provider) Terminate(_ context.Context, ids ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("Terminate"); err != nil {
		return err
	}
	for _, in := range p.instances {
		if slices.Contains(ids, in.ID) {
			in.State = cloud.StateTerminated
		}
	}
	return nil
}

// LaunchTemplates implements cloud.Provider: the fake keeps the templates tests add with
// AddLaunchTemplate (Launch creates none).
func (p *Provider) LaunchTemplates(_ context.Context, tags map[string]string) ([]cloud.LaunchTemplate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("LaunchTemplates"); err != nil {
		return nil, err
	}
	var out []cloud.LaunchTemplate
	for _, t := range p.templates {
		if tagsMatch(t.Tags, tags) {
			out = append(out, t)
		}
	}
	return out, nil
}

// AddLaunchTemplate records a launch template, as if the provider had created it.
func (p *Provider) AddLaunchTemplate(t cloud.LaunchTemplate) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.templates = append(p.templates, t)
}

// DeleteLaunchTemplate implements cloud.Provider; an unknown ID is not an error.
func (p *Provider) DeleteLaunchTemplate(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failing("DeleteLaunchTemplate"); err != nil {
		return err
	}
	p.templates = slices.DeleteFunc(p.templates, func(t cloud.LaunchTemplate) bool { return t.ID == id })
	return nil
}

func tagsMatch(have, want map[string]string) bool {
	for k, v := range want {
		got, ok := have[k]
		if !ok || v != "*" && got != v {
			return false
		}
	}
	return true
}
