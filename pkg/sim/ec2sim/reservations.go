package ec2sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Capacity reservations: On-Demand Capacity Reservations (ODCRs) and Capacity Blocks for ML. A
// test seeds them (AddCapacityReservation); DescribeCapacityReservations lists them; CreateFleet
// launches into one that a launch template targets, and an on-demand launch that does not opt out
// uses an open ODCR of its type and zone on its own, as EC2 does. See the package documentation.

// Reservation types, as DescribeCapacityReservations reports them (ReservationType).
const (
	ReservationTypeDefault       = "default"
	ReservationTypeCapacityBlock = "capacity-block"
)

const (
	// marketCapacityBlock is the InstanceMarketOptions.MarketType of a launch template for a
	// Capacity Block, and the DefaultTargetCapacityType of a fleet that launches into one.
	marketCapacityBlock = "capacity-block"
	// capacityBlockWarning is how long before a Capacity Block ends EC2 sends its expiration
	// warning; capacityBlockReclaim how long before it ends EC2 begins terminating its instances.
	capacityBlockWarning = 40 * time.Minute
	capacityBlockReclaim = 30 * time.Minute
)

var reservationIDRe = regexp.MustCompile(`^cr-[0-9a-f]{17}$`)

// CapacityReservation is a capacity reservation as a test seeds it (AddCapacityReservation) and
// reads it back (CapacityReservations).
type CapacityReservation struct {
	// ID is the simulator's (cr- and 17 hex digits); AddCapacityReservation ignores it.
	ID string
	// InstanceType and AvailabilityZone are what the reservation holds capacity for: a known type
	// the simulated region offers in that zone. The platform is Linux/UNIX, the tenancy default.
	InstanceType     string
	AvailabilityZone string
	// TotalInstanceCount is how many instances it holds (0 or more).
	TotalInstanceCount int
	Tags               map[string]string
	// Type is ReservationTypeDefault (an ODCR; "" means it) or ReservationTypeCapacityBlock.
	Type string
	// InstanceMatchCriteria is "open" (any matching on-demand launch may use it) or "targeted"
	// (only launches that name it); "" means open for an ODCR and targeted for a Capacity Block,
	// the only kind EC2 sells.
	InstanceMatchCriteria string
	// StartDate and EndDate: a Capacity Block needs both. An ODCR starts when it is added unless
	// StartDate is later (a future-dated reservation, scheduled until then) and has no end unless
	// EndDate is set (EndDateType limited).
	StartDate, EndDate time.Time
	// State pins the state (pending, cancelled, failed, expired, ...). Empty: the state follows
	// the clock, scheduled before StartDate, active until EndDate and expired from it. Read back,
	// it is the current state.
	State string
	// OwnerID is the owning account; empty means the simulator's. Another account's reservation
	// stands for one shared with this account.
	OwnerID string
	// AvailableInstanceCount is read back only: TotalInstanceCount less the instances in the
	// reservation that have not reached terminated (0 for a Capacity Block before it starts).
	AvailableInstanceCount int
}

// capacityReservation is a reservation as the simulator keeps it.
type capacityReservation struct {
	id, instanceType, zone, rtype, match, owner string
	// pinned is the state AddCapacityReservation or SetCapacityReservationState set ("" follows
	// the clock).
	pinned              string
	total               int
	tags                map[string]string
	start, end, created time.Time
	delivered, warned   bool // a Capacity Block's events went out (or were due before it was added)
}

func (r *capacityReservation) block() bool { return r.rtype == ReservationTypeCapacityBlock }

func (r *capacityReservation) arn(region string) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:capacity-reservation/%s", region, r.owner, r.id)
}

// state is the reservation's state at now.
func (r *capacityReservation) state(now time.Time) string {
	switch {
	case r.pinned != "":
		return r.pinned
	case !r.end.IsZero() && !now.Before(r.end):
		return string(ec2types.CapacityReservationStateExpired)
	case now.Before(r.start):
		return string(ec2types.CapacityReservationStateScheduled)
	}
	return string(ec2types.CapacityReservationStateActive)
}

// validReservationState reports whether EC2 knows the state name.
func validReservationState(st string) bool {
	return slices.Contains(ec2types.CapacityReservationState("").Values(), ec2types.CapacityReservationState(st))
}

