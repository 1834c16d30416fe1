// Package scheme is the runtime scheme of the platform's clients: the built-in kinds that
// controllers use plus every platform.dev kind.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Scheme knows client-go's built-in kinds and platform.dev/v1.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(platformv1.AddToScheme(Scheme))
}
