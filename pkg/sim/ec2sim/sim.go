package ec2sim

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-eks/tailor/pkg/awsdata"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Immediately, as Options.PendingFor or Options.ShuttingDownFor, makes the transition take no
// time (a zero Duration means the default).
const Immediately time.Duration = -1

// Clock tells the simulator the time. Instance states, launch times and the visibility of
// terminated instances follow it.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// FakeClock is a Clock that moves only when told to.
type FakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewFakeClock returns a FakeClock set to t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{t: t} }

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set sets the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Options shape a simulated region.
type Options struct {
	// Region defaults to us-east-1.
	Region string
	// AccountID owns every resource; defaults to 123456789012.
	AccountID string
	// ClusterName is used in the discovery tags of the subnets and the cluster security group;
	// defaults to "tailor".
	ClusterName string
	// Zones default to <Region>a, <Region>b and <Region>c.
	Zones []string
	// SubnetsPerZone defaults to 2. At most 256 subnets in all.
	SubnetsPerZone int
	// PendingFor is how long a new instance stays pending; ShuttingDownFor how long a
	// terminating one stays shutting-down. Zero means the default of one second; Immediately
	// (or any negative value) means no time at all.
	PendingFor      time.Duration
	ShuttingDownFor time.Duration
	// TerminatedVisibleFor is how long a terminated instance stays visible; defaults to an hour.
	TerminatedVisibleFor time.Duration
	// Clock defaults to the real time.
	Clock Clock
	// Logger receives one debug record per request; defaults to discarding.
	Logger *slog.Logger
	// Queues are SQS queues that exist from the start (CreateQueue makes more).
	Queues []string
}

