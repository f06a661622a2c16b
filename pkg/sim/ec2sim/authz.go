package ec2sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// AuthorizationRequest is one IAM authorization a call needed, as AWS makes it before acting:
// an action on some resources, with the tags the call creates them with, the tags they already
// have and the request's condition keys. The simulator does not evaluate policies; it records
// what a policy would be asked, so a test can evaluate the controller's policy against it (see
// pkg/sim/iamcheck).
type AuthorizationRequest struct {
	// Principal is the access key ID that signed the call ("" for unsigned calls).
	Principal string
	// Action is service:Action, as IAM names it: ec2:CreateFleet, ssm:GetParameter.
	Action string
	// Resources are what the action is authorized on, all of the action's service; none for
	// actions that only take Resource "*" (the Describe calls, pricing:GetProducts).
	Resources []AuthorizedResource
	// Context holds request-wide condition keys besides tags: ec2:CreateAction for tagging on
	// creation, iam:PassedToService for passing a role.
	Context map[string]string
}

// AuthorizedResource is one resource of an AuthorizationRequest.
type AuthorizedResource struct {
	// Type is the IAM resource type of the action's service: instance, volume, launch-template,
	// role, parameter, cluster...
	Type string
	// ID is what the resource's ARN ends with: i-0123…, a role name, a parameter name (with its
	// leading slash), a cluster name. IDs of resources the simulator does not keep (volumes,
	// network interfaces, snapshots) are derived from the instance or image.
	ID string
	// RequestTags are the tags the call creates the resource with (aws:RequestTag/…); nil for a
	// resource that exists already.
	RequestTags map[string]string
	// Tags are the tags the resource has (aws:ResourceTag/…), without AWS's own aws:* tags.
	Tags map[string]string
}

// AuthorizationLog returns every distinct authorization request the simulator recorded, in the
// order first seen. Requests that differ only in resource IDs count once (the first one's IDs are
// kept): a policy decides on actions, types, tags and context, so the log stays as small as the
// variety of calls, however many there were. Only calls the simulator answered are recorded:
// not those failed by an injected fault, unknown actions or DryRun requests, and, for actions on
// resources, only successful ones (a failed call names no resource it acted on).
func (s *Sim) AuthorizationLog() []AuthorizationRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]AuthorizationRequest, len(s.authz))
	for i, r := range s.authz {
		out[i] = r.clone()
	}
	return out
}

func (r AuthorizationRequest) clone() AuthorizationRequest {
	out := AuthorizationRequest{Principal: r.Principal, Action: r.Action, Context: maps.Clone(r.Context)}
	for _, res := range r.Resources {
		out.Resources = append(out.Resources, AuthorizedResource{Type: res.Type, ID: res.ID, RequestTags: maps.Clone(res.RequestTags), Tags: maps.Clone(res.Tags)})
	}
	return out
}

// authorize records an authorization request of the current call. Callers hold s.mu.
func (s *Sim) authorize(action string, resources []AuthorizedResource, context map[string]string) {
	s.authorizeAs(s.caller, action, resources, context)
}

// authorizeAs records an authorization request of principal. Callers hold s.mu.
func (s *Sim) authorizeAs(principal, action string, resources []AuthorizedResource, context map[string]string) {
	r := AuthorizationRequest{Principal: principal, Action: action, Context: context}
	for _, res := range resources {
		res.Tags = withoutAWSTags(res.Tags)
		r.Resources = append(r.Resources, res)
	}
	key := authzKey(r)
	if _, seen := s.authzSeen[key]; seen {
		return
	}
	s.authzSeen[key] = struct{}{}
	s.authz = append(s.authz, r.clone())
}

// authzKey identifies a request up to its resource IDs.
func authzKey(r AuthorizationRequest) string {
	type res struct {
		Type              string
		RequestTags, Tags map[string]string
		Created           bool
	}
	k := struct {
		Principal, Action string
		Context           map[string]string
		Resources         []res
	}{Principal: r.Principal, Action: r.Action, Context: r.Context}
	for _, x := range r.Resources {
		k.Resources = append(k.Resources, res{x.Type, x.RequestTags, x.Tags, x.RequestTags != nil})
	}
	b, _ := json.Marshal(k) // maps marshal with sorted keys
	return string(b)
}

// withoutAWSTags drops the tags AWS sets itself (aws:ec2:fleet-id, aws:ec2launchtemplate:id…):
// they differ on every resource, and no policy of Tailor's conditions on them.
func withoutAWSTags(tags map[string]string) map[string]string {
	if tags == nil {
		return nil
	}
	out := make(map[string]string, len(tags))
	for k, v := range tags {
		if !strings.HasPrefix(k, "aws:") {
			out[k] = v
		}
	}
	return out
}

// principalOf returns the access key ID of a SigV4-signed request ("" when unsigned):
// Authorization: AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/ec2/aws4_request, ...
func principalOf(r *http.Request) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	akid, _, _ := strings.Cut(cred, "/")
	return akid
}

// resourceActions are the EC2 actions whose handlers record their own authorization requests
// (they act on resources); every other action is recorded as one request on "*".
var resourceActions = []string{"CreateLaunchTemplate", "DeleteLaunchTemplate", "CreateFleet", "TerminateInstances", "CreateTags"}

