package ec2sim

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// testConfig is an SDK configuration that talks to url with static credentials and the given
// number of attempts (1 = no retries), without backoff delays.
func testConfig(url string, attempts int) aws.Config {
	return aws.Config{
		HTTPClient:   plainBodyClient{next: awshttp.NewBuildableClient()},
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		BaseEndpoint: aws.String(url),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		},
	}
}

// newTestSim serves a simulator with instant state changes on an httptest server and returns
// clients for it (EC2 without retries).
func newTestSim(t *testing.T, opts Options) (*Sim, *ec2.Client, *ssm.Client) {
	t.Helper()
	if opts.PendingFor == 0 {
		opts.PendingFor = Immediately
	}
	if opts.ShuttingDownFor == 0 {
		opts.ShuttingDownFor = Immediately
	}
	s := New(opts)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL, 1)
	return s, ec2.NewFromConfig(cfg), ssm.NewFromConfig(cfg)
}

// serveFunc serves a handler function on an httptest server.
func serveFunc(t *testing.T, f http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func ctxBG() context.Context { return context.Background() }

// plainBodyClient hides the request body's WriteTo from net/http, working around a race between
// net/http and smithy-go on fast local endpoints (aws/aws-sdk-go-v2#2737; see the same type in
// pkg/cloud/ec2 for the full story). Without it large responses fail now and then with "use of
// closed network connection".
type plainBodyClient struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
}

func (c plainBodyClient) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r = r.WithContext(r.Context())
		r.Body = plainBody{r.Body}
	}
	return c.next.Do(r)
}

type plainBody struct{ rc io.ReadCloser }

func (b plainBody) Read(p []byte) (int, error) { return b.rc.Read(p) }
func (b plainBody) Close() error               { return b.rc.Close() }
