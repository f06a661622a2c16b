package ec2sim

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

var ltNameRe = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)

// maxUserData is EC2's limit on user data before base64 encoding.
const maxUserData = 16 << 10

// CreateLaunchTemplate: LaunchTemplateName, LaunchTemplateData.*, TagSpecification.N
// (launch-template), ClientToken.
func (s *Sim) createLaunchTemplate(q query) (any, error) {
	name := q.get("LaunchTemplateName")
	if name == "" {
		return nil, missing("LaunchTemplateName")
	}
	if tok := q.get("ClientToken"); tok != "" {
		if lt, ok := s.ltTokens[tok]; ok {
			if lt.name != name {
				return nil, errf("IdempotentParameterMismatch", "The client token %s was already used with different parameters.", tok)
			}
			if s.templateByName(name) == lt {
				out := lt.sdk(s.opts.AccountID)
				return &ec2.CreateLaunchTemplateOutput{LaunchTemplate: &out}, nil
			}
		}
	}
	if !ltNameRe.MatchString(name) {
		return nil, errf("InvalidLaunchTemplateName.MalformedException", "A launch template name must be between 3 and 128 characters, and may contain letters, numbers, and the following characters: - ( ) . / _.'")
	}
	if s.templateByName(name) != nil {
		return nil, errf("InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
	}
	data := q.sub("LaunchTemplateData")
	if len(paramsUnder(q.v, data.prefix)) == 0 {
		return nil, missing("LaunchTemplateData")
	}
	lt := &launchTemplate{
		name: name, created: s.clock.Now(),
		imageID: data.get("ImageId"), instanceType: data.get("InstanceType"),
		profileName: data.get("IamInstanceProfile.Name"), profileArn: data.get("IamInstanceProfile.Arn"),
		securityGroupIDs: data.list("SecurityGroupId"), userData: data.get("UserData"),
		data: paramsUnder(q.v, data.prefix), clientToken: q.get("ClientToken"),
	}
	// A template with network interfaces puts the security groups on them (EC2 refuses a launch
	// with groups both there and on the instance).
	if nic := data.sub("NetworkInterface.1"); len(nic.list("SecurityGroupId")) > 0 {
		if len(lt.securityGroupIDs) > 0 {
			return nil, errf("InvalidParameterCombination", "Network interfaces and an instance-level security groups may not be specified on the same request")
		}
		lt.securityGroupIDs = nic.list("SecurityGroupId")
	}
	if err := lt.readReservationSpec(data); err != nil {
		return nil, err
	}
	if lt.instanceType != "" {
		if _, ok := s.types[lt.instanceType]; !ok {
			return nil, invalidValue("InstanceType", lt.instanceType)
		}
	}
	if lt.imageID != "" && !imageIDRe.MatchString(lt.imageID) && !strings.HasPrefix(lt.imageID, "resolve:ssm:") {
		return nil, errf("InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", lt.imageID)
	}
	if lt.userData != "" {
		ud, err := base64.StdEncoding.DecodeString(lt.userData)
		if err != nil {
			return nil, errf("InvalidUserData.Malformed", "Invalid BASE64 encoding of user data.")
		}
		if len(ud) > maxUserData {
			return nil, errf("InvalidUserData.Malformed", "User data is limited to 16384 bytes")
		}
	}
	for _, id := range lt.securityGroupIDs {
		if !groupIDRe.MatchString(id) {
			return nil, errf("InvalidGroupId.Malformed", "Invalid id: \"%s\" (expecting \"sg-...\")", id)
		}
	}
	for _, gname := range data.list("SecurityGroup") {
		i := slices.IndexFunc(s.groups, func(g *securityGroup) bool { return g.name == gname })
		if i < 0 {
			return nil, errf("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'", gname, s.vpcID)
		}
		lt.securityGroupIDs = append(lt.securityGroupIDs, s.groups[i].id)
	}
	specs, err := data.tagSpecs("TagSpecification", "instance", "volume", "network-interface", "spot-instances-request")
	if err != nil {
		return nil, err
	}
	lt.instanceTags, lt.launchTags = specs["instance"], specs
	own, err := q.tagSpecs("TagSpecification", "launch-template")
	if err != nil {
		return nil, err
	}
	lt.tags = own["launch-template"]
	if lt.tags == nil {
		lt.tags = map[string]string{}
	}
	lt.id = s.newID("lt")
	s.authorize("ec2:CreateLaunchTemplate", []AuthorizedResource{{Type: "launch-template", ID: lt.id, RequestTags: maps.Clone(lt.tags)}}, nil)
	if len(lt.tags) > 0 {
		s.authorize("ec2:CreateTags", []AuthorizedResource{{Type: "launch-template", ID: lt.id, RequestTags: maps.Clone(lt.tags)}},
			map[string]string{"ec2:CreateAction": "CreateLaunchTemplate"})
	}
	s.templates = append(s.templates, lt)
	if lt.clientToken != "" {
		s.ltTokens[lt.clientToken] = lt
	}
	out := lt.sdk(s.opts.AccountID)
	return &ec2.CreateLaunchTemplateOutput{LaunchTemplate: &out}, nil
}

// paramsUnder returns the parameters under prefix, with the prefix cut.
func paramsUnder(v url.Values, prefix string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = slices.Clone(vs)
		}
	}
	return out
}

