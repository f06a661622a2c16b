package lifecycle

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/nodeshape"
)

// createInstance asks EC2 for the claim's instance: one of its types in its zone, on its pool's
// image and network as the claim's request records them. It returns the instance and its price,
// and the offerings EC2 found without capacity.
func (c *Controller) createInstance(ctx context.Context, cl *v1alpha1.Claim) (*cloud.Instance, float64, []cloud.OfferingError, error) {
	pool := c.Args.Pool(cl.Spec.Pool)
	if pool == nil {
		return nil, 0, nil, fmt.Errorf("pool %q is no longer configured", cl.Spec.Pool)
	}
	req, err := c.request(ctx, cl, pool)
	if err != nil {
		return nil, 0, nil, err
	}
	var overrides []cloud.Override
	for _, it := range cl.Spec.InstanceTypes {
		for _, s := range req.SubnetIDs {
			overrides = append(overrides, cloud.Override{InstanceType: it, SubnetID: s})
		}
	}
	res, err := c.Cloud.Launch(ctx, cloud.LaunchRequest{
		ClientToken:      string(cl.UID),
		CapacityType:     cloud.CapacityType(cl.Spec.CapacityType),
		Overrides:        overrides,
		Image:            pool.AMI,
		ImageID:          req.ImageID,
		InstanceProfile:  pool.InstanceProfile,
		SecurityGroupIDs: req.SecurityGroupIDs,
		NodeLabels:       nodeshape.NodeLabels(pool, cl.Spec.CapacityType),
		NodeTaints:       nodeshape.RegistrationTaints(pool),
		Tags:             nodeshape.InstanceTags(c.Args.ClusterName, pool, cl.Name),
		TemplateTags:     nodeshape.TemplateTags(pool),
		Settings:         launchSettings(pool),
		Reservation:      reservationOf(cl),
	})
	if err != nil {
		var noCapacity []cloud.OfferingError
		if res != nil {
			noCapacity = res.Errors
		}
		return nil, 0, noCapacity, err
	}
	if res.Instance == nil {
		return nil, 0, res.Errors, fmt.Errorf("no offering could be launched: %s", offeringErrors(res.Errors))
	}
	return res.Instance, c.price(ctx, res.Instance), res.Errors, nil
}

// request returns the claim's launch request as its first attempt resolved it: the image and
// network are resolved from the pool once, and recorded on the claim before anything is sent,
// so that every later attempt with the claim's client token (a retry, or the resume after a
// crash that lost EC2's answer) sends the same request and gets the first attempt's instance.
// Resolved anew, an image alias released meanwhile or a changed subnet would make EC2 refuse
// the token (IdempotentParameterMismatch), which the provider can only answer by searching
// for the instance by its tags.
func (c *Controller) request(ctx context.Context, cl *v1alpha1.Claim, pool *config.Pool) (*v1alpha1.LaunchRequest, error) {
	if cl.Status.Request != nil {
		return cl.Status.Request, nil
	}
	nw, err := c.Offerings.Network(ctx, pool)
	if err != nil {
		return nil, err
	}
	subnets := subnetsFor(nw.Subnets, cl.Spec.Zone, len(cl.Spec.InstanceTypes))
	if len(subnets) == 0 {
		return nil, fmt.Errorf("pool %s has no subnet in %s", pool.Name, cl.Spec.Zone)
	}
	image, err := c.resolveImage(ctx, pool, cl.Spec.InstanceTypes)
	if err != nil {
		return nil, err
	}
	resolved := &v1alpha1.LaunchRequest{ImageID: image, SubnetIDs: subnets, SecurityGroupIDs: slices.Clone(nw.Groups)}
	// On the claim's newest version: an attempt of another process may have recorded its own
	// first, and then that one is the request.
	updated, err := c.updateStatus(ctx, cl, func(st *v1alpha1.ClaimStatus) {
		if st.Request == nil {
			st.Request = resolved
		}
	})
	if err != nil {
		return nil, fmt.Errorf("recording the launch request on claim %s: %w", cl.Name, err)
	}
	if updated == nil {
		return nil, fmt.Errorf("claim %s is no longer pending", cl.Name)
	}
	return updated.Status.Request, nil
}