// SetInstanceProfileRole says which IAM role an instance profile holds (by name or ARN; the role
// by name): a launch with the profile passes that role to EC2 (iam:PassRole). Without it, a
// profile holds the role of the same name, as the usual node role setups name them.
func (s *Sim) SetInstanceProfileRole(profile, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.profileRoles[profileName(profile)] = role
}

// profileName is the name of an instance profile given by name or ARN
// (arn:aws:iam::111122223333:instance-profile/path/name).
func profileName(profile string) string {
	if strings.HasPrefix(profile, "arn:") {
		return profile[strings.LastIndexByte(profile, '/')+1:]
	}
	return profile
}

// roleOf returns the role an instance profile passes. Callers hold s.mu.
func (s *Sim) roleOf(profile string) string {
	name := profileName(profile)
	if r, ok := s.profileRoles[name]; ok {
		return r
	}
	return name
}

// derivedID names a resource the simulator does not keep after the one it belongs to:
// vol-…, eni-… of an instance, snap-… of an image.
func derivedID(prefix, owner string, n int) string {
	_, hex, _ := strings.Cut(owner, "-")
	if n == 0 {
		return prefix + "-" + hex
	}
	return fmt.Sprintf("%s-%s%d", prefix, hex[:len(hex)-1], n)
}

// launchAuthorizations records what one instance of an instant fleet needed: ec2:CreateFleet on
// what the request names and creates; ec2:RunInstances, which EC2 authorizes on the caller's
// behalf for every instance an instant fleet launches, on everything the launch touches; the
// tagging of what they create (ec2:CreateTags with ec2:CreateAction); and iam:PassRole of the
// instance profile's role. Callers hold s.mu.
func (s *Sim) launchAuthorizations(c *fleetCandidate, in *instance, fleetID string, fleetTags map[string]map[string]string) {
	lt := c.lt
	img := s.imageByID[c.imageID]
	volumes := max(1, len(query{v: lt.data}.indices("BlockDeviceMapping")))
	fleetTagged := func(rt string) map[string]string {
		if t, ok := fleetTags[rt]; ok {
			return maps.Clone(t)
		}
		return map[string]string{}
	}
	templateTagged := func(rt string) map[string]string {
		return maps.Clone(lt.launchTags[rt])
	}
	merged := func(rt string) map[string]string {
		out := templateTagged(rt)
		if out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, fleetTagged(rt))
		return out
	}
	existing := []AuthorizedResource{
		{Type: "launch-template", ID: lt.id, Tags: lt.tags},
		{Type: "subnet", ID: c.sn.id, Tags: c.sn.tags},
		{Type: "image", ID: img.id, Tags: img.tags},
	}
	existing = append(existing, c.reservationResources()...)

	fleet := []AuthorizedResource{
		{Type: "fleet", ID: fleetID, RequestTags: fleetTagged("fleet")},
		{Type: "instance", ID: in.id, RequestTags: fleetTagged("instance")},
	}
	for n := range volumes {
		fleet = append(fleet, AuthorizedResource{Type: "volume", ID: derivedID("vol", in.id, n), RequestTags: fleetTagged("volume")})
	}
	s.authorize("ec2:CreateFleet", append(fleet, existing...), nil)

	created := []AuthorizedResource{
		{Type: "instance", ID: in.id, RequestTags: merged("instance")},
		{Type: "network-interface", ID: derivedID("eni", in.id, 0), RequestTags: merged("network-interface")},
	}
	for n := range volumes {
		created = append(created, AuthorizedResource{Type: "volume", ID: derivedID("vol", in.id, n), RequestTags: merged("volume")})
	}
	if in.spotRequestID != "" {
		created = append(created, AuthorizedResource{Type: "spot-instances-request", ID: in.spotRequestID, RequestTags: merged("spot-instances-request")})
	}
	run := append(slices.Clone(created), existing...)
	run = append(run, AuthorizedResource{Type: "snapshot", ID: derivedID("snap", img.id, 0), Tags: map[string]string{}})
	for _, gid := range lt.securityGroupIDs {
		if g := s.groupByID(gid); g != nil {
			run = append(run, AuthorizedResource{Type: "security-group", ID: g.id, Tags: g.tags})
		}
	}
	s.authorize("ec2:RunInstances", run, nil)

	// Tags from CreateFleet's TagSpecifications are applied by CreateFleet, the launch template's
	// by the RunInstances it makes.
	var byFleet, byTemplate []AuthorizedResource
	for _, r := range fleet {
		if len(r.RequestTags) > 0 {
			byFleet = append(byFleet, r)
		}
	}
	for _, r := range created {
		if t := templateTagged(r.Type); len(t) > 0 {
			byTemplate = append(byTemplate, AuthorizedResource{Type: r.Type, ID: r.ID, RequestTags: t})
		}
	}
	if len(byFleet) > 0 {
		s.authorize("ec2:CreateTags", byFleet, map[string]string{"ec2:CreateAction": "CreateFleet"})
	}
	if len(byTemplate) > 0 {
		s.authorize("ec2:CreateTags", byTemplate, map[string]string{"ec2:CreateAction": "RunInstances"})
	}
	profile := lt.profileArn
	if profile == "" {
		profile = lt.profileName
	}
	if profile != "" {
		s.authorize("iam:PassRole", []AuthorizedResource{{Type: "role", ID: s.roleOf(profile)}}, map[string]string{"iam:PassedToService": "ec2.amazonaws.com"})
	}
}
