// +kubebuilder:object:generate=true
// +groupName=platform.dev

package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every Management kind.
	GroupVersion = schema.GroupVersion{Group: "platform.dev", Version: "v1"}

	// SchemeBuilder registers the Go types of this group version with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
