package controllers_test

import (
	"bytes"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/apply"
)

var _ = Describe("The samples", func() {
	It("apply into default and every Agent, ModelProfile, ModelProvider, Flow and RuntimeProfile becomes Ready", func() {
		var out, errOut bytes.Buffer
		err := apply.Run(ctx, apply.Options{
			// The folder's Kustomization file has no manifest extension and is skipped.
			Paths:     []string{filepath.Join("..", "config", "samples")},
			Namespace: metav1.NamespaceDefault,
			Dynamic:   platform.Dynamic,
			Mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(platform.Kube.Discovery())),
			Out:       &out, Err: &errOut,
		})
		Expect(err).NotTo(HaveOccurred(), "%s", errOut.String())
		GinkgoWriter.Print(out.String())

		inDefault := client.InNamespace(metav1.NamespaceDefault)
		lists := map[string]client.ObjectList{
			"agents":           &platformv1.AgentList{},
			"model profiles":   &platformv1.ModelProfileList{},
			"model providers":  &platformv1.ModelProviderList{},
			"flows":            &platformv1.FlowList{},
			"runtime profiles": &platformv1.RuntimeProfileList{},
		}
		for what, list := range lists {
			Expect(k8sClient.List(ctx, list, inDefault)).To(Succeed())
			items := objects(list)
			Expect(items).NotTo(BeEmpty(), "the samples have %s", what)
			for _, obj := range items {
				expectReady(obj, metav1.ConditionTrue, platformv1.ResolvedReason)
			}
		}
		agent := &platformv1.Agent{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "support-triage"}, agent)).To(Succeed())
		Expect(agent.Status.ResolvedModel).To(Equal(&platformv1.ResolvedModel{
			ModelProfile: "default", Provider: "openai", ProviderType: platformv1.OpenAICompatibleProvider, Model: "gpt-4.1-mini",
		}))
		profile := &platformv1.ModelProfile{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "default"}, profile)).To(Succeed())
		Expect(profile.Status.Model).To(Equal(&platformv1.LocalObjectReference{Name: "openai-gpt-4.1-mini"}))
	})
})

// objects are the items of a list, as pointers into it.
func objects(list client.ObjectList) []client.Object {
	GinkgoHelper()
	items, err := meta.ExtractList(list)
	Expect(err).NotTo(HaveOccurred())
	objs := make([]client.Object, 0, len(items))
	for _, item := range items {
		objs = append(objs, item.(client.Object))
	}
	return objs
}