// price is the instance's price per hour in its zone and capacity type (0 if the catalog lacks it).
func (c *Controller) price(ctx context.Context, inst *cloud.Instance) float64 {
	it, ok, err := c.Cloud.InstanceType(ctx, inst.Type)
	if err != nil || !ok {
		return 0
	}
	for _, o := range it.Offerings {
		if o.Zone == inst.Zone && o.CapacityType == inst.CapacityType {
			return o.PricePerHour
		}
	}
	return 0
}

// maxOfferingErrors bounds the offering errors a failed launch's message lists: it goes into the
// claim's status and the pods' events, which the API server refuses past 1024 characters.
const maxOfferingErrors = 5

// offeringErrors lists the distinct errors (one offering's error repeats for each of its zone's
// subnets), the first maxOfferingErrors of them and how many more there were.
func offeringErrors(errs []cloud.OfferingError) string {
	var msgs []string
	for _, e := range errs {
		if msg := e.Error(); !slices.Contains(msgs, msg) {
			msgs = append(msgs, msg)
		}
	}
	if len(msgs) <= maxOfferingErrors {
		return strings.Join(msgs, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(msgs[:maxOfferingErrors], "; "), len(msgs)-maxOfferingErrors)
}

// launchSettings are the pool's launch settings as the cloud takes them.
func launchSettings(pool *config.Pool) cloud.LaunchSettings {
	s := cloud.LaunchSettings{
		HTTPTokens: pool.MetadataOptions.HTTPTokens, HopLimit: pool.MetadataOptions.HTTPPutResponseHopLimit,
		IMDSIPv6: pool.MetadataOptions.HTTPProtocolIPv6, DetailedMonitoring: pool.DetailedMonitoring,
		Kubelet: pool.Kubelet, ImageFamily: pool.ImageFamily, UserData: pool.UserData, AssociatePublicIP: pool.AssociatePublicIPAddress,
		InstanceStoreRAID0: pool.InstanceStorePolicy == config.InstanceStoreRAID0,
	}
	for _, b := range pool.BlockDeviceMappings {
		s.BlockDevices = append(s.BlockDevices, cloud.BlockDevice{
			DeviceName: b.DeviceName, SizeGiB: int32(b.VolumeSize.Value() >> 30), VolumeType: b.VolumeType,
			IOPS: b.IOPS, Throughput: b.Throughput, Encrypted: b.Encrypted, KMSKeyID: b.KMSKeyID, DeleteOnTermination: b.DeleteOnTermination,
		})
	}
	return s
}

// reservationOf is the capacity reservation a reserved claim launches into.
func reservationOf(cl *v1alpha1.Claim) *cloud.CapacityReservation {
	r := cl.Spec.CapacityReservation
	if r == nil {
		return nil
	}
	out := &cloud.CapacityReservation{ID: r.ID, CapacityBlock: r.CapacityBlock, Zone: cl.Spec.Zone}
	if len(cl.Spec.InstanceTypes) > 0 {
		out.InstanceType = cl.Spec.InstanceTypes[0]
	}
	if r.EndsAt != nil {
		out.EndsAt = r.EndsAt.Time
	}
	return out
}

// maxOverrides is the most overrides one CreateFleet takes (types × subnets).
const maxOverrides = 300

// subnetsFor are the zone's subnets a launch of that many instance types offers: all of them,
// unless types × subnets would pass CreateFleet's limit, then those with the most free
// addresses (a claim with minValues may offer many types; every type is kept, so the minimum
// holds).
func subnetsFor(all []cloud.Subnet, zone string, types int) []string {
	var inZone []cloud.Subnet
	for _, s := range all {
		if s.Zone == zone {
			inZone = append(inZone, s)
		}
	}
	if limit := max(1, maxOverrides/max(1, types)); len(inZone) > limit {
		slices.SortStableFunc(inZone, func(a, b cloud.Subnet) int { return cmp.Compare(b.AvailableIPs, a.AvailableIPs) })
		inZone = inZone[:limit]
	}
	ids := make([]string, len(inZone))
	for i, s := range inZone {
		ids[i] = s.ID
	}
	return ids
}