func (o Options) withDefaults() Options {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "123456789012"
	}
	if o.ClusterName == "" {
		o.ClusterName = "tailor"
	}
	if len(o.Zones) == 0 {
		o.Zones = []string{o.Region + "a", o.Region + "b", o.Region + "c"}
	} else {
		o.Zones = slices.Clone(o.Zones)
	}
	if o.SubnetsPerZone <= 0 {
		o.SubnetsPerZone = 2
	}
	o.PendingFor = durationOption(o.PendingFor, time.Second)
	o.ShuttingDownFor = durationOption(o.ShuttingDownFor, time.Second)
	if o.TerminatedVisibleFor <= 0 {
		o.TerminatedVisibleFor = time.Hour
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func durationOption(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Sim is a simulated EC2 region. Create it with New; serve it with net/http.
type Sim struct {
	opts  Options
	clock Clock
	log   *slog.Logger
	seed  uint64
	start time.Time

	// Read-only after New.
	types     map[string]ec2types.InstanceTypeInfo
	typeNames []string
	shipped   map[string]float64 // awsdata's on-demand prices; synthetic spot prices derive from them
	zoneIDs   map[string]string  // zone name → zone ID

	productsOnce sync.Once
	products     []*product // the Pricing API's products, built on first GetProducts

	mu            sync.Mutex
	launches      uint64                   // instances launched so far, numbering them in launch order
	prices        map[string]float64       // on-demand prices (SetOnDemandPrice changes them)
	spotSet       map[spotKey][]pricePoint // SetSpotPrice history per type and zone, oldest first
	seq           uint64
	reqSeq        uint64
	vpcID         string
	subnets       []*subnet
	subnetByID    map[string]*subnet
	groups        []*securityGroup
	images        []*image
	imageByID     map[string]*image
	ssmParams     map[string]string
	cluster       *ClusterInfo         // what DescribeCluster reports; nil while "creating"
	queues        map[string]*sqsQueue // SQS queues by name
	queueSignal   chan struct{}        // closed (and replaced) when a message is sent: wakes long polls
	launchSignal  chan struct{}        // closed (and replaced) when an instance is launched (Launches)
	templates     []*launchTemplate
	ltTokens      map[string]*launchTemplate
	instances     []*instance
	instanceByID  map[string]*instance
	fleetTokens   map[string]*fleetRecord
	fleetsCreated int
	calls         map[string]int
	// refusals counts the error answers by error code (see Refusals).
	refusals map[string]int
	requests map[string][]url.Values
	// active and mostActive count the requests of each action being answered now, and the
	// most at once (see MostConcurrent).
	active, mostActive map[string]int
	// caller is the principal of the EC2 request being handled (handlers run under mu).
	caller       string
	authz        []AuthorizationRequest
	authzSeen    map[string]struct{}
	profileRoles map[string]string // instance profile name → role name
	faults       []*faultState
	// fleetFault is the InFleet fault of the CreateFleet being handled, if any.
	fleetFault *Fault
	capacity   map[capacityKey]int
	// reservations are the capacity reservations (AddCapacityReservation), in the order added;
	// blockRoutes the queues their Capacity Block events go to (RouteCapacityBlockEvents).
	reservations []*capacityReservation
	blockRoutes  []string
}

// New builds a simulated region. It panics on impossible options (more than 256 subnets).
func New(opts Options) *Sim {
	opts = opts.withDefaults()
	if n := len(opts.Zones) * opts.SubnetsPerZone; n > 256 {
		panic(fmt.Sprintf("ec2sim: %d subnets do not fit a /16 VPC (at most 256)", n))
	}
	s := &Sim{
		opts:         opts,
		clock:        opts.Clock,
		log:          opts.Logger,
		seed:         hash64(opts.Region + "/" + opts.AccountID + "/" + opts.ClusterName),
		subnetByID:   map[string]*subnet{},
		imageByID:    map[string]*image{},
		ssmParams:    map[string]string{},
		ltTokens:     map[string]*launchTemplate{},
		instanceByID: map[string]*instance{},
		fleetTokens:  map[string]*fleetRecord{},
		calls:        map[string]int{},
		refusals:     map[string]int{},
		active:       map[string]int{},
		mostActive:   map[string]int{},
		requests:     map[string][]url.Values{},
		authzSeen:    map[string]struct{}{},
		profileRoles: map[string]string{},
		capacity:     map[capacityKey]int{},
		spotSet:      map[spotKey][]pricePoint{},
		queues:       map[string]*sqsQueue{},
		queueSignal:  make(chan struct{}),
		launchSignal: make(chan struct{}),
	}
	s.start = s.clock.Now().UTC()
	s.loadCatalog()
	s.buildNetwork()
	s.buildImages()
	for _, q := range opts.Queues {
		if err := s.CreateQueue(q); err != nil {
			panic(fmt.Sprintf("ec2sim: %v", err))
		}
	}
	return s
}

func (s *Sim) loadCatalog() {
	infos, err := awsdata.InstanceTypes()
	if err != nil {
		panic(fmt.Sprintf("ec2sim: %v", err))
	}
	prices, err := awsdata.OnDemandPrices()
	if err != nil {
		panic(fmt.Sprintf("ec2sim: %v", err))
	}
	s.types = make(map[string]ec2types.InstanceTypeInfo, len(infos))
	for _, it := range infos {
		name := string(it.InstanceType)
		s.types[name] = it
		s.typeNames = append(s.typeNames, name)
	}
	slices.Sort(s.typeNames)
	s.shipped = prices
	s.prices = maps.Clone(prices)
	s.zoneIDs = map[string]string{}
	for i, z := range s.opts.Zones {
		s.zoneIDs[z] = fmt.Sprintf("%s-az%d", regionShort(s.opts.Region), i+1)
	}
}

// regionShort abbreviates a region name the way zone IDs do: us-east-1 → use1.
func regionShort(region string) string {
	words := map[string]string{
		"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
		"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw",
	}
	parts := strings.Split(region, "-")
	var b strings.Builder
	for i, p := range parts {
		if w, ok := words[p]; ok && i > 0 {
			b.WriteString(w)
		} else {
			b.WriteString(p)
		}
	}
	return b.String()
}

// hash64 is the 64-bit FNV-1a hash of s.
func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// hash32 is the 32-bit FNV-1a hash of s.
func hash32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// mix is splitmix64, a bijective scrambler for sequence numbers.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// next returns 64 fresh deterministic bits. Callers hold s.mu (or are in New).
func (s *Sim) next() uint64 {
	s.seq++
	return mix(s.seed ^ s.seq)
}

// newID returns a resource ID like i-0123456789abcdef0 (prefix, "-0" and 16 hex digits).
func (s *Sim) newID(prefix string) string {
	return fmt.Sprintf("%s-0%016x", prefix, s.next())
}

// newUUID returns a UUID-shaped resource identifier.
func (s *Sim) newUUID() string { return uuidFrom(s.next(), s.next()) }

// newRequestID returns a UUID-shaped request ID from a sequence of its own, so that requests
// do not change the IDs of resources. Callers hold s.mu.
func (s *Sim) newRequestID() string {
	s.reqSeq++
	return uuidFrom(mix(^s.seed^s.reqSeq), mix(s.seed+s.reqSeq))
}

func uuidFrom(hi, lo uint64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Offered reports whether the simulated region offers the instance type in the zone (see the
// package documentation for the rule).
func (s *Sim) Offered(instanceType, zone string) bool {
	if _, ok := s.types[instanceType]; !ok {
		return false
	}
	zi := slices.Index(s.opts.Zones, zone)
	if zi < 0 {
		return false
	}
	if len(s.opts.Zones) < 2 {
		return true
	}
	h := hash32(instanceType)
	if h%10 != 0 {
		return true
	}
	return zi != int(h/10)%len(s.opts.Zones)
}

// OnDemandPrice returns the on-demand USD/hour of the type: awsdata's price unless
// SetOnDemandPrice changed it.
func (s *Sim) OnDemandPrice(instanceType string) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.onDemandPrice(instanceType)
}

// onDemandPrice is OnDemandPrice for callers that hold s.mu.
func (s *Sim) onDemandPrice(instanceType string) (float64, bool) {
	if _, known := s.types[instanceType]; !known {
		return 0, false
	}
	p, ok := s.prices[instanceType]
	return p, ok
}

// SetOnDemandPrice changes the on-demand USD/hour of a known instance type, as the Pricing API
// (GetProducts) and CreateFleet's price order see it. A price <= 0 removes the type's on-demand
// price: GetProducts no longer lists the type. Spot prices do not change (they derive from
// awsdata's price).
func (s *Sim) SetOnDemandPrice(instanceType string, price float64) {
	if _, known := s.types[instanceType]; !known {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if price <= 0 {
		delete(s.prices, instanceType)
		return
	}
	s.prices[instanceType] = price
}

// spotKey names one type in one zone.
type spotKey struct{ instanceType, zone string }

// pricePoint is one entry of a spot price history; price <= 0 means "no spot price from then on".
type pricePoint struct {
	at    time.Time
	price float64
}

// SpotPrice returns the current spot price of the type in the zone: the synthetic one (see the
// package documentation) or the last one SetSpotPrice set; false if the type cannot run as spot
// there.
func (s *Sim) SpotPrice(instanceType, zone string) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spotPrice(instanceType, zone)
}

// spotPrice is SpotPrice for callers that hold s.mu.
func (s *Sim) spotPrice(instanceType, zone string) (float64, bool) {
	h := s.spotHistory(instanceType, zone)
	if len(h) == 0 || h[len(h)-1].price <= 0 {
		return 0, false
	}
	return h[len(h)-1].price, true
}

// SetSpotPrice changes the spot price of the type in the zone from the simulator's current time
// on: DescribeSpotPriceHistory reports a new point stamped with the clock's time (after the
// earlier ones), and SpotPrice and CreateFleet use the new price. A price <= 0 withdraws the spot
// price (the type cannot launch as spot there any more). It has no effect for a type that cannot
// run as spot in the zone (unknown, not offered there, or without spot among its usage classes).
func (s *Sim) SetSpotPrice(instanceType, zone string, price float64) {
	if !s.supportsSpot(instanceType) || !s.Offered(instanceType, zone) {
		return
	}
	if price < 0 {
		price = 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := spotKey{instanceType, zone}
	s.spotSet[k] = append(s.spotSet[k], pricePoint{at: s.clock.Now().UTC(), price: price})
}

// spotHistory returns the spot price history of the type in the zone, oldest first: the
// synthetic price from the hour the simulator started, then what SetSpotPrice set. Nil if the
// type cannot run as spot there. Callers hold s.mu.
func (s *Sim) spotHistory(instanceType, zone string) []pricePoint {
	if !s.supportsSpot(instanceType) || !s.Offered(instanceType, zone) {
		return nil
	}
	var out []pricePoint
	if p, ok := s.syntheticSpotPrice(instanceType, zone); ok {
		out = append(out, pricePoint{at: s.start.Truncate(time.Hour), price: p})
	}
	return append(out, s.spotSet[spotKey{instanceType, zone}]...)
}

// syntheticSpotPrice is the stable spot price of the package documentation.
func (s *Sim) syntheticSpotPrice(instanceType, zone string) (float64, bool) {
	od, ok := s.shipped[instanceType]
	if !ok {
		return 0, false
	}
	f := 0.25 + 0.40*float64(hash64(instanceType+"/"+zone)%10001)/10000
	p := math.Round(od*f*1e6) / 1e6
	if p <= 0 {
		p = 0.000001
	}
	return p, true
}

// supportsSpot reports whether the type lists spot among its usage classes.
func (s *Sim) supportsSpot(instanceType string) bool {
	info, ok := s.types[instanceType]
	return ok && slices.Contains(info.SupportedUsageClasses, ec2types.UsageClassTypeSpot)
}

// archOf returns the architectures of a type as EC2 names them.
func (s *Sim) archOf(instanceType string) []ec2types.ArchitectureType {
	info, ok := s.types[instanceType]
	if !ok || info.ProcessorInfo == nil {
		return nil
	}
	return info.ProcessorInfo.SupportedArchitectures
}

// Zones returns the simulated zones.
func (s *Sim) Zones() []string { return slices.Clone(s.opts.Zones) }

// Region returns the simulated region.
func (s *Sim) Region() string { return s.opts.Region }

// Now returns the simulator's time.
func (s *Sim) Now() time.Time { return s.clock.Now() }

// capacityKey names one offering for SetCapacity.
type capacityKey struct {
	instanceType, zone string
	capacityType       cloud.CapacityType
}

// SetCapacity limits how many more instances of the type CreateFleet can launch in the zone for
// the capacity type; once n launches used it up, the offering answers
// InsufficientInstanceCapacity. n < 0 removes the limit (the default). An empty zone applies to
// every zone, an empty capacity type to both on-demand and spot. Terminations do not give
// capacity back.
func (s *Sim) SetCapacity(instanceType, zone string, capacityType cloud.CapacityType, n int) {
	zones := []string{zone}
	if zone == "" {
		zones = s.opts.Zones
	}
	cts := []cloud.CapacityType{capacityType}
	if capacityType == "" {
		cts = []cloud.CapacityType{cloud.OnDemand, cloud.Spot}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, z := range zones {
		for _, ct := range cts {
			k := capacityKey{instanceType, z, ct}
			if n < 0 {
				delete(s.capacity, k)
			} else {
				s.capacity[k] = n
			}
		}
	}
}

// takeCapacity uses one unit of the offering's capacity; false if none is left.
func (s *Sim) hasCapacity(k capacityKey) bool {
	n, limited := s.capacity[k]
	return !limited || n > 0
}

func (s *Sim) useCapacity(k capacityKey) {
	if n, limited := s.capacity[k]; limited && n > 0 {
		s.capacity[k] = n - 1
	}
}

// Fault makes matching requests fail or slow down.
type Fault struct {
	// Action is the EC2 action (CreateFleet), SSM operation (GetParameter) or Pricing operation
	// (GetProducts) the fault applies to; empty or "*" means every request.
	Action string
	// Code is the error code to answer with, such as RequestLimitExceeded or
	// InsufficientInstanceCapacity; empty means no error (only Latency).
	Code    string
	Message string
	// HTTPStatus defaults to 503 for RequestLimitExceeded, Unavailable, ServiceUnavailable[Exception]
	// and Throttling[Exception]; 500 for InternalError, InternalFailure, InternalServerError and
	// InternalErrorException; 403 for AuthFailure and UnauthorizedOperation; 400 otherwise.
	HTTPStatus int
	// Latency delays the answer (real time, not the simulator's clock).
	Latency time.Duration
	// Times is how many matching requests the fault applies to; 0 means until ClearFaults.
	Times int
	// AfterEffect makes the request take effect before the latency and the error: the
	// ambiguous failure of a call that timed out or failed after EC2 had acted on it.
	AfterEffect bool
	// InFleet, for CreateFleet, answers the request instead of failing it: the fleet is created,
	// launches nothing, and reports Code in its error set for every override that could have
	// launched, the way an instant fleet reports VcpuLimitExceeded or
	// MaxSpotInstanceCountExceeded. Other actions ignore it.
	InFleet bool
	// CapacityType, for CreateFleet, limits the fault to fleets of that default target capacity
	// type (spot or on-demand), as a spot instance quota refuses only spot launches. Other
	// actions never match a fault that sets it.
	CapacityType string
}

// SetPendingFor changes how long instances launched from now on stay pending (Immediately, or a
// negative value, for no time); instances already launched keep theirs. Tests use it to hold a
// launched instance back from running, as a slow boot would.
func (s *Sim) SetPendingFor(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.PendingFor = durationOption(d, time.Second)
}

// delayAndFail applies the fault's latency and error to a request. It reports whether the
// request is finished: an error was written, or the client went away while waiting.
func (f *Fault) delayAndFail(r *http.Request, writeErr func(*apiError)) bool {
	if !sleep(r, f.Latency) {
		return true
	}
	if f.Code != "" {
		writeErr(&apiError{status: f.HTTPStatus, code: f.Code, message: f.Message})
		return true
	}
	return false
}

type faultState struct {
	Fault
	used int
}

// InjectFault adds a fault. Faults apply in the order they were injected; a request gets the
// first one that matches and has uses left.
func (s *Sim) InjectFault(f Fault) {
	if f.Code != "" && f.HTTPStatus == 0 {
		f.HTTPStatus = defaultStatus(f.Code)
	}
	if f.Code != "" && f.Message == "" {
		f.Message = "Injected fault: " + f.Code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &faultState{Fault: f})
}

// ClearFaults removes every fault.
func (s *Sim) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// takeFault returns the fault for a request to action, using it once. Callers hold s.mu.
func (s *Sim) takeFault(action string, params url.Values) *Fault {
	for i, f := range s.faults {
		if f.Action != "" && f.Action != "*" && f.Action != action {
			continue
		}
		if f.CapacityType != "" && (action != "CreateFleet" || params.Get("TargetCapacitySpecification.DefaultTargetCapacityType") != f.CapacityType) {
			continue
		}
		f.used++
		if f.Times > 0 && f.used >= f.Times {
			s.faults = slices.Delete(s.faults, i, i+1)
		}
		out := f.Fault
		return &out
	}
	return nil
}

func defaultStatus(code string) int {
	switch code {
	case "RequestLimitExceeded", "Unavailable", "ServiceUnavailable", "ServiceUnavailableException", "Throttling", "ThrottlingException":
		return 503
	case "InternalError", "InternalFailure", "InternalServerError", "InternalErrorException":
		return 500
	case "AuthFailure", "UnauthorizedOperation":
		return 403
	}
	return 400
}

// Calls returns how many requests for the action the simulator received (every request,
// including failed ones and idempotent repeats).
func (s *Sim) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[action]
}

// Refusals returns how many requests the simulator answered with the error code (of every
// action, faults included), such as IdempotentParameterMismatch.
func (s *Sim) Refusals(code string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusals[code]
}

// MostConcurrent returns the most requests of the action (EC2 Query actions) that were being
// answered at once, latency and faults included, since the simulator started or the last
// ResetMostConcurrent.
func (s *Sim) MostConcurrent(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mostActive[action]
}

// ResetMostConcurrent starts MostConcurrent's count again from the requests under way.
func (s *Sim) ResetMostConcurrent() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for a := range s.mostActive {
		s.mostActive[a] = s.active[a]
	}
}

// enter and leave bracket the answer to a request of action.
func (s *Sim) enter(action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active[action]++
	s.mostActive[action] = max(s.mostActive[action], s.active[action])
}

func (s *Sim) leave(action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active[action]--
}

// maxRecorded bounds the requests kept per action.
const maxRecorded = 256

// Requests returns the parameters of the last requests for the action (at most 256, oldest
// first). For the JSON operations (SSM, Pricing) they hold the JSON body flattened the way the
// Query protocol names parameters: Name, MaxResults, Filters.1.Field, Filters.1.Value.
func (s *Sim) Requests(action string) []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]url.Values, len(s.requests[action]))
	for i, v := range s.requests[action] {
		out[i] = cloneValues(v)
	}
	return out
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// FleetRequests returns how many fleets CreateFleet created: every CreateFleet that passed
// validation, whether or not it launched anything, but not idempotent repeats of a ClientToken.
func (s *Sim) FleetRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fleetsCreated
}

