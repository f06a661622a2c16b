package provisioning

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// catalogOnly serves a fixed catalog; the limit check asks nothing else of the cloud.
type catalogOnly struct{ cloud.Provider }

func (catalogOnly) InstanceTypes(context.Context) ([]cloud.InstanceType, error) {
	return []cloud.InstanceType{
		{Name: "m5.xlarge", VCPUs: 4, MemoryMiB: 16384},
		{Name: "m5.2xlarge", VCPUs: 8, MemoryMiB: 32768},
	}, nil
}

func (c catalogOnly) InstanceType(ctx context.Context, name string) (cloud.InstanceType, bool, error) {
	its, _ := c.InstanceTypes(ctx)
	for _, it := range its {
		if it.Name == name {
			return it, true, nil
		}
	}
	return cloud.InstanceType{}, false, nil
}

func TestPoolLimitsAdmitUntilFull(t *testing.T) {
	// An unstarted store lists no claims: usage comes only from what admit itself recorded.
	store, err := claims.NewStore(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	l := &Reservations{Options: Options{Cloud: catalogOnly{}, Claims: store}}
	pool := &config.Pool{Name: "p", Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}}
	n := 0
	create := func() (string, error) { n++; return fmt.Sprintf("c%d", n), nil }

	// 8 + 4 + 4 = 16 cpu fit; the next node does not.
	for _, types := range [][]string{{"m5.xlarge", "m5.2xlarge"}, {"m5.xlarge"}, {"m5.xlarge"}} {
		if _, err := l.limits.admit(context.Background(), l, pool, types, create); err != nil {
			t.Fatalf("admit %v: %v", types, err)
		}
	}
	_, err = l.limits.admit(context.Background(), l, pool, []string{"m5.xlarge"}, create)
	var le *LimitError
	if !errors.As(err, &le) || le.Resource != corev1.ResourceCPU {
		t.Fatalf("want a cpu LimitError, got %v", err)
	}
	if n != 3 {
		t.Errorf("created %d claims, want 3", n)
	}
	// A claim deleted right after it was created stops counting at once, not a minute later.
	l.limits.forget("c2")
	if _, err := l.limits.admit(context.Background(), l, pool, []string{"m5.xlarge"}, create); err != nil {
		t.Errorf("after a 4-cpu claim went, admit of 4 cpu: %v", err)
	}

	// A pool without limits admits anything.
	if _, err := l.limits.admit(context.Background(), l, &config.Pool{Name: "free"}, []string{"m5.2xlarge"}, create); err != nil {
		t.Errorf("unlimited pool refused: %v", err)
	}
}

// countingCatalog counts how often the catalog is asked about a type.
type countingCatalog struct {
	catalogOnly
	reads int
}

func (c *countingCatalog) InstanceTypes(context.Context) ([]cloud.InstanceType, error) {
	panic("the limit check copies the whole catalog")
}

func (c *countingCatalog) InstanceType(ctx context.Context, name string) (cloud.InstanceType, bool, error) {
	c.reads++
	return c.catalogOnly.InstanceType(ctx, name)
}

// A type's capacity never changes: the limit check asks the catalog about each type once, not
// for the whole catalog per claim (a burst records its claims concurrently, each holding its
// own copy), and a pool without limits never asks.
func TestPoolLimitsReadTheCatalogOnce(t *testing.T) {
	store, err := claims.NewStore(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	cat := &countingCatalog{}
	l := &Reservations{Options: Options{Cloud: cat, Claims: store}}
	n := 0
	create := func() (string, error) { n++; return fmt.Sprintf("c%d", n), nil }
	free := &config.Pool{Name: "free"}
	for range 3 {
		if _, err := l.limits.admit(context.Background(), l, free, []string{"m5.xlarge"}, create); err != nil {
			t.Fatal(err)
		}
	}
	if cat.reads != 0 {
		t.Errorf("a pool without limits read the catalog %d times", cat.reads)
	}
	limited := &config.Pool{Name: "p", Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}}
	for _, types := range [][]string{{"m5.xlarge"}, {"m5.2xlarge"}, {"m5.xlarge", "m5.2xlarge"}, {"m5.xlarge"}} {
		if _, err := l.limits.admit(context.Background(), l, limited, types, create); err != nil {
			t.Fatal(err)
		}
	}
	if cat.reads != 2 {
		t.Errorf("four claims of two types asked the catalog %d times, want 2", cat.reads)
	}
	// A type the catalog lacks is looked for once, then known to be missing.
	for range 2 {
		if _, err := l.limits.admit(context.Background(), l, limited, []string{"x9.huge"}, create); err != nil {
			t.Fatal(err)
		}
	}
	if cat.reads != 3 {
		t.Errorf("a type missing from the catalog: %d questions in all, want 3", cat.reads)
	}
}

// A pool is closed once none of its types fits what its limits leave; a type that still fits
// keeps it open, and a pool without limits is never closed.
func TestPoolLimitsClosed(t *testing.T) {
	store, err := claims.NewStore(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	l := &Reservations{Options: Options{Cloud: catalogOnly{}, Claims: store}}
	limited := config.Pool{Name: "limited", Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("14")}}
	pools := []config.Pool{limited, {Name: "free"}}
	types := func(string) []string { return []string{"m5.xlarge", "m5.2xlarge"} }
	n := 0
	create := func() (string, error) { n++; return fmt.Sprintf("c%d", n), nil }
	for _, step := range []struct {
		admit   string
		wantWhy string // "": open
	}{
		{"", ""},           // 0 of 14 cpu used
		{"m5.2xlarge", ""}, // 8 used: an m5.xlarge (4) still fits
		{"m5.xlarge", "pool limited is at its cpu limit: 12 in use, a new node needs 4, limit 14"},
	} {
		if step.admit != "" {
			if _, err := l.limits.admit(context.Background(), l, &limited, []string{step.admit}, create); err != nil {
				t.Fatal(err)
			}
		}
		closed, err := l.limits.closed(context.Background(), l, pools, types)
		if err != nil {
			t.Fatal(err)
		}
		if _, free := closed["free"]; free || closed["limited"] != step.wantWhy {
			t.Errorf("after admitting %q: closed %v, want limited %q and free open", step.admit, closed, step.wantWhy)
		}
	}
}