// AddCapacityReservation adds a capacity reservation to the region and returns its ID. It fails
// on a reservation EC2 could not have: an unknown type, a zone of another region, a type the
// zone does not offer, a negative count, a Capacity Block without both dates, an end before the
// start, an unknown reservation type, match criteria or state.
func (s *Sim) AddCapacityReservation(r CapacityReservation) (string, error) {
	if _, ok := s.types[r.InstanceType]; !ok {
		return "", fmt.Errorf("ec2sim: unknown instance type %q", r.InstanceType)
	}
	if !slices.Contains(s.opts.Zones, r.AvailabilityZone) {
		return "", fmt.Errorf("ec2sim: %q is not a zone of the simulated region (%v)", r.AvailabilityZone, s.opts.Zones)
	}
	if !s.Offered(r.InstanceType, r.AvailabilityZone) {
		return "", fmt.Errorf("ec2sim: %s is not offered in %s", r.InstanceType, r.AvailabilityZone)
	}
	if r.TotalInstanceCount < 0 {
		return "", fmt.Errorf("ec2sim: TotalInstanceCount %d is negative", r.TotalInstanceCount)
	}
	rtype := r.Type
	switch rtype {
	case "":
		rtype = ReservationTypeDefault
	case ReservationTypeDefault, ReservationTypeCapacityBlock:
	default:
		return "", fmt.Errorf("ec2sim: reservation type %q is neither %s nor %s", r.Type, ReservationTypeDefault, ReservationTypeCapacityBlock)
	}
	match := r.InstanceMatchCriteria
	switch {
	case match == "" && rtype == ReservationTypeCapacityBlock:
		match = string(ec2types.InstanceMatchCriteriaTargeted)
	case match == "":
		match = string(ec2types.InstanceMatchCriteriaOpen)
	case match != string(ec2types.InstanceMatchCriteriaOpen) && match != string(ec2types.InstanceMatchCriteriaTargeted):
		return "", fmt.Errorf("ec2sim: instance match criteria %q is neither open nor targeted", match)
	}
	if rtype == ReservationTypeCapacityBlock && (r.StartDate.IsZero() || r.EndDate.IsZero()) {
		return "", fmt.Errorf("ec2sim: a Capacity Block needs a StartDate and an EndDate")
	}
	if r.State != "" && !validReservationState(r.State) {
		return "", fmt.Errorf("ec2sim: %q is not a capacity reservation state", r.State)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	start := r.StartDate
	if start.IsZero() {
		start = now
	}
	if !r.EndDate.IsZero() && !r.EndDate.After(start) {
		return "", fmt.Errorf("ec2sim: EndDate %v is not after StartDate %v", r.EndDate, start)
	}
	owner := r.OwnerID
	if owner == "" {
		owner = s.opts.AccountID
	}
	cr := &capacityReservation{
		id: s.newID("cr"), instanceType: r.InstanceType, zone: r.AvailabilityZone, rtype: rtype, match: match,
		owner: owner, pinned: r.State, total: r.TotalInstanceCount, tags: maps.Clone(r.Tags),
		start: start, end: r.EndDate, created: now,
	}
	if cr.tags == nil {
		cr.tags = map[string]string{}
	}
	if cr.block() {
		// Events due before the block existed in the simulator are not sent late.
		cr.delivered = !now.Before(cr.start)
		cr.warned = !now.Before(cr.end.Add(-capacityBlockWarning))
	}
	s.reservations = append(s.reservations, cr)
	return cr.id, nil
}

// CapacityReservations returns every capacity reservation in the order they were added, with
// their current state and available count.
func (s *Sim) CapacityReservations() []CapacityReservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	now := s.clock.Now()
	out := make([]CapacityReservation, 0, len(s.reservations))
	for _, r := range s.reservations {
		out = append(out, s.exportReservation(r, now))
	}
	return out
}

// CapacityReservation returns one capacity reservation (see CapacityReservations).
func (s *Sim) CapacityReservation(id string) (CapacityReservation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	r := s.reservationByID(id)
	if r == nil {
		return CapacityReservation{}, false
	}
	return s.exportReservation(r, s.clock.Now()), true
}