// Subnets returns the simulated subnets in creation order (zone by zone).
func (s *Sim) Subnets() []cloud.Subnet {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	out := make([]cloud.Subnet, 0, len(s.subnets))
	for _, sn := range s.subnets {
		out = append(out, cloud.Subnet{ID: sn.id, Zone: sn.zone, AvailableIPs: sn.available()})
	}
	return out
}

// ClusterSecurityGroupID returns the ID of the security group tagged for the cluster.
func (s *Sim) ClusterSecurityGroupID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.groups {
		if g.tags[clusterTagKey(s.opts.ClusterName)] != "" {
			return g.id
		}
	}
	return ""
}

// SSMParameter returns the value of an SSM parameter the simulator serves.
func (s *Sim) SSMParameter(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.resolveParameter(name)
	return v, ok
}

// Instances returns every instance still visible (terminated ones for
// Options.TerminatedVisibleFor), in launch order, with their current state.
func (s *Sim) Instances() []cloud.Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	now := s.clock.Now()
	out := make([]cloud.Instance, 0, len(s.instances))
	for _, in := range s.instances {
		out = append(out, in.cloud(now, s.opts))
	}
	return out
}

// Instance returns one visible instance.
func (s *Sim) Instance(id string) (cloud.Instance, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	in, ok := s.instanceByID[id]
	if !ok {
		return cloud.Instance{}, false
	}
	return in.cloud(s.clock.Now(), s.opts), true
}

