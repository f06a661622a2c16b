package ec2sim

import (
	"encoding/base64"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

func (s *Sim) instanceAttrs(in *instance, st string) attrFunc {
	return func(name string) ([]string, bool) {
		terminated := st == cloud.StateTerminated
		switch name {
		case "instance-id":
			return []string{in.id}, true
		case "instance-state-name":
			return []string{st}, true
		case "instance-state-code":
			return []string{strconv.Itoa(int(stateCodes[st]))}, true
		case "instance-type":
			return []string{in.instanceType}, true
		case "availability-zone":
			return []string{in.zone}, true
		case "image-id":
			return []string{in.imageID}, true
		case "reservation-id":
			return []string{in.reservationID}, true
		case "architecture":
			return []string{string(in.arch)}, true
		case "instance-lifecycle":
			switch {
			case in.capacityType == cloud.Spot:
				return []string{"spot"}, true
			case in.reservation != nil && in.reservation.block():
				return []string{marketCapacityBlock}, true
			}
			return nil, true
		case "capacity-reservation-id":
			if in.reservation == nil {
				return nil, true
			}
			return []string{in.reservation.id}, true
		case "client-token":
			return []string{in.clientToken}, true
		case "subnet-id", "vpc-id", "private-ip-address", "private-dns-name", "network-interface.addresses.private-ip-address":
			if terminated {
				return nil, true
			}
			switch name {
			case "subnet-id":
				return []string{in.subnetID}, true
			case "vpc-id":
				return []string{in.vpcID}, true
			case "private-dns-name":
				return []string{in.dnsName(s.opts.Region)}, true
			}
			return []string{in.privateIP}, true
		case "instance.group-id":
			var out []string
			for _, g := range in.groups {
				out = append(out, aws.ToString(g.GroupId))
			}
			return out, true
		}
		return tagAttrs(in.tags, name)
	}
}

// checkInstanceIDs validates instance IDs and resolves them, with EC2's errors.
func (s *Sim) checkInstanceIDs(ids []string) ([]*instance, error) {
	var out []*instance
	var unknown []string
	for _, id := range ids {
		if !instanceIDRe.MatchString(id) {
			return nil, errf("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
		in, ok := s.instanceByID[id]
		if !ok {
			unknown = append(unknown, id)
			continue
		}
		if !slices.Contains(out, in) {
			out = append(out, in)
		}
	}
	if len(unknown) > 0 {
		return nil, notFoundList("InvalidInstanceID.NotFound", "instance", unknown)
	}
	return out, nil
}

// DescribeInstances: InstanceId.N, Filter.N, MaxResults (5–1000, not with InstanceId; everything
// without it), NextToken. Instances come in launch order, grouped into their reservations. A
// page continues after the last instance of the one before, not at an offset: an instance that
// leaves the filter between two pages (running, then shutting-down) must not shift the next
// page and hide an instance that never changed.
func (s *Sim) describeInstances(q query) (any, error) {
	filters, err := q.filters()
	if err != nil {
		return nil, err
	}
	if err := validateFilters(filters, s.instanceAttrs(&instance{}, "")); err != nil {
		return nil, err
	}
	candidates := s.instances
	if ids := q.list("InstanceId"); len(ids) > 0 {
		if q.has("MaxResults") {
			return nil, errf("InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
		}
		if candidates, err = s.checkInstanceIDs(ids); err != nil {
			return nil, err
		}
	}
	after, err := instancesAfter(q.get("NextToken"))
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	var matched []*instance
	for _, in := range candidates {
		if in.launchSeq <= after {
			continue
		}
		ok, err := matchFilters(filters, s.instanceAttrs(in, in.state(now, s.opts)))
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, in)
		}
	}
	size := query{v: url.Values{}} // MaxResults alone: the token is read above
	if q.has("MaxResults") {
		size.v.Set("MaxResults", q.get("MaxResults"))
	}
	p, err := paginate(size, "DescribeInstances", len(matched), pageLimits{min: 5, max: 1000})
	if err != nil {
		return nil, err
	}
	matched = matched[:p.end]
	out := &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{}}
	if p.next != "" {
		out.NextToken = aws.String(instancesToken(matched[len(matched)-1].launchSeq))
	}
	for _, in := range matched {
		n := len(out.Reservations)
		if n == 0 || aws.ToString(out.Reservations[n-1].ReservationId) != in.reservationID {
			out.Reservations = append(out.Reservations, ec2types.Reservation{
				ReservationId: aws.String(in.reservationID),
				OwnerId:       aws.String(s.opts.AccountID),
				Groups:        []ec2types.GroupIdentifier{},
			})
			n++
		}
		r := &out.Reservations[n-1]
		r.Instances = append(r.Instances, s.sdkInstance(in, now))
	}
	return out, nil
}

// TerminateInstances: InstanceId.N. Unknown IDs fail the whole request, as in EC2.
func (s *Sim) terminateInstances(q query) (any, error) {
	ids := q.list("InstanceId")
	if len(ids) == 0 {
		return nil, missing("InstanceId")
	}
	if len(ids) > 1000 {
		return nil, errf("InvalidParameterValue", "At most 1000 instance IDs may be given")
	}
	targets, err := s.checkInstanceIDs(ids)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	out := &ec2.TerminateInstancesOutput{}
	for _, in := range targets {
		s.authorize("ec2:TerminateInstances", []AuthorizedResource{{Type: "instance", ID: in.id, Tags: in.tags}}, nil)
	}
	for _, in := range targets {
		prev := in.state(now, s.opts)
		if in.terminating.IsZero() {
			in.terminating = now
		}
		cur := in.state(now, s.opts)
		out.TerminatingInstances = append(out.TerminatingInstances, ec2types.InstanceStateChange{
			InstanceId:    aws.String(in.id),
			PreviousState: &ec2types.InstanceState{Code: aws.Int32(stateCodes[prev]), Name: ec2types.InstanceStateName(prev)},
			CurrentState:  &ec2types.InstanceState{Code: aws.Int32(stateCodes[cur]), Name: ec2types.InstanceStateName(cur)},
		})
	}
	s.sweep()
	return out, nil
}

// createTagsResult is CreateTags' answer: <return>true</return>.
type createTagsResult struct {
	Return *bool
}

// CreateTags: ResourceId.N, Tag.N.Key/Value. Resources are instances, subnets, security groups,
// launch templates and images.
func (s *Sim) createTags(q query) (any, error) {
	ids := q.list("ResourceId")
	if len(ids) == 0 {
		return nil, missing("ResourceId")
	}
	tags, err := q.tags("Tag")
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, missing("Tag")
	}
	var targets []map[string]string
	var resources []AuthorizedResource
	for _, id := range ids {
		prefix, _, _ := strings.Cut(id, "-")
		var rt string
		switch prefix {
		case "i":
			ins, err := s.checkInstanceIDs([]string{id})
			if err != nil {
				return nil, err
			}
			targets, rt = append(targets, ins[0].tags), "instance"
		case "subnet":
			sn, ok := s.subnetByID[id]
			if !ok {
				return nil, errf("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
			}
			targets, rt = append(targets, sn.tags), "subnet"
		case "sg":
			g := s.groupByID(id)
			if g == nil {
				return nil, errf("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
			}
			targets, rt = append(targets, g.tags), "security-group"
		case "lt":
			lt, err := s.findTemplate(id, "")
			if err != nil {
				return nil, err
			}
			targets, rt = append(targets, lt.tags), "launch-template"
		case "ami":
			im, ok := s.imageByID[id]
			if !ok {
				return nil, errf("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
			}
			targets, rt = append(targets, im.tags), "image"
		default:
			return nil, errf("InvalidID", "The ID '%s' is not valid", id)
		}
		resources = append(resources, AuthorizedResource{Type: rt, ID: id, RequestTags: maps.Clone(tags), Tags: maps.Clone(targets[len(targets)-1])})
	}
	// Tagging a resource that exists: no ec2:CreateAction.
	s.authorize("ec2:CreateTags", resources, nil)
	for _, t := range targets {
		for k, v := range tags {
			t[k] = v
		}
	}
	return &createTagsResult{Return: aws.Bool(true)}, nil
}

// instancesToken is DescribeInstances' NextToken: the launch order of the last instance returned.
func instancesToken(last uint64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("DescribeInstances:after:" + strconv.FormatUint(last, 10)))
}

// instancesAfter reads a DescribeInstances NextToken ("" for the first page).
func instancesAfter(tok string) (uint64, error) {
	if tok == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	rest, ok := strings.CutPrefix(string(raw), "DescribeInstances:after:")
	after, perr := strconv.ParseUint(rest, 10, 64)
	if err != nil || !ok || perr != nil {
		return 0, errf("InvalidParameterValue", "Invalid NextToken value %q", tok)
	}
	return after, nil
}
