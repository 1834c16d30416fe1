package controlplane

import (
	"sort"
	"sync"

	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// crdGroupLister adds the groups of established CRDs to the unaggregated /apis list.
//
// Why no aggregator: kube-apiserver merges its delegates' discovery with kube-aggregator, which
// proxies to APIServices and needs Services and Endpoints we do not serve. Here the native
// groups are installed into the apiextensions server itself (one GenericAPIServer, one handler
// chain), so /api, /apis/<group>, aggregated discovery and /openapi/v2|v3 are already complete;
// the one gap is the legacy /apis group list, which kube-apiserver fills from CRD-backed
// APIServices. This controller fills it from the CRDs directly.
type crdGroupLister struct {
	groups   discovery.GroupManager
	informer apiextensionsinformers.CustomResourceDefinitionInformer

	mu    sync.Mutex
	added sets.Set[string]
}

func newCRDGroupLister(groups discovery.GroupManager, informer apiextensionsinformers.CustomResourceDefinitionInformer) (*crdGroupLister, error) {
	l := &crdGroupLister{groups: groups, informer: informer, added: sets.New[string]()}
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { l.sync() },
		UpdateFunc: func(any, any) { l.sync() },
		DeleteFunc: func(any) { l.sync() },
	})
	return l, err
}

func (l *crdGroupLister) sync() {
	crds, err := l.informer.Lister().List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "listing CRDs for discovery")
		return
	}
	versionsByGroup := map[string]sets.Set[string]{}
	for _, crd := range crds {
		if !crdEstablished(crd) {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			if versionsByGroup[crd.Spec.Group] == nil {
				versionsByGroup[crd.Spec.Group] = sets.New[string]()
			}
			versionsByGroup[crd.Spec.Group].Insert(v.Name)
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	for group, versions := range versionsByGroup {
		l.groups.AddGroup(apiGroup(group, versions))
		l.added.Insert(group)
	}
	for group := range l.added {
		if _, ok := versionsByGroup[group]; !ok {
			l.groups.RemoveGroup(group)
			l.added.Delete(group)
		}
	}
}

// apiGroup orders versions as kube does: GA before beta before alpha, newest first.
func apiGroup(group string, versions sets.Set[string]) metav1.APIGroup {
	ordered := sets.List(versions)
	sort.Slice(ordered, func(i, j int) bool {
		return version.CompareKubeAwareVersionStrings(ordered[i], ordered[j]) > 0
	})
	g := metav1.APIGroup{Name: group}
	for _, v := range ordered {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}