// SetCapacityReservationState pins a reservation's state (cancelled, as CancelCapacityReservation
// leaves it; expired; pending; ...); "" lets it follow the clock again. Instances in it keep
// running, as they do in EC2 when an ODCR is cancelled or expires; only a Capacity Block's end
// terminates its instances.
func (s *Sim) SetCapacityReservationState(id, state string) error {
	if state != "" && !validReservationState(state) {
		return fmt.Errorf("ec2sim: %q is not a capacity reservation state", state)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reservationByID(id)
	if r == nil {
		return fmt.Errorf("ec2sim: no capacity reservation %q", id)
	}
	r.pinned = state
	return nil
}

// SetCapacityReservationInstanceCount changes how many instances a reservation holds, as
// ModifyCapacityReservation does. Instances already in it keep running if it shrinks below them.
func (s *Sim) SetCapacityReservationInstanceCount(id string, n int) error {
	if n < 0 {
		return fmt.Errorf("ec2sim: instance count %d is negative", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reservationByID(id)
	if r == nil {
		return fmt.Errorf("ec2sim: no capacity reservation %q", id)
	}
	r.total = n
	return nil
}

// SetCapacityReservationEndDate moves a reservation's end, as extending a Capacity Block does
// (or a test that cannot wait for one to end): its warning and reclaim follow the new end.
func (s *Sim) SetCapacityReservationEndDate(id string, end time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reservationByID(id)
	if r == nil {
		return fmt.Errorf("ec2sim: no capacity reservation %q", id)
	}
	if !end.After(r.start) {
		return fmt.Errorf("ec2sim: end %s is not after the start %s", end, r.start)
	}
	r.end = end
	r.warned = !s.clock.Now().Before(end.Add(-capacityBlockWarning))
	return nil
}

// RouteCapacityBlockEvents puts the Capacity Block events on the queue from now on, as an
// EventBridge rule for them targeting it would: "Capacity Block Reservation Delivered" when a
// block starts and "Capacity Block Reservation Expiration Warning" 40 minutes before it ends.
// The simulator notices that the clock passed those times at its next request (or in-process
// read such as Instances), and stamps each event with the time it was due.
func (s *Sim) RouteCapacityBlockEvents(queue string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[queue]; !ok {
		return fmt.Errorf("ec2sim: no queue %q", queue)
	}
	if !slices.Contains(s.blockRoutes, queue) {
		s.blockRoutes = append(s.blockRoutes, queue)
	}
	return nil
}

func (s *Sim) reservationByID(id string) *capacityReservation {
	for _, r := range s.reservations {
		if r.id == id {
			return r
		}
	}
	return nil
}

// reservationUsed counts the instances in the reservation that have not reached terminated.
// Callers hold s.mu.
func (s *Sim) reservationUsed(r *capacityReservation, now time.Time) int {
	n := 0
	for _, in := range s.instances {
		if in.reservation == r && in.state(now, s.opts) != cloud.StateTerminated {
			n++
		}
	}
	return n
}

// reservationAvailable is the reservation's AvailableInstanceCount. Callers hold s.mu.
func (s *Sim) reservationAvailable(r *capacityReservation, now time.Time) int {
	if r.block() && r.state(now) == string(ec2types.CapacityReservationStateScheduled) {
		return 0 // "Before a Capacity Block reservation begins, the available capacity appears as zero."
	}
	return max(0, r.total-s.reservationUsed(r, now))
}

func (s *Sim) exportReservation(r *capacityReservation, now time.Time) CapacityReservation {
	return CapacityReservation{
		ID: r.id, InstanceType: r.instanceType, AvailabilityZone: r.zone, TotalInstanceCount: r.total,
		Tags: maps.Clone(r.tags), Type: r.rtype, InstanceMatchCriteria: r.match, StartDate: r.start, EndDate: r.end,
		State: r.state(now), OwnerID: r.owner, AvailableInstanceCount: s.reservationAvailable(r, now),
	}
}

func (s *Sim) sdkReservation(r *capacityReservation, now time.Time) ec2types.CapacityReservation {
	out := ec2types.CapacityReservation{
		AvailabilityZone:       aws.String(r.zone),
		AvailabilityZoneId:     aws.String(s.zoneIDs[r.zone]),
		AvailableInstanceCount: aws.Int32(int32(s.reservationAvailable(r, now))),
		CapacityReservationArn: aws.String(r.arn(s.opts.Region)),
		CapacityReservationId:  aws.String(r.id),
		CreateDate:             aws.Time(r.created),
		EbsOptimized:           aws.Bool(true),
		EndDateType:            ec2types.EndDateTypeUnlimited,
		EphemeralStorage:       aws.Bool(false),
		InstanceMatchCriteria:  ec2types.InstanceMatchCriteria(r.match),
		InstancePlatform:       ec2types.CapacityReservationInstancePlatformLinuxUnix,
		InstanceType:           aws.String(r.instanceType),
		OwnerId:                aws.String(r.owner),
		ReservationType:        ec2types.CapacityReservationType(r.rtype),
		StartDate:              aws.Time(r.start),
		State:                  ec2types.CapacityReservationState(r.state(now)),
		Tags:                   sdkTags(r.tags),
		Tenancy:                ec2types.CapacityReservationTenancyDefault,
		TotalInstanceCount:     aws.Int32(int32(r.total)),
	}
	if !r.end.IsZero() {
		out.EndDate = aws.Time(r.end)
		out.EndDateType = ec2types.EndDateTypeLimited
	}
	return out
}

func (s *Sim) reservationAttrs(r *capacityReservation, now time.Time) attrFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "instance-type":
			return []string{r.instanceType}, true
		case "owner-id":
			return []string{r.owner}, true
		case "instance-platform":
			return []string{string(ec2types.CapacityReservationInstancePlatformLinuxUnix)}, true
		case "availability-zone":
			return []string{r.zone}, true
		case "tenancy":
			return []string{string(ec2types.CapacityReservationTenancyDefault)}, true
		case "outpost-arn", "placement-group-arn":
			return nil, true
		case "state":
			return []string{r.state(now)}, true
		case "start-date":
			return []string{r.start.UTC().Format(timeFormat)}, true
		case "end-date":
			if r.end.IsZero() {
				return nil, true
			}
			return []string{r.end.UTC().Format(timeFormat)}, true
		case "end-date-type":
			if r.end.IsZero() {
				return []string{string(ec2types.EndDateTypeUnlimited)}, true
			}
			return []string{string(ec2types.EndDateTypeLimited)}, true
		case "instance-match-criteria":
			return []string{r.match}, true
		}
		return tagAttrs(r.tags, name)
	}
}

