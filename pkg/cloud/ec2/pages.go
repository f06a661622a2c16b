package ec2

import "context"

// eachPage walks a paginated API as the SDK's paginators do with StopOnDuplicateToken: page is
// called with each page's token, the first page's nil, until a page has no next token or repeats
// the one it was asked with (the SDK's default would then ask for the same page again until the
// context ends).
//
// The SDK's paginators take the client as an interface. kube-scheduler's dependencies call
// methods through reflection, which makes the linker keep every exported method of any type
// converted to an interface; one paginator thus linked all ~830 EC2 operations into the binary
// (about 40 MB, and most of the text stays resident once the kernel maps it in huge pages).
// page calls the client's methods directly, so only the operations Tailor uses are linked.
func eachPage(ctx context.Context, page func(ctx context.Context, token *string) (next *string, err error)) error {
	var token *string
	for {
		next, err := page(ctx, token)
		if err != nil {
			return err
		}
		if next == nil || *next == "" || (token != nil && *next == *token) {
			return nil
		}
		token = next
	}
}
