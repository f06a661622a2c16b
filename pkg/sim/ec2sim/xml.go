package ec2sim

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"reflect"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// The EC2 Query protocol answers in XML whose element names are the lower-camel field names of
// the SDK's types, with a few exceptions. This file holds one reflective encoder that writes any
// aws-sdk-go-v2 EC2 output or type as such XML, so the simulator builds responses from the SDK's
// own structs instead of hand-written templates.
//
// The exceptions below are the (type, field) pairs whose element name is not the lower-camel
// field name in the SDK deserializer (service/ec2 deserializers.go, which matches names with
// strings.EqualFold), for every type reachable from the outputs the simulator emits, plus the
// global rule Tags → tagSet. TestXMLRoundTrip fills every field of every emitted output, encodes
// it, decodes it with the real SDK and compares, so a missing entry fails a test.
var xmlNames = map[string]string{
	// Outputs.
	"CreateFleetOutput.Errors":                                  "errorSet",
	"CreateFleetOutput.Instances":                               "fleetInstanceSet",
	"DescribeCapacityReservationsOutput.CapacityReservations":   "capacityReservationSet",
	"DescribeImagesOutput.Images":                               "imagesSet",
	"DescribeInstancesOutput.Reservations":                      "reservationSet",
	"DescribeInstanceTypeOfferingsOutput.InstanceTypeOfferings": "instanceTypeOfferingSet",
	"DescribeInstanceTypesOutput.InstanceTypes":                 "instanceTypeSet",
	"DescribeSecurityGroupsOutput.SecurityGroups":               "securityGroupInfo",
	"DescribeSpotPriceHistoryOutput.SpotPriceHistory":           "spotPriceHistorySet",
	"DescribeSubnetsOutput.Subnets":                             "subnetSet",
	"TerminateInstancesOutput.TerminatingInstances":             "instancesSet",

	// Types.
	"CapacityAllocation.AllocationMetadata":              "allocationMetadataList",
	"CapacityReservation.CapacityAllocations":            "capacityAllocationSet",
	"CpuPerformanceFactor.References":                    "referenceSet",
	"EbsInfo.EbsCards":                                   "ebsCardSet",
	"FleetLaunchTemplateOverrides.BlockDeviceMappings":   "blockDeviceMappingSet",
	"GpuDeviceInfo.Workloads":                            "workloadSet",
	"Image.BlockDeviceMappings":                          "blockDeviceMapping",
	"Image.ImageWatermarks":                              "imageWatermarkSet",
	"Image.OwnerId":                                      "imageOwnerId",
	"Image.Public":                                       "isPublic",
	"Image.State":                                        "imageState",
	"Instance.BlockDeviceMappings":                       "blockDeviceMapping",
	"Instance.ElasticGpuAssociations":                    "elasticGpuAssociationSet",
	"Instance.ElasticInferenceAcceleratorAssociations":   "elasticInferenceAcceleratorAssociationSet",
	"Instance.Licenses":                                  "licenseSet",
	"Instance.NetworkInterfaces":                         "networkInterfaceSet",
	"Instance.PublicDnsName":                             "dnsName",
	"Instance.PublicIpAddress":                           "ipAddress",
	"Instance.SecondaryInterfaces":                       "secondaryInterfaceSet",
	"Instance.SecurityGroups":                            "groupSet",
	"Instance.State":                                     "instanceState",
	"Instance.StateTransitionReason":                     "reason",
	"InstanceNetworkInterface.Groups":                    "groupSet",
	"InstanceNetworkInterface.Ipv4Prefixes":              "ipv4PrefixSet",
	"InstanceNetworkInterface.Ipv6Addresses":             "ipv6AddressesSet",
	"InstanceNetworkInterface.Ipv6Prefixes":              "ipv6PrefixSet",
	"InstanceNetworkInterface.PrivateIpAddresses":        "privateIpAddressesSet",
	"InstanceRequirements.AcceleratorManufacturers":      "acceleratorManufacturerSet",
	"InstanceRequirements.AcceleratorNames":              "acceleratorNameSet",
	"InstanceRequirements.AcceleratorTypes":              "acceleratorTypeSet",
	"InstanceRequirements.AllowedInstanceTypes":          "allowedInstanceTypeSet",
	"InstanceRequirements.CpuManufacturers":              "cpuManufacturerSet",
	"InstanceRequirements.ExcludedInstanceTypes":         "excludedInstanceTypeSet",
	"InstanceRequirements.InstanceGenerations":           "instanceGenerationSet",
	"InstanceRequirements.LocalStorageTypes":             "localStorageTypeSet",
	"InstanceSecondaryInterface.PrivateIpAddresses":      "privateIpAddressSet",
	"InstanceTypeSpecification.SupportedInstanceTypes":   "supportedInstanceTypeSet",
	"InstanceTypeSpecification.UnsupportedInstanceTypes": "unsupportedInstanceTypeSet",
	"IpPermission.UserIdGroupPairs":                      "groups",
	"Monitoring.MetricCategoryIds":                       "metricCategoryIdSet",
	"NetworkCardInfo.InterfaceTypes":                     "interfaceTypeSet",
	"ProductCode.ProductCodeId":                          "productCode",
	"ProductCode.ProductCodeType":                        "type",
	"Reservation.Groups":                                 "groupSet",
	"Reservation.Instances":                              "instancesSet",
	"SecurityGroup.Description":                          "groupDescription",
	"ValidationWarning.Errors":                           "errorSet",
}