// LaunchTemplate is a launch template as the simulator stores it.
type LaunchTemplate struct {
	ID, Name         string
	ImageID          string
	InstanceType     string
	InstanceProfile  string // name or ARN as given
	SecurityGroupIDs []string
	// UserData is decoded from base64.
	UserData string
	Tags     map[string]string
	// Data holds every LaunchTemplateData.* parameter of the create request, without the prefix.
	Data url.Values
}

// BackdateLaunchTemplates moves the creation time of every existing launch template back by d:
// tests use it to stand for templates made long ago without waiting.
func (s *Sim) BackdateLaunchTemplates(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, lt := range s.templates {
		lt.created = lt.created.Add(-d)
	}
}

// BackdateInstances moves the launch time of the named instances back by d: tests use it to
// stand for instances launched long ago (an orphan past its grace) without waiting. It reports
// whether every instance was found.
func (s *Sim) BackdateInstances(d time.Duration, ids ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := true
	for _, id := range ids {
		in, ok := s.instanceByID[id]
		if !ok {
			found = false
			continue
		}
		in.launched = in.launched.Add(-d)
	}
	return found
}

// LaunchTemplates returns the existing launch templates in creation order.
func (s *Sim) LaunchTemplates() []LaunchTemplate {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]LaunchTemplate, 0, len(s.templates))
	for _, lt := range s.templates {
		out = append(out, lt.export())
	}
	return out
}

// UserData returns the user data an instance was launched with, decoded, as the instance
// metadata service serves it to the instance. False when the instance is unknown.
func (s *Sim) UserData(instanceID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.instanceByID[instanceID]
	if !ok {
		return "", false
	}
	ud, _ := base64.StdEncoding.DecodeString(in.userData)
	return string(ud), true
}

// VolumeGiB returns the size of the instance's volume on the device as its launch template
// mapped it; false if the instance is unknown or its template left the device to the image.
func (s *Sim) VolumeGiB(instanceID, device string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.instanceByID[instanceID]
	if !ok {
		return 0, false
	}
	n, ok := in.volumes[device]
	return n, ok
}

// TerminatedAt returns when TerminateInstances first asked to terminate the instance (the
// simulator's clock); false if it never was, or the instance is unknown. Tests order what
// happened before a termination against it.
func (s *Sim) TerminatedAt(instanceID string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.instanceByID[instanceID]
	if !ok || in.terminating.IsZero() {
		return time.Time{}, false
	}
	return in.terminating, true
}