// DescribeCapacityReservations: CapacityReservationId.N (not with MaxResults), Filter.N
// (instance-type, owner-id, instance-platform, availability-zone, tenancy, outpost-arn, state,
// start-date, end-date, end-date-type, instance-match-criteria, placement-group-arn and the tag
// filters), MaxResults (1–1000; everything without it), NextToken.
func (s *Sim) describeCapacityReservations(q query) (any, error) {
	now := s.clock.Now()
	filters, err := q.filters()
	if err != nil {
		return nil, err
	}
	if err := validateFilters(filters, s.reservationAttrs(&capacityReservation{}, now)); err != nil {
		return nil, err
	}
	candidates := s.reservations
	if ids := q.list("CapacityReservationId"); len(ids) > 0 {
		if q.has("MaxResults") {
			return nil, errf("InvalidParameterCombination", "The parameter capacityReservationIdSet cannot be used with the parameter maxResults")
		}
		candidates = nil
		var unknown []string
		for _, id := range ids {
			if !reservationIDRe.MatchString(id) {
				return nil, errf("InvalidCapacityReservationId.Malformed", "Invalid id: \"%s\" (expecting \"cr-...\")", id)
			}
			r := s.reservationByID(id)
			switch {
			case r == nil:
				unknown = append(unknown, id)
			case !slices.Contains(candidates, r):
				candidates = append(candidates, r)
			}
		}
		if len(unknown) > 0 {
			return nil, notFoundList("InvalidCapacityReservationId.NotFound", "Capacity Reservation", unknown)
		}
	}
	var out []ec2types.CapacityReservation
	for _, r := range candidates {
		ok, err := matchFilters(filters, s.reservationAttrs(r, now))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, s.sdkReservation(r, now))
		}
	}
	p, err := paginate(q, "DescribeCapacityReservations", len(out), pageLimits{min: 1, max: 1000})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeCapacityReservationsOutput{CapacityReservations: out[p.start:p.end], NextToken: ptrIfSet(p.next)}, nil
}

