package ledger

import (
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestLedger(t *testing.T) {
	l := New()
	l.Add("c1", "", []types.UID{"a", "b"})
	l.SetNodeName("c1", "ip-10-0-0-1.ec2.internal")
	if r, ok := l.Lookup("a"); !ok || r.Claim != "c1" || r.NodeName != "ip-10-0-0-1.ec2.internal" {
		t.Fatalf("Lookup(a) = %+v, %v", r, ok)
	}

	// Reserve takes the pod off the claim; Unreserve puts it back.
	l.Consume("a")
	if _, ok := l.Lookup("a"); ok {
		t.Fatal("consumed pod still reserved")
	}
	if got := l.Pods("c1"); len(got) != 1 || got[0] != "b" {
		t.Fatalf("Pods(c1) = %v, want [b]", got)
	}
	l.Unconsume("a")
	if r, ok := l.Lookup("a"); !ok || r.Claim != "c1" {
		t.Fatalf("Unconsume did not restore: %+v %v", r, ok)
	}
	l.Unconsume("a") // idempotent
	if got := l.Pods("c1"); len(got) != 2 {
		t.Fatalf("Pods(c1) = %v after double Unconsume", got)
	}

	// A re-plan moves a pod between claims.
	l.Add("c2", "", []types.UID{"b"})
	if r, _ := l.Lookup("b"); r.Claim != "c2" {
		t.Fatalf("b on %s, want c2", r.Claim)
	}

	// Dropping a claim releases its pods, and a later Unconsume does not resurrect it.
	l.Consume("a")
	dropped := l.DropClaim("c1")
	if len(dropped) != 0 {
		t.Fatalf("DropClaim(c1) = %v, want none waiting", dropped)
	}
	l.Unconsume("a")
	if _, ok := l.Lookup("a"); ok {
		t.Fatal("pod restored onto a dropped claim")
	}
	got := l.DropClaim("c2")
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	if len(got) != 1 || got[0] != "b" {
		t.Fatalf("DropClaim(c2) = %v", got)
	}
	if len(l.Claims()) != 0 {
		t.Fatalf("claims left: %v", l.Claims())
	}
}
