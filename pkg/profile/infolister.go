package profile

import (
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// infoLister serves the plugins NodeInfos its caller built and keeps, as the scheduler's snapshot
// serves its own. The lists of nodes with affinity pods are made when asked, as the caller may
// add pods between plugin calls.
type infoLister struct {
	infos  []fwk.NodeInfo
	byName map[string]fwk.NodeInfo
}

func newInfoLister(infos []fwk.NodeInfo) *infoLister {
	l := &infoLister{infos: infos, byName: make(map[string]fwk.NodeInfo, len(infos))}
	for _, ni := range infos {
		l.byName[ni.Node().Name] = ni
	}
	return l
}

func (l *infoLister) NodeInfos() framework.NodeInfoLister       { return l }
func (l *infoLister) StorageInfos() framework.StorageInfoLister { return l }

func (l *infoLister) List() ([]fwk.NodeInfo, error) { return l.infos, nil }

func (l *infoLister) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	return l.with(func(ni fwk.NodeInfo) bool { return len(ni.GetPodsWithAffinity()) > 0 }), nil
}

func (l *infoLister) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	return l.with(func(ni fwk.NodeInfo) bool { return len(ni.GetPodsWithRequiredAntiAffinity()) > 0 }), nil
}

func (l *infoLister) with(keep func(fwk.NodeInfo) bool) []fwk.NodeInfo {
	var out []fwk.NodeInfo
	for _, ni := range l.infos {
		if keep(ni) {
			out = append(out, ni)
		}
	}
	return out
}

// Get answers as the scheduler's snapshot does, in its words.
func (l *infoLister) Get(nodeName string) (fwk.NodeInfo, error) {
	if ni, ok := l.byName[nodeName]; ok {
		return ni, nil
	}
	return nil, fmt.Errorf("nodeinfo not found for node name %q", nodeName)
}

// IsPVCUsedByPods says whether a pod on one of the nodes uses the claim ("namespace/name").
func (l *infoLister) IsPVCUsedByPods(key string) bool {
	for _, ni := range l.infos {
		if ni.GetPVCRefCounts()[key] > 0 {
			return true
		}
	}
	return false
}