// readReservationSpec reads what a launch template's data says about capacity reservations:
// CapacityReservationSpecification.CapacityReservationPreference (open, none or
// capacity-reservations-only), CapacityReservationSpecification.CapacityReservationTarget.
// CapacityReservationId and InstanceMarketOptions.MarketType. A target is checked for its shape
// here and resolved at launch.
func (lt *launchTemplate) readReservationSpec(data query) error {
	spec := data.sub("CapacityReservationSpecification")
	lt.crPreference = spec.get("CapacityReservationPreference")
	lt.crTarget = spec.get("CapacityReservationTarget.CapacityReservationId")
	lt.marketType = data.get("InstanceMarketOptions.MarketType")
	switch ec2types.CapacityReservationPreference(lt.crPreference) {
	case "", ec2types.CapacityReservationPreferenceOpen, ec2types.CapacityReservationPreferenceNone, ec2types.CapacityReservationPreferenceCapacityReservationsOnly:
	default:
		return invalidValue("CapacityReservationPreference", lt.crPreference)
	}
	if spec.get("CapacityReservationTarget.CapacityReservationResourceGroupArn") != "" {
		return errf("InvalidParameterValue", "ec2sim supports targeting a Capacity Reservation by ID only, not a Capacity Reservation resource group")
	}
	if lt.crTarget != "" {
		if !reservationIDRe.MatchString(lt.crTarget) {
			return errf("InvalidCapacityReservationId.Malformed", "Invalid id: \"%s\" (expecting \"cr-...\")", lt.crTarget)
		}
		if lt.crPreference != "" && lt.crPreference != string(ec2types.CapacityReservationPreferenceCapacityReservationsOnly) {
			return errf("InvalidParameterCombination", "You can only specify CapacityReservationPreference and CapacityReservationTarget if the CapacityReservationPreference is capacity-reservations-only.")
		}
	}
	switch ec2types.MarketType(lt.marketType) {
	case "", ec2types.MarketTypeSpot, ec2types.MarketTypeCapacityBlock, ec2types.MarketTypeInterruptibleCapacityReservation:
	default:
		return invalidValue("InstanceMarketOptions.MarketType", lt.marketType)
	}
	return nil
}

// fleetReservations resolves the reservations the fleet's launch templates target and checks the
// request's combination of capacity type, market type and target, failing it as a whole: a
// Capacity Block fleet (DefaultTargetCapacityType capacity-block) needs templates of market type
// capacity-block that target one Capacity Block; an on-demand fleet may target ODCRs only; a spot
// fleet none.
func (s *Sim) fleetReservations(cands []*fleetCandidate, capType cloud.CapacityType, block bool) error {
	var blockID string
	for _, c := range cands {
		lt := c.lt
		if lt.crTarget != "" {
			c.reservation = s.reservationByID(lt.crTarget)
			if c.reservation == nil {
				return notFoundList("InvalidCapacityReservationId.NotFound", "Capacity Reservation", []string{lt.crTarget})
			}
		}
		r := c.reservation
		switch {
		case capType == cloud.Spot && (r != nil || lt.marketType == marketCapacityBlock):
			return errf("InvalidParameterCombination", "Launch template %s targets a Capacity Reservation or a Capacity Block, which Spot Instances cannot use.", lt.id)
		case block && lt.marketType != marketCapacityBlock:
			return errf("InvalidParameterCombination", "A fleet of DefaultTargetCapacityType capacity-block needs launch templates with InstanceMarketOptions.MarketType capacity-block; launch template %s has %q.", lt.id, lt.marketType)
		case block && (r == nil || !r.block()):
			return errf("InvalidParameterCombination", "A fleet of DefaultTargetCapacityType capacity-block needs launch templates that target a Capacity Block (CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId); launch template %s does not.", lt.id)
		case block && blockID != "" && blockID != r.id:
			return errf("InvalidParameterCombination", "A fleet can launch into one Capacity Block, not %s and %s.", blockID, r.id)
		case !block && lt.marketType == marketCapacityBlock:
			return errf("InvalidParameterCombination", "Launch template %s has InstanceMarketOptions.MarketType capacity-block: the fleet's DefaultTargetCapacityType must be capacity-block.", lt.id)
		case !block && r != nil && r.block():
			return errf("InvalidParameterCombination", "Launch template %s targets the Capacity Block %s: launching into it needs InstanceMarketOptions.MarketType capacity-block and DefaultTargetCapacityType capacity-block.", lt.id, r.id)
		}
		if block {
			blockID = r.id
		}
	}
	return nil
}