// xmlItemNames are the list fields whose members are not <item> elements.
var xmlItemNames = map[string]string{
	"InferenceAcceleratorInfo.Accelerators": "member",
}

// elementName is the XML element name of field f of struct type t.
func elementName(t reflect.Type, f reflect.StructField) string {
	if n, ok := xmlNames[t.Name()+"."+f.Name]; ok {
		return n
	}
	if f.Name == "Tags" {
		return "tagSet"
	}
	if tag := f.Tag.Get("ec2"); tag != "" {
		return tag
	}
	r, n := utf8.DecodeRuneInString(f.Name)
	return string(unicode.ToLower(r)) + f.Name[n:]
}

// timeFormat is how EC2 writes timestamps (RFC 3339, milliseconds, UTC).
const timeFormat = "2006-01-02T15:04:05.000Z"

var timeType = reflect.TypeFor[time.Time]()

// xmlEncoder writes SDK values as EC2 Query protocol XML.
type xmlEncoder struct {
	buf bytes.Buffer
}

func (e *xmlEncoder) open(name string)  { e.buf.WriteString("<" + name + ">") }
func (e *xmlEncoder) close(name string) { e.buf.WriteString("</" + name + ">") }

func (e *xmlEncoder) text(name, s string) {
	e.open(name)
	_ = xml.EscapeText(&e.buf, []byte(s))
	e.close(name)
}

// fields writes the fields of struct v as child elements.
func (e *xmlEncoder) fields(v reflect.Value) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || f.Name == "ResultMetadata" {
			continue
		}
		item := xmlItemNames[t.Name()+"."+f.Name]
		if item == "" {
			item = "item"
		}
		e.value(elementName(t, f), item, v.Field(i), false)
	}
}

// value writes v as element name (the members of a list as elements item). Nil pointers, nil slices, maps, interfaces and zero scalars
// that are not behind a pointer are left out, as EC2 leaves out absent fields.
func (e *xmlEncoder) value(name, item string, v reflect.Value, set bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		e.value(name, item, v.Elem(), true)
	case reflect.Interface, reflect.Map, reflect.Func, reflect.Chan:
		return
	case reflect.Struct:
		if v.Type() == timeType {
			t := v.Interface().(time.Time)
			if !set && t.IsZero() {
				return
			}
			e.text(name, t.UTC().Format(timeFormat))
			return
		}
		e.open(name)
		e.fields(v)
		e.close(name)
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			e.text(name, base64.StdEncoding.EncodeToString(v.Bytes()))
			return
		}
		e.open(name)
		for i := 0; i < v.Len(); i++ {
			e.value(item, "item", v.Index(i), true)
		}
		e.close(name)
	case reflect.String:
		if !set && v.Len() == 0 {
			return
		}
		e.text(name, v.String())
	case reflect.Bool:
		if !set && !v.Bool() {
			return
		}
		e.text(name, strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !set && v.Int() == 0 {
			return
		}
		e.text(name, strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !set && v.Uint() == 0 {
			return
		}
		e.text(name, strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		if !set && v.Float() == 0 {
			return
		}
		bits := 64
		if v.Kind() == reflect.Float32 {
			bits = 32
		}
		e.text(name, strconv.FormatFloat(v.Float(), 'f', -1, bits))
	}
}

// ec2Namespace is the XML namespace of every EC2 response.
const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// encodeResponse writes the document <{action}Response> for output, a pointer to an SDK output
// struct (or any struct whose fields follow the same rules).
func encodeResponse(action, requestID string, output any) []byte {
	e := &xmlEncoder{}
	e.buf.WriteString(xml.Header)
	e.buf.WriteString("<" + action + "Response xmlns=\"" + ec2Namespace + "\">")
	e.text("requestId", requestID)
	v := reflect.ValueOf(output)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		e.fields(v)
	}
	e.close(action + "Response")
	return e.buf.Bytes()
}

// encodeError writes the EC2 error document.
func encodeError(code, message, requestID string) []byte {
	e := &xmlEncoder{}
	e.buf.WriteString(xml.Header)
	e.buf.WriteString("<Response><Errors><Error>")
	e.text("Code", code)
	e.text("Message", message)
	e.buf.WriteString("</Error></Errors>")
	e.text("RequestID", requestID)
	e.buf.WriteString("</Response>")
	return e.buf.Bytes()
}
