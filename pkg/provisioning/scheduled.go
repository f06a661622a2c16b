package provisioning

import "k8s.io/apimachinery/pkg/types"

// What the scheduler and the cluster do to pods waiting on claims, as the plugin and the pod
// informer report it. Provisioning alone changes the ledger: these are its changes from outside.

// Reserved takes the pod off the claim it waits on: the scheduler reserved a node for it.
func (p *Provisioner) Reserved(pod types.UID) { p.Ledger.Consume(pod) }

// Unreserved puts the pod back on its claim: its binding failed.
func (p *Provisioner) Unreserved(pod types.UID) { p.Ledger.Unconsume(pod) }

// Forget drops the pod from the claim it waits on: it was deleted, or the claim's node is up
// and refused it (others took the room), and it is planned again.
func (p *Provisioner) Forget(pod types.UID) {
	p.Ledger.Forget(pod)
	p.gangs.forget(pod)
}