// reservationRefusal says why a candidate that targets a reservation cannot launch into it at all
// (an empty code when it can): its type or zone differs from the reservation's, or the
// reservation is not active. EC2 answers an ODCR that cannot take the launch with
// ReservationCapacityExceeded, and a Capacity Block that has not started (or has ended) with
// InsufficientInstanceCapacity.
func (s *Sim) reservationRefusal(c *fleetCandidate) (code, msg string) {
	r := c.reservation
	if r == nil {
		return "", ""
	}
	if c.instanceType != r.instanceType || c.sn.zone != r.zone {
		return "InvalidParameterValue", fmt.Sprintf("The instance type %s in Availability Zone %s does not match the Capacity Reservation %s, which reserves %s in %s.", c.instanceType, c.sn.zone, r.id, r.instanceType, r.zone)
	}
	if st := r.state(s.clock.Now()); st != string(ec2types.CapacityReservationStateActive) {
		if r.block() {
			return "InsufficientInstanceCapacity", fmt.Sprintf("The Capacity Block %s is %s: instances launch into it only while it is active, from %s to %s.", r.id, st, r.start.UTC().Format(time.RFC3339), r.end.UTC().Format(time.RFC3339))
		}
		return "ReservationCapacityExceeded", fmt.Sprintf("The requested reservation does not have sufficient compatible and available capacity for this request. (The Capacity Reservation %s is %s.)", r.id, st)
	}
	return "", ""
}

// reservationForLaunch returns the reservation the next instance of a candidate launches into:
// the one its template targets, or, for an on-demand launch whose template does not opt out
// (CapacityReservationPreference none), the first active open ODCR of its type and zone with room;
// nil for an ordinary launch. A code (with its message) says the candidate cannot launch now: its
// targeted reservation is full (ReservationCapacityExceeded; InsufficientInstanceCapacity for a
// Capacity Block, as EC2 Fleet reports it), or it must run in a reservation
// (capacity-reservations-only) and no open one has room. Callers hold s.mu.
func (s *Sim) reservationForLaunch(c *fleetCandidate, capType cloud.CapacityType) (r *capacityReservation, code, msg string) {
	now := s.clock.Now()
	if r := c.reservation; r != nil {
		if s.reservationAvailable(r, now) > 0 {
			return r, "", ""
		}
		if r.block() {
			return nil, "InsufficientInstanceCapacity", fmt.Sprintf("There is not enough capacity left in the Capacity Block %s for this request (%d instances).", r.id, r.total)
		}
		return nil, "ReservationCapacityExceeded", "The requested reservation does not have sufficient compatible and available capacity for this request."
	}
	pref := ec2types.CapacityReservationPreference(c.lt.crPreference)
	if capType != cloud.OnDemand || pref == ec2types.CapacityReservationPreferenceNone {
		return nil, "", ""
	}
	for _, r := range s.reservations {
		if !r.block() && r.match == string(ec2types.InstanceMatchCriteriaOpen) && r.instanceType == c.instanceType && r.zone == c.sn.zone &&
			r.state(now) == string(ec2types.CapacityReservationStateActive) && s.reservationAvailable(r, now) > 0 {
			return r, "", ""
		}
	}
	if pref == ec2types.CapacityReservationPreferenceCapacityReservationsOnly {
		return nil, "ReservationCapacityExceeded", fmt.Sprintf("No open Capacity Reservation for %s in %s has available capacity, and the launch template allows capacity-reservations-only.", c.instanceType, c.sn.zone)
	}
	return nil, "", ""
}

// placeInReservation records where an instance launched: in the reservation r (nil for none),
// with the preference and target its template gave. Callers hold s.mu.
func placeInReservation(in *instance, c *fleetCandidate, r *capacityReservation) {
	in.reservation = r
	in.targeted = c.reservation != nil
	in.reservationPref = c.lt.crPreference
	if in.reservationPref == "" && !in.targeted {
		in.reservationPref = string(ec2types.CapacityReservationPreferenceOpen)
	}
}

