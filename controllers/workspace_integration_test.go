package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

var _ = Describe("Workspace", func() {
	It("receives the maf-builtin RuntimeProfile, recreated when deleted, annotation restored", func() {
		namespace := newWorkspace()
		key := client.ObjectKey{Namespace: namespace, Name: platformv1.BuiltinRuntimeProfileName}
		profile := &platformv1.RuntimeProfile{}
		Eventually(func() error { return k8sClient.Get(ctx, key, profile) }).Should(Succeed())
		Expect(profile.Annotations).To(HaveKeyWithValue(manifest.BuiltinAnnotation, "true"))
		Expect(profile.Definition.Runtime).To(Equal(platformv1.BuiltinRuntime))
		expectReady(profile, metav1.ConditionTrue, platformv1.ResolvedReason)

		By("deleting it: it comes back")
		firstUID := profile.UID
		Expect(k8sClient.Delete(ctx, profile)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, profile)).To(Succeed())
			g.Expect(profile.UID).NotTo(Equal(firstUID))
		}).Should(Succeed())
		Expect(profile.Annotations).To(HaveKeyWithValue(manifest.BuiltinAnnotation, "true"))

		By("editing it: the definition stays, the annotation is restored")
		update(profile, func() {
			profile.Definition.TimeoutSeconds = ptr.To(int32(120))
			delete(profile.Annotations, manifest.BuiltinAnnotation)
		})
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, profile)).To(Succeed())
			g.Expect(profile.Annotations).To(HaveKeyWithValue(manifest.BuiltinAnnotation, "true"))
		}).Should(Succeed())
		Expect(profile.Definition.TimeoutSeconds).To(HaveValue(BeEquivalentTo(120)))
	})

	It("does not give the cluster's own namespaces a RuntimeProfile", func() {
		Consistently(func(g Gomega) {
			profiles := &platformv1.RuntimeProfileList{}
			g.Expect(k8sClient.List(ctx, profiles, client.InNamespace(metav1.NamespaceSystem))).To(Succeed())
			g.Expect(profiles.Items).To(BeEmpty())
		}).WithTimeout(500 * time.Millisecond).Should(Succeed())
	})
})
