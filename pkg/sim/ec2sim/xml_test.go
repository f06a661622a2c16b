package ec2sim

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// fill sets every field reachable from v to a non-zero value (one element per slice).
func fill(v reflect.Value, depth int) {
	if depth > 20 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Date(2026, 2, 3, 4, 5, 6, 789e6, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Name == "ResultMetadata" {
				continue
			}
			fill(v.Field(i), depth+1)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("blob"))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.String:
		v.SetString("v-" + v.Type().Name() + "&<x>")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	}
}

func filled[T any]() *T {
	out := new(T)
	fill(reflect.ValueOf(out), 0)
	return out
}

// TestXMLRoundTrip encodes fully populated SDK outputs with the simulator's encoder and decodes
// them with the real SDK: any field whose element name the encoder gets wrong comes back empty.
func TestXMLRoundTrip(t *testing.T) {
	tests := []struct {
		action string
		want   any
		call   func(c *ec2.Client) (any, error)
	}{
		{"DescribeInstanceTypes", filled[ec2.DescribeInstanceTypesOutput](), func(c *ec2.Client) (any, error) {
			return c.DescribeInstanceTypes(ctxBG(), &ec2.DescribeInstanceTypesInput{})
		}},
		{"DescribeInstanceTypeOfferings", filled[ec2.DescribeInstanceTypeOfferingsOutput](), func(c *ec2.Client) (any, error) {
			return c.DescribeInstanceTypeOfferings(ctxBG(), &ec2.DescribeInstanceTypeOfferingsInput{})
		}},
		{"DescribeSubnets", filled[ec2.DescribeSubnetsOutput](), func(c *ec2.Client) (any, error) {
			return c.DescribeSubnets(ctxBG(), &ec2.DescribeSubnetsInput{})
		}},
		{"DescribeSecurityGroups", filled[ec2.DescribeSecurityGroupsOutput](), func(c *ec2.Client) (any, error) {
			return c.DescribeSecurityGroups(ctxBG(), &ec2.DescribeSecurityGroupsInput{})
		}},
		{"DescribeImages", filled[ec2.DescribeImagesOutput](), func(c *ec2.Client) (any, error) {
			return c.DescribeImages(ctxBG(), &ec2.DescribeImagesInput{})
		}},
		{"DescribeSpotPriceHistory", filled[ec2.DescribeSpotPriceHistoryOutput](), func(c *ec2.Client) (any, error) {
			return c.DescribeSpotPriceHistory(ctxBG(), &ec2.DescribeSpotPriceHistoryInput{})
		}},
		{"DescribeCapacityReservations", filled[ec2.DescribeCapacityReservationsOutput](), func(c *ec2.Client) (any, error) {
			return c.DescribeCapacityReservations(ctxBG(), &ec2.DescribeCapacityReservationsInput{})
		}},
		{"CreateLaunchTemplate", filled[ec2.CreateLaunchTemplateOutput](), func(c *ec2.Client) (any, error) {
			return c.CreateLaunchTemplate(ctxBG(), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("x"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{}})
		}},
		{"DescribeLaunchTemplates", filled[ec2.DescribeLaunchTemplatesOutput](), func(c *ec2.Client) (any, error) {
			return c.DescribeLaunchTemplates(ctxBG(), &ec2.DescribeLaunchTemplatesInput{})
		}},
		{"DeleteLaunchTemplate", filled[ec2.DeleteLaunchTemplateOutput](), func(c *ec2.Client) (any, error) {
			return c.DeleteLaunchTemplate(ctxBG(), &ec2.DeleteLaunchTemplateInput{})
		}},
		{"CreateFleet", filled[ec2.CreateFleetOutput](), func(c *ec2.Client) (any, error) {
			return c.CreateFleet(ctxBG(), &ec2.CreateFleetInput{LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{}}, TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1)}})
		}},
		{"DescribeInstances", filled[ec2.DescribeInstancesOutput](), func(c *ec2.Client) (any, error) {
			return c.DescribeInstances(ctxBG(), &ec2.DescribeInstancesInput{})
		}},
		{"TerminateInstances", filled[ec2.TerminateInstancesOutput](), func(c *ec2.Client) (any, error) {
			return c.TerminateInstances(ctxBG(), &ec2.TerminateInstancesInput{InstanceIds: []string{"i-1"}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			url := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				if got := r.Form.Get("Action"); got != tt.action {
					t.Errorf("Action = %q", got)
				}
				w.Header().Set("Content-Type", "text/xml")
				_, _ = w.Write(encodeResponse(tt.action, "req-1", tt.want))
			})
			c := ec2.NewFromConfig(testConfig(url, 1))
			got, err := tt.call(c)
			if err != nil {
				t.Fatal(err)
			}
			reflect.ValueOf(got).Elem().FieldByName("ResultMetadata").SetZero()
			wantJSON, _ := json.MarshalIndent(tt.want, "", " ")
			gotJSON, _ := json.MarshalIndent(got, "", " ")
			if string(wantJSON) != string(gotJSON) {
				t.Errorf("round trip lost data:\n%s", lineDiff(string(wantJSON), string(gotJSON)))
			}
		})
	}
}

func TestCreateTagsResponse(t *testing.T) {
	body := string(encodeResponse("CreateTags", "r", &createTagsResult{Return: aws.Bool(true)}))
	if !strings.Contains(body, "<CreateTagsResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>r</requestId><return>true</return></CreateTagsResponse>") {
		t.Errorf("body = %s", body)
	}
}

func TestEncodeError(t *testing.T) {
	got := string(encodeError("InvalidAction", "a <b> & c", "rid"))
	want := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<Response><Errors><Error><Code>InvalidAction</Code><Message>a &lt;b&gt; &amp; c</Message></Error></Errors><RequestID>rid</RequestID></Response>`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// lineDiff shows the lines of a that differ from b (a small aid for failures).
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, "want: "+x, " got: "+y)
			if len(out) > 20 {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
