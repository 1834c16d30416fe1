package workspace

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/resourcenamespace"
)

func TestIsWorkspace(t *testing.T) {
	now := metav1.Now()
	tests := map[string]struct {
		ns   corev1.Namespace
		want bool
	}{
		"default is a workspace": {
			ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, want: true,
		},
		"any other namespace is a workspace": {
			ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "support"}}, want: true,
		},
		"kube-system is the cluster's": {
			ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
		},
		"kube-public is the cluster's": {
			ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-public"}},
		},
		"kube-node-lease is the cluster's": {
			ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-node-lease"}},
		},
		"the instance's namespace holds only its Secrets and Vaults": {
			ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "platform-instance"}},
		},
		"a tenant's namespace holds only its Secrets and Vaults": {
			ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "platform-tenant-0123456789abcdef0123456789abcdef"}},
		},
		"a namespace being deleted is no longer an active workspace": {
			ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "support", DeletionTimestamp: &now}},
		},
		"a Pack's resource namespace belongs to a workspace and is none itself": {
			ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "support-contoso-reports-0123456789",
				Labels: map[string]string{resourcenamespace.WorkspaceLabel: "support"}}},
		},
		"a terminating namespace is no longer an active workspace": {
			ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "support"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(IsWorkspace(&tt.ns)).To(Equal(tt.want))
		})
	}
}

func TestBuiltinRuntimeProfile(t *testing.T) {
	g := NewWithT(t)
	p := builtinRuntimeProfile("support")
	g.Expect(p.Name).To(Equal("maf-builtin"))
	g.Expect(p.Namespace).To(Equal("support"))
	g.Expect(p.Annotations).To(HaveKeyWithValue(manifest.BuiltinAnnotation, "true"))
	g.Expect(isBuiltin(p)).To(BeTrue())
	g.Expect(p.Definition.Runtime).To(Equal(platformv1.BuiltinRuntime))
	p.Annotations[manifest.BuiltinAnnotation] = "false"
	g.Expect(isBuiltin(p)).To(BeFalse())
}
