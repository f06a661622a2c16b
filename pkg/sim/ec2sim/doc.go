// Package ec2sim is a wire-level simulator of the parts of Amazon EC2 (and of SSM's
// GetParameter, the Pricing API's GetProducts, EKS's DescribeCluster and the SQS interruption
// queue) that Tailor uses. A *Sim is an http.Handler
// that speaks the EC2 Query protocol and the AWS JSON 1.1 protocol to the real aws-sdk-go-v2:
// point the SDK at it with AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL_SSM and
// AWS_ENDPOINT_URL_PRICING (or aws.Config.BaseEndpoint), give it any static credentials and
// region, and the unchanged client code runs against a simulated region. Signatures are not
// checked.
//
// # Requests
//
// EC2 calls are POST / with a form-encoded body (Action=X&Version=2016-11-15 and flattened,
// 1-based lists such as InstanceId.1, Filter.1.Name, Filter.1.Value.1,
// LaunchTemplateConfigs.1.Overrides.2.InstanceType). Answers are text/xml documents
// <XResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"> built from the SDK's own output
// structs by a reflective encoder; errors are HTTP 4xx/5xx with
// <Response><Errors><Error><Code>…</Code><Message>…</Message></Error></Errors><RequestID>…
// with EC2's error codes. SSM and Pricing calls are POST / with a JSON body and X-Amz-Target
// AmazonSSM.GetParameter or AWSPriceListService.GetProducts (the dispatch is on that header, so
// one server serves all three endpoints); their errors are JSON {"__type": code, "message": …}
// with X-Amzn-ErrorType.
//
// Supported actions: DescribeInstanceTypes, DescribeInstanceTypeOfferings, DescribeSubnets,
// DescribeSecurityGroups, DescribeImages, CreateLaunchTemplate, DescribeLaunchTemplates,
// DeleteLaunchTemplate, CreateFleet (Type=instant), DescribeInstances, TerminateInstances,
// CreateTags, DescribeSpotPriceHistory, DescribeCapacityReservations, SSM GetParameter and
// Pricing GetProducts. Any other EC2
// action answers InvalidAction, any other JSON operation UnknownOperationException. Describe calls paginate with MaxResults/NextToken where EC2 does (NextToken is
// an offset: a listing that changes between pages may skip or repeat items). DryRun=true answers
// DryRunOperation.
//
// SQS calls are POST / with X-Amz-Target AmazonSQS.<Operation> and AWS JSON 1.0 bodies, as the
// current SDK sends them (point it here with AWS_ENDPOINT_URL_SQS): CreateQueue (attribute
// VisibilityTimeout), GetQueueUrl, SendMessage, ReceiveMessage and DeleteMessage. Queue URLs are
// http://<host the client reached>/<account>/<name>; a queue is found by the URL's account and
// name, whatever the host. ReceiveMessage returns up to MaxNumberOfMessages (1–10) visible
// messages, oldest first, hiding each for the visibility timeout (the queue's, 30 s by default,
// or the request's) on the simulator's clock, after which it is received again with a new
// receipt handle; with WaitTimeSeconds (0–20) it waits, in real time and at most 20 s, until a
// message is sent. Only the latest receipt handle deletes (an older one succeeds and deletes
// nothing, as SQS documents). Bodies carry their MD5, which the SDK checks. Errors are JSON
// {"__type": "com.amazonaws.sqs#<Shape>", …} with the query-protocol code in
// X-Amzn-Query-Error (AWS.SimpleQueueService.NonExistentQueue, InvalidParameterValue,
// ReceiptHandleIsInvalid, MissingParameter), which the SDK reports as the error code.
// Options.Queues creates queues at start (and CreateQueue in-process); SendMessage and SendEvent
// put a raw body or an EventBridge event (EventBody: spot interruption warning, rebalance recommendation, state
// change, AWS Health scheduled change, Capacity Block delivered and expiration warning) on a queue in-process, and POST /_ec2sim/sqs/<queue>
// does it over HTTP (a JSON Event, or with ?raw=1 any body); QueueMessages counts what a queue
// holds, and TerminatedAt tells when an instance was asked to terminate.
//
// # The world
//
// New builds one VPC (10.0.0.0/16) with Options.SubnetsPerZone private subnets in every zone of
// Options.Zones, one cluster security group and the default security group. The subnets and the
// cluster security group carry the tags
//
//	kubernetes.io/cluster/<ClusterName> = shared
//	tailor.dev/discovery                = <ClusterName>
//
// (the subnets also kubernetes.io/role/internal-elb = 1 and a Name), so a configuration can
// select them by tag; the default security group has no tags.
//
// Instance types are the shipped us-east-1 records of package awsdata (whatever the region).
// Offerings are synthetic but deterministic: every type is offered in every zone, except that a
// type whose 32-bit FNV-1a hash of its name is divisible by 10 (about one type in ten) is missing
// from zone number (hash/10) mod len(Zones); with a single zone every type is offered. Sim.Offered
// answers the same question in-process.
//
// Images: the SSM parameters
//
//	/aws/service/eks/optimized-ami/<k8s-version>/amazon-linux-2023/<x86_64|arm64>/<standard|nvidia|neuron>/recommended/image_id
//	/aws/service/bottlerocket/aws-k8s-<k8s-version>[-nvidia]/<x86_64|arm64>/latest/image_id
//
// resolve to stable fake AMI IDs (a hash of region and path) that DescribeImages knows, with the
// right architecture. Versions 1.28 to 1.36 exist from the start; other 1.x versions appear on
// first GetParameter.
//
// # Prices
//
// On-demand prices are awsdata's (the us-east-1 list prices, whatever the region) until
// SetOnDemandPrice changes or removes one. Spot prices are synthetic and stable: awsdata's
// on-demand price × a factor in [0.25, 0.65] taken from the 64-bit FNV-1a hash of "type/zone",
// rounded to 6 decimals, for types that support spot, have an on-demand price in awsdata and are
// offered in the zone. They never move on their own; SetSpotPrice changes (or withdraws) one from
// the simulator's current time on.
//
// DescribeSpotPriceHistory reports, per type, zone and product ("Linux/UNIX" and
// "Linux/UNIX (Amazon VPC)"), the synthetic price time-stamped with the hour the simulator
// started, then every SetSpotPrice point with the clock's time at the call, newest first. With
// StartTime it answers as EC2 does: the price in effect at StartTime (the newest point at or
// before it) and every later point; EndTime drops points after it. A withdrawn price (SetSpotPrice
// with a price <= 0) is no point at all.
//
// GetProducts (ServiceCode AmazonEC2, FormatVersion aws_v1) lists products of the simulated region
// and of one other region (PricingOtherRegion: us-west-2, or us-east-1 outside it, priced 1.1
// times), five per instance type that has an on-demand price: Linux/Shared/NA/Used (the
// on-demand price itself), Linux with capacitystatus UnusedCapacityReservation (the same price),
// Linux Dedicated (×1.1), Linux with preInstalledSw "SQL Std" (+0.12 per vCPU) and Windows
// (+0.046 per vCPU). Filters (TERM_MATCH and EQUALS exact, CONTAINS, ANY_OF and NONE_OF with a
// comma-separated list) apply to ServiceCode, productFamily, sku and the attributes; field names
// match without regard to case. Each PriceList entry is a JSON document in the real aws_v1 shape:
//
//	{"product": {"productFamily": "Compute Instance", "sku": "…",
//	             "attributes": {"instanceType": "m5.large", "regionCode": "us-east-1",
//	                            "location": "US East (N. Virginia)", "operatingSystem": "Linux",
//	                            "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
//	                            "usagetype": "BoxUsage:m5.large", "vcpu": "2", "memory": "8 GiB", …}},
//	 "serviceCode": "AmazonEC2",
//	 "terms": {"OnDemand": {"<sku>.JRTCKXETXF": {"offerTermCode": "JRTCKXETXF", "sku": "<sku>",
//	             "priceDimensions": {"<sku>.JRTCKXETXF.6YS6EN2CT7": {"unit": "Hrs",
//	                 "pricePerUnit": {"USD": "0.0960000000"}, "description": "$0.096 per On Demand Linux m5.large Instance Hour", …}}, …}},
//	           "Reserved": {…two 1yr standard terms, No Upfront and All Upfront…}},
//	 "version": "20260101000000", "publicationDate": "2026-01-01T00:00:00Z"}
//
// Pages hold MaxResults (1–100, default 100) entries; NextToken is bound to its query
// (InvalidNextTokenException otherwise). Missing members, unknown filter types and MaxResults out
// of range answer ValidationException in the usual AWS wording; other service codes list
// nothing. The request's region is not checked (the real service runs in us-east-1, eu-central-1
// and ap-south-1 only).
//
// # Instances
//
// CreateFleet (Type=instant only) launches instances from a launch template and its overrides:
// the cheapest valid override first (lowest-price and price-capacity-optimized and the other
// price strategies all mean "cheapest" here), or by Priority for the prioritized strategies.
// Overrides that cannot launch are reported in errorSet beside the launched instances:
// Unsupported (type not offered in the subnet's zone, or spot requested for a type without
// spot), InvalidParameterValue (architecture of type and image differ),
// InsufficientInstanceCapacity (capacity exhausted by SetCapacity, reported for the overrides
// tried before one succeeded), InsufficientFreeAddressesInSubnet, SpotMaxPriceTooLow. A repeated
// ClientToken with the same parameters returns the first response and launches nothing; with
// different parameters it fails with IdempotentParameterMismatch.
//
// Instances get IDs like i-0123456789abcdef0, a private IP from their subnet, a PrivateDnsName
// like ip-10-0-1-23.ec2.internal (<region>.compute.internal outside us-east-1), their zone,
// InstanceLifecycle=spot for spot, the tags of the launch template and request plus
// aws:ec2:fleet-id, aws:ec2launchtemplate:id and aws:ec2launchtemplate:version, as EC2 adds them.
// States follow the clock: pending for Options.PendingFor, then running; TerminateInstances
// makes them shutting-down for Options.ShuttingDownFor, then terminated. A terminated instance
// loses its private IP, DNS name and subnet and stays visible to DescribeInstances for
// Options.TerminatedVisibleFor (default one hour, as EC2 documents "about an hour"), then it is
// gone (and its ID answers InvalidInstanceID.NotFound). CreateFleet's TagSpecifications take
// the fleet, instance and volume resource types (an instant fleet's); network interfaces and spot
// requests are tagged through the launch template's.
//
// # Capacity reservations
//
// AddCapacityReservation seeds On-Demand Capacity Reservations (ODCRs) and Capacity Blocks for ML
// (an instance type in a zone, a count, tags, open or targeted, dates, owner); their state follows
// the clock (scheduled before the start, active, expired from the end) unless
// SetCapacityReservationState pins one (cancelled, ...). DescribeCapacityReservations lists them
// with EC2's filters and pages; AvailableInstanceCount is the count less the instances in the
// reservation that have not reached terminated (0 for a Capacity Block before it starts).
//
// A launch template targets a reservation with
// LaunchTemplateData.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId
// (CapacityReservationPreference capacity-reservations-only or unset; open or none with a target is
// InvalidParameterCombination), and a Capacity Block also with
// LaunchTemplateData.InstanceMarketOptions.MarketType=capacity-block. CreateFleet with
// DefaultTargetCapacityType on-demand launches such a template's overrides into the ODCR;
// with DefaultTargetCapacityType capacity-block into the one Capacity Block all its templates
// target. Other combinations (a block without the market type or fleet type, an ODCR in a block
// fleet, any target in a spot fleet, two blocks) fail the request with
// InvalidParameterCombination; an unknown target with InvalidCapacityReservationId.NotFound. In the
// fleet's errorSet, an override of another type or zone than the reservation's gets
// InvalidParameterValue; one whose ODCR is not active or full ReservationCapacityExceeded; one
// whose Capacity Block has not started, has ended or is full InsufficientInstanceCapacity (as EC2
// Fleet documents for blocks). Reserved launches are not limited by SetCapacity. An on-demand
// launch that targets nothing and does not opt out (CapacityReservationPreference none) uses the
// first active open ODCR of its type and zone with room, as EC2 does; with
// capacity-reservations-only and no target it must find one (else ReservationCapacityExceeded).
// The simulator tracks no spend: a reserved instance costs nothing extra here.
//
// DescribeInstances reports CapacityReservationId and CapacityReservationSpecification
// (the template's preference, open by default, and target), InstanceLifecycle capacity-block in a
// Capacity Block (unset in an ODCR: it is on-demand), and filters on capacity-reservation-id; the
// fleet's Lifecycle is capacity-block for a block fleet. From 30 minutes before a Capacity Block
// ends, its instances are shutting-down (StateReason Server.ScheduledStop), then terminated as
// usual; RouteCapacityBlockEvents puts "Capacity Block Reservation Delivered" (at the start) and
// "Capacity Block Reservation Expiration Warning" (40 minutes before the end) on a queue. The
// simulator has no timer: it applies what the clock passed at its next request (EC2 or
// ReceiveMessage) or in-process read (Instances, CapacityReservations), stamping events with the
// time they were due. CreateFleet and RunInstances are authorized on the targeted reservation
// (capacity-reservation), not on an open one EC2 picks itself.
//
// # Authorization
//
// The simulator evaluates no IAM policy, but it logs what IAM would be asked for every call it
// answers (AuthorizationLog): the signer's access key ID, the action, the resources with the
// tags the call creates them with and the tags they have, and context keys. CreateFleet logs
// ec2:CreateFleet on the fleet, instance, volumes, launch template, subnet, image and the
// capacity reservation the template targets;
// ec2:RunInstances, which EC2 authorizes on the caller's behalf for each instance an instant
// fleet launches, on those plus the network interface, security groups, the image's snapshot
// and the spot request; ec2:CreateTags with ec2:CreateAction for what it tags on creation; and
// iam:PassRole of the instance profile's role (SetInstanceProfileRole; by default the role of the
// profile's name). TerminateInstances and DeleteLaunchTemplate log their targets' tags. Requests
// that differ only in resource IDs are logged once. pkg/sim/iamcheck evaluates the log against
// the controller's policy.
//
// # Tests and fault injection
//
// Sim has in-process helpers: Instances, Calls, Requests, AuthorizationLog, FleetRequests,
// LaunchTemplates, BackdateLaunchTemplates, BackdateInstances, Subnets, ClusterSecurityGroupID, SSMParameter,
// Offered, OnDemandPrice, SpotPrice, CapacityReservations, CapacityReservation.
// InjectFault makes matching requests fail (or slow down), EC2 actions and JSON operations
// (GetParameter, GetProducts) alike, or with InFleet make CreateFleet report an error for every
// override in the fleet's error set (an account quota: VcpuLimitExceeded); SetCapacity limits how many instances an offering can still
// launch, after which CreateFleet reports InsufficientInstanceCapacity for it; SetOnDemandPrice
// and SetSpotPrice change prices (CreateFleet reports InsufficientInstanceCapacity for spot where
// SetSpotPrice withdrew the price).
//
// A Sim is safe for concurrent use.
package ec2sim
