package nodeshape

import (
	"maps"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// Tags are the ownership tags of everything Tailor launches for a claim.
func Tags(cluster, pool, claim string) map[string]string {
	return map[string]string{
		v1alpha1.TagClusterPrefix + cluster: v1alpha1.TagOwnedValue,
		v1alpha1.TagEKSCluster:              cluster,
		v1alpha1.TagPool:                    pool,
		v1alpha1.TagClaim:                   claim,
		"Name":                              claim,
	}
}

// TemplateTags go on a pool's launch templates (the provider adds the cluster's): the pool and
// its launch fingerprint, by which the lifecycle controller finds the templates no pool or
// claim uses any more.
func TemplateTags(pool *config.Pool) map[string]string {
	return withPoolTags(pool, map[string]string{v1alpha1.TagPool: pool.Name, v1alpha1.TagPoolHash: pool.LaunchHash()})
}

// InstanceTags go on an instance of the pool's launched for the claim, and its volumes: the
// pool's tags, under Tailor's (Tags), which always win.
func InstanceTags(cluster string, pool *config.Pool, claim string) map[string]string {
	return withPoolTags(pool, Tags(cluster, pool.Name, claim))
}

// withPoolTags is the pool's tags with tailor's over them.
func withPoolTags(pool *config.Pool, tailor map[string]string) map[string]string {
	out := make(map[string]string, len(pool.Tags)+len(tailor))
	maps.Copy(out, pool.Tags)
	maps.Copy(out, tailor)
	return out
}