// reservationResources are the capacity-reservation resources a launch from c names, for its
// authorization requests: the reservation its template targets. An open ODCR EC2 picks on its own
// is not named by the caller and not authorized.
func (c *fleetCandidate) reservationResources() []AuthorizedResource {
	if c.reservation == nil {
		return nil
	}
	return []AuthorizedResource{{Type: "capacity-reservation", ID: c.reservation.id, Tags: c.reservation.tags}}
}

// sdkReservationFields fills in what DescribeInstances says of an instance's reservation:
// CapacityReservationId, CapacityReservationSpecification and, in a Capacity Block, the
// InstanceLifecycle capacity-block.
func sdkReservationFields(in *instance, out *ec2types.Instance) {
	// EC2 answers the preference (open, none) of an instance that names no target, and only the
	// target of one that does.
	spec := &ec2types.CapacityReservationSpecificationResponse{CapacityReservationPreference: ec2types.CapacityReservationPreference(in.reservationPref)}
	if in.targeted {
		spec = &ec2types.CapacityReservationSpecificationResponse{
			CapacityReservationTarget: &ec2types.CapacityReservationTargetResponse{CapacityReservationId: aws.String(in.reservation.id)},
		}
	}
	out.CapacityReservationSpecification = spec
	if in.reservation != nil {
		out.CapacityReservationId = aws.String(in.reservation.id)
		if in.reservation.block() {
			out.InstanceLifecycle = ec2types.InstanceLifecycleTypeCapacityBlock
		}
	}
}

// advanceCapacityBlocks does what the clock's passing makes EC2 do to Capacity Blocks: the
// delivered event at the start, the expiration warning 40 minutes before the end and, from 30
// minutes before the end, the termination of every instance in the block (shutting-down from that
// moment, or from its launch if later, then terminated as any other). Callers hold s.mu.
func (s *Sim) advanceCapacityBlocks() {
	now := s.clock.Now()
	for _, r := range s.reservations {
		if !r.block() {
			continue
		}
		if !r.delivered && !now.Before(r.start) {
			r.delivered = true
			s.routeCapacityBlockEvent(CapacityBlockDelivered, r, r.start)
		}
		if warnAt := r.end.Add(-capacityBlockWarning); !r.warned && !now.Before(warnAt) {
			r.warned = true
			s.routeCapacityBlockEvent(CapacityBlockExpirationWarning, r, warnAt)
		}
		reclaimAt := r.end.Add(-capacityBlockReclaim)
		if now.Before(reclaimAt) {
			continue
		}
		for _, in := range s.instances {
			if in.reservation == r && in.reclaimed.IsZero() {
				in.reclaimed = reclaimAt
				if in.launched.After(reclaimAt) {
					in.reclaimed = in.launched
				}
			}
		}
	}
}

// routeCapacityBlockEvent puts a Capacity Block event on every queue RouteCapacityBlockEvents
// named. Callers hold s.mu.
func (s *Sim) routeCapacityBlockEvent(kind EventKind, r *capacityReservation, at time.Time) {
	for _, name := range s.blockRoutes {
		q, ok := s.queues[name]
		if !ok {
			continue
		}
		body, err := s.capacityBlockEventBody(kind, r, at)
		if err != nil {
			continue
		}
		s.enqueue(q, body, 0)
	}
}

// capacityBlockEventBody is the SQS message body EventBridge delivers for a Capacity Block event
// (see the Amazon EC2 User Guide, "Monitor Capacity Blocks using EventBridge"). Callers hold s.mu.
func (s *Sim) capacityBlockEventBody(kind EventKind, r *capacityReservation, at time.Time) (string, error) {
	detailType := map[EventKind]string{
		CapacityBlockDelivered:         "Capacity Block Reservation Delivered",
		CapacityBlockExpirationWarning: "Capacity Block Reservation Expiration Warning",
	}[kind]
	if detailType == "" {
		return "", fmt.Errorf("ec2sim: %q is not a Capacity Block event", kind)
	}
	env := map[string]any{
		"version": "0", "id": s.newUUID(), "detail-type": detailType, "source": "aws.ec2",
		"account": s.opts.AccountID, "time": at.UTC().Format(time.RFC3339), "region": s.opts.Region,
		"resources": []string{r.arn(s.opts.Region)},
		"detail": map[string]any{
			"capacity-reservation-id": r.id,
			"end-date":                r.end.UTC().Format(time.RFC3339),
		},
	}
	b, err := json.Marshal(env)
	return string(b), err
}
