package ec2

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// httpDoer is the SDK's HTTP client interface.
type httpDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// plainBodyClient works around a race between net/http and smithy-go (aws/aws-sdk-go-v2#2737):
// smithy-go closes the request body as soon as the response headers arrive, and its body
// wrapper's WriteTo then returns io.EOF as an error. When the response comes back before the
// transport's write loop has made its final "is the body really over?" copy (which uses WriteTo),
// the write loop sees that error and closes the connection under the response still being read:
// "deserialization failed … use of closed network connection". Against real EC2 the round trip
// hides the race; against a local endpoint (ec2sim) it fails large responses often. Hiding
// WriteTo makes the final copy use Read, which reports a plain end of body.
type plainBodyClient struct {
	next httpDoer
}

func (c plainBodyClient) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r = r.WithContext(r.Context()) // shallow copy
		r.Body = plainBody{r.Body}
	}
	return c.next.Do(r)
}

// plainBody exposes only Read and Close of a request body.
type plainBody struct {
	rc io.ReadCloser
}

func (b plainBody) Read(p []byte) (int, error) { return b.rc.Read(p) }
func (b plainBody) Close() error               { return b.rc.Close() }

func withPlainBodiesEC2(o *ec2.Options) {
	if o.HTTPClient != nil {
		o.HTTPClient = plainBodyClient{next: o.HTTPClient}
	}
}

func withPlainBodiesSSM(o *ssm.Options) {
	if o.HTTPClient != nil {
		o.HTTPClient = plainBodyClient{next: o.HTTPClient}
	}
}

func withPlainBodiesPricing(o *pricing.Options) {
	if o.HTTPClient != nil {
		o.HTTPClient = plainBodyClient{next: o.HTTPClient}
	}
}

// PlainBodies wraps an SDK HTTP client in the plainBodyClient work-around, for Tailor's AWS
// clients built outside this package (SQS); nil stays nil, so the SDK picks its default.
func PlainBodies(c aws.HTTPClient) aws.HTTPClient {
	if c == nil {
		return nil
	}
	return plainBodyClient{next: c}
}
