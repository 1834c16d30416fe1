package crds_test

import (
	"context"
	"io/fs"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"sigs.k8s.io/yaml"

	"platform.dev/platform/crds"
)

// TestEmbeddedCRDsPassTheAPIServersValidation runs every embedded CRD through the validation the
// apiextensions-apiserver runs on create, including the CEL cost budget of x-kubernetes-validations,
// so a CRD the server would refuse (and never Establish) fails here in milliseconds, with the
// server's own field paths.
func TestEmbeddedCRDsPassTheAPIServersValidation(t *testing.T) {
	files, err := fs.Glob(crds.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no embedded CRD")
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			data, err := fs.ReadFile(crds.FS, name)
			if err != nil {
				t.Fatal(err)
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(data, crd); err != nil {
				t.Fatal(err)
			}
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
			internal := &apiextensions.CustomResourceDefinition{}
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
				t.Fatal(err)
			}
			for _, e := range apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), internal) {
				t.Error(e)
			}
		})
	}
}
