// Package demo holds the demo Entries the first workspace receives at bootstrap (the spec's
// `prepare-report`, `quick-answer` and `guided-request`), with the agents, flow and offline model
// they run on, embedded in the binary. They run with no API key: their agents use the built-in
// Deterministic model provider.
package demo

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"k8s.io/client-go/util/retry"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/manifest"
	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/workspace"
)

//go:embed manifests/*.yaml
var manifests embed.FS

// FieldOwner is the field manager of what Seed writes.
const FieldOwner = "platform-demo"

// Entries are the demo Entries, with the role each has on the home Dashboard.
var Entries = []platformv1.DashboardEntryReference{
	{Namespace: platformv1.DefaultResourceNamespace, Name: "prepare-report", Role: platformv1.PrimaryDashboardRole},
	{Namespace: platformv1.DefaultResourceNamespace, Name: "quick-answer", Role: platformv1.FeaturedDashboardRole},
	{Namespace: platformv1.DefaultResourceNamespace, Name: "guided-request", Role: platformv1.StandardDashboardRole, Order: 1},
}

// Objects are the demo's resources, decoded, in the order they are created: what is referred to
// before what refers to it.
func Objects() ([]client.Object, error) {
	names, err := fs.Glob(manifests, "manifests/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	// The model is created first: the agents refer to it.
	sort.SliceStable(names, func(i, j int) bool { return names[i] == "manifests/model.yaml" })
	decoder := serializer.NewCodecFactory(platformscheme.Scheme).UniversalDeserializer()
	var out []client.Object
	for _, name := range names {
		data, err := manifests.ReadFile(name)
		if err != nil {
			return nil, err
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out = append(out, obj.(client.Object))
		}
	}
	return out, nil
}

// Seed creates the demo in the workspace namespace ns and places its Entries on the home
// Dashboard (prepare-report as the Primary one). Each object carries the built-in annotation;
// one that exists already is left as it is. It runs once, at bootstrap: what a person deletes
// later is not re-created.
func Seed(ctx context.Context, c client.Client, ns string) error {
	objects, err := Objects()
	if err != nil {
		return err
	}
	for _, obj := range objects {
		obj.SetNamespace(ns)
		obj.SetAnnotations(map[string]string{manifest.BuiltinAnnotation: "true"})
		if err := c.Create(ctx, obj, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("demo %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	// The workspace controller creates and updates the same home meanwhile: a write that meets
	// its change reads the home again and tries once more.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		home := &platformv1.Dashboard{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: workspace.HomeDashboard}, home)
		switch {
		case apierrors.IsNotFound(err):
			home = workspace.NewHomeDashboard(ns)
			home.Definition.Entries = Entries
			err := c.Create(ctx, home, client.FieldOwner(FieldOwner))
			if !apierrors.IsAlreadyExists(err) {
				return err
			}
			// Created empty meanwhile: read it again and place the Entries on it.
			return apierrors.NewConflict(platformv1.GroupVersion.WithResource("dashboards").GroupResource(), home.Name, err)
		case err != nil:
			return err
		}
		if len(home.Definition.Entries) > 0 {
			return nil
		}
		home.Definition.Entries = Entries
		return c.Update(ctx, home, client.FieldOwner(FieldOwner))
	})
}
