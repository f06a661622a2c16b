package ec2

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestEachPage(t *testing.T) {
	broken := errors.New("broken")
	for _, tt := range []struct {
		name string
		// next is each page's next token, in order ("-" for nil); the page after the last fails.
		next    []string
		failAt  int // the page that fails (0: none)
		asked   []string
		wantErr error
	}{
		{name: "one page", next: []string{"-"}, asked: []string{"-"}},
		{name: "three pages", next: []string{"a", "b", "-"}, asked: []string{"-", "a", "b"}},
		{name: "an empty token ends", next: []string{"a", ""}, asked: []string{"-", "a"}},
		{name: "a repeated token ends", next: []string{"a", "a"}, asked: []string{"-", "a"}},
		{name: "an error ends", next: []string{"a", "b"}, failAt: 2, asked: []string{"-", "a"}, wantErr: broken},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			err := eachPage(context.Background(), func(_ context.Context, token *string) (*string, error) {
				if token == nil {
					asked = append(asked, "-")
				} else {
					asked = append(asked, *token)
				}
				if len(asked) == tt.failAt {
					return nil, broken
				}
				if len(asked) > len(tt.next) {
					t.Fatalf("asked for page %d of %d", len(asked), len(tt.next))
				}
				if n := tt.next[len(asked)-1]; n != "-" {
					return aws.String(n), nil
				}
				return nil, nil
			})
			if !errors.Is(err, tt.wantErr) || !slices.Equal(asked, tt.asked) {
				t.Errorf("asked %v, error %v; want %v, %v", asked, err, tt.asked, tt.wantErr)
			}
		})
	}
}