func (s *Sim) templateByName(name string) *launchTemplate {
	for _, lt := range s.templates {
		if lt.name == name {
			return lt
		}
	}
	return nil
}

func (s *Sim) templateByID(id string) *launchTemplate {
	for _, lt := range s.templates {
		if lt.id == id {
			return lt
		}
	}
	return nil
}

// findTemplate resolves a launch template by ID or name with EC2's not-found errors.
func (s *Sim) findTemplate(id, name string) (*launchTemplate, error) {
	switch {
	case id != "":
		if !ltIDRe.MatchString(id) {
			return nil, errf("InvalidLaunchTemplateId.Malformed", "The specified ID for the launch template (%s) is not valid. Launch template IDs must be in the format lt-xxxxxxxxxxxxxxxxx.", id)
		}
		if lt := s.templateByID(id); lt != nil {
			return lt, nil
		}
		return nil, errf("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
	case name != "":
		if lt := s.templateByName(name); lt != nil {
			return lt, nil
		}
		return nil, errf("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
	}
	return nil, missing("LaunchTemplateId or LaunchTemplateName")
}

func ltAttrs(lt *launchTemplate) attrFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "launch-template-name":
			return []string{lt.name}, true
		case "launch-template-id":
			return []string{lt.id}, true
		case "create-time":
			return []string{lt.created.UTC().Format(timeFormat)}, true
		}
		return tagAttrs(lt.tags, name)
	}
}

// DescribeLaunchTemplates: LaunchTemplateName.N, LaunchTemplateId.N, Filter.N, MaxResults (1–200).
func (s *Sim) describeLaunchTemplates(q query) (any, error) {
	filters, err := q.filters()
	if err != nil {
		return nil, err
	}
	candidates := s.templates
	names, ids := q.list("LaunchTemplateName"), q.list("LaunchTemplateId")
	if len(names) > 0 || len(ids) > 0 {
		if len(names) > 0 && len(ids) > 0 {
			return nil, errf("InvalidParameterCombination", "The parameters LaunchTemplateIds and LaunchTemplateNames cannot be used together.")
		}
		candidates = nil
		for _, id := range ids {
			lt, err := s.findTemplate(id, "")
			if err != nil {
				return nil, err
			}
			candidates = append(candidates, lt)
		}
		for _, n := range names {
			lt := s.templateByName(n)
			if lt == nil {
				return nil, errf("InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
			}
			candidates = append(candidates, lt)
		}
	}
	var out []ec2types.LaunchTemplate
	for _, lt := range candidates {
		ok, err := matchFilters(filters, ltAttrs(lt))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, lt.sdk(s.opts.AccountID))
		}
	}
	p, err := paginate(q, "DescribeLaunchTemplates", len(out), pageLimits{min: 1, max: 200})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeLaunchTemplatesOutput{LaunchTemplates: out[p.start:p.end], NextToken: ptrIfSet(p.next)}, nil
}

// DeleteLaunchTemplate: LaunchTemplateId or LaunchTemplateName.
func (s *Sim) deleteLaunchTemplate(q query) (any, error) {
	lt, err := s.findTemplate(q.get("LaunchTemplateId"), q.get("LaunchTemplateName"))
	if err != nil {
		return nil, err
	}
	s.authorize("ec2:DeleteLaunchTemplate", []AuthorizedResource{{Type: "launch-template", ID: lt.id, Tags: lt.tags}}, nil)
	s.templates = slices.DeleteFunc(s.templates, func(x *launchTemplate) bool { return x == lt })
	out := lt.sdk(s.opts.AccountID)
	out.Tags = nil
	return &ec2.DeleteLaunchTemplateOutput{LaunchTemplate: &out}, nil
}

// templateVolumes are the EBS volume sizes (GiB) a template maps, by device name.
func templateVolumes(lt *launchTemplate) map[string]int64 {
	q := query{v: lt.data}
	out := map[string]int64{}
	for _, i := range q.indices("BlockDeviceMapping") {
		b := q.sub(fmt.Sprintf("BlockDeviceMapping.%d", i))
		if n, err := strconv.ParseInt(b.get("Ebs.VolumeSize"), 10, 64); err == nil && b.get("DeviceName") != "" {
			out[b.get("DeviceName")] = n
		}
	}
	return out
}
