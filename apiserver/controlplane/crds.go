package controlplane

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// decodeCRDs reads every *.yaml file at the root of fsys as one CustomResourceDefinition.
func decodeCRDs(fsys fs.FS) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, name := range files {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("built-in CRD %s: %w", path.Base(name), err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
			return nil, fmt.Errorf("built-in CRD %s: not a named CustomResourceDefinition", path.Base(name))
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// applyCRDs creates or updates the built-in CRDs (so an upgrade changes them in place) and waits
// until each is Established. Transient failures are retried until ctx ends: a post-start hook
// that fails stops the process, and readiness already reports the wait.
func applyCRDs(ctx context.Context, client apiextensionsclient.Interface, crds []*apiextensionsv1.CustomResourceDefinition) error {
	logger := klog.FromContext(ctx)
	for _, want := range crds {
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			if err := applyCRD(ctx, client, want); err != nil {
				logger.Info("applying built-in CRD failed; retrying", "crd", want.Name, "err", err)
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	for _, want := range crds {
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return crdEstablished(crd), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func applyCRD(ctx context.Context, client apiextensionsclient.Interface, want *apiextensionsv1.CustomResourceDefinition) error {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = crds.Create(ctx, want.DeepCopy(), metav1.CreateOptions{FieldManager: fieldManager})
			return err
		}
		if err != nil {
			return err
		}
		updated := have.DeepCopy()
		updated.Spec = want.Spec
		updated.Labels = mergeMaps(have.Labels, want.Labels)
		updated.Annotations = mergeMaps(have.Annotations, want.Annotations)
		_, err = crds.Update(ctx, updated, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func mergeMaps(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
