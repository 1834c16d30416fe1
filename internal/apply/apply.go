// Package apply implements `platform apply`: manifests in either spelling, server-side applied
// through the kube API with one field manager, all or nothing per file.
package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"platform.dev/platform/apis/platform/manifest"
)

// FieldManager owns the fields `platform apply` sets, as kubectl's owns what it applies.
const FieldManager = "platform-apply"

// Options of one apply run.
type Options struct {
	Paths     []string
	Namespace string
	Dynamic   dynamic.Interface
	Mapper    meta.RESTMapper
	Out, Err  io.Writer
	// Workers apply documents of a file concurrently; results print in document order.
	Workers int
}

// Document is one manifest of a file.
type Document struct {
	File   string
	Index  int // 0-based position among the file's documents
	Object *unstructured.Unstructured
	// resolved before any write
	resource   schema.GroupVersionResource
	namespaced bool
}

func (d *Document) String() string {
	return fmt.Sprintf("%s/%s", strings.ToLower(d.Object.GetKind()), d.Object.GetName())
}

// Result of applying one document.
type Result string

const (
	Created    Result = "created"
	Configured Result = "configured"
	Unchanged  Result = "unchanged"
)

// FileError names the file, the document and the field path of what is wrong with it.
type FileError struct {
	File  string
	Index int
	Err   error
}

func (e *FileError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s: document %d: %v", e.File, e.Index, e.Err)
}

// Run applies every file; a file with a bad document is skipped whole and reported, the others
// are applied. It returns an error when any file failed.
func Run(ctx context.Context, o Options) error {
	files, err := manifestFiles(o.Paths)
	if err != nil {
		return err
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	total := 0
	type parsed struct {
		docs []*Document
		err  error
	}
	all := make([]parsed, len(files))
	for i, file := range files {
		docs, err := readFile(file)
		if err == nil {
			err = o.resolve(docs)
		}
		all[i] = parsed{docs, err}
		total += len(docs)
	}
	progress := newProgress(o.Err, total)
	var failed []error
	for i, file := range files {
		if all[i].err != nil {
			failed = append(failed, all[i].err)
			fmt.Fprintf(o.Err, "error: %v\n", all[i].err)
			continue
		}
		// A dry run of every document first: the server's own validation (schema, CEL,
		// admission) refuses a bad document before anything of the file is written.
		if err := o.each(ctx, all[i].docs, func(d *Document) (Result, error) { return o.apply(ctx, d, true) }, nil); err != nil {
			failed = append(failed, err)
			fmt.Fprintf(o.Err, "error: %v (nothing from %s was applied)\n", err, file)
			continue
		}
		if err := o.each(ctx, all[i].docs, func(d *Document) (Result, error) { return o.apply(ctx, d, false) }, func(d *Document, r Result) {
			fmt.Fprintf(o.Out, "%s %s\n", d, r)
			progress.done()
		}); err != nil {
			failed = append(failed, err)
			fmt.Fprintf(o.Err, "error: %v\n", err)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d files failed", len(failed), len(files))
	}
	return nil
}

func (o Options) each(ctx context.Context, docs []*Document, fn func(*Document) (Result, error), report func(*Document, Result)) error {
	results := make([]Result, len(docs))
	errs := make([]error, len(docs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(o.Workers, len(docs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i], errs[i] = fn(docs[i])
			}
		}()
	}
	for i := range docs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for i, d := range docs {
		if errs[i] != nil {
			return &FileError{File: d.File, Index: d.Index, Err: describe(d, errs[i])}
		}
		if report != nil {
			report(d, results[i])
		}
	}
	return ctx.Err()
}

func (o Options) apply(ctx context.Context, d *Document, dryRun bool) (Result, error) {
	var client dynamic.ResourceInterface = o.Dynamic.Resource(d.resource)
	if d.namespaced {
		client = o.Dynamic.Resource(d.resource).Namespace(d.Object.GetNamespace())
	}
	before := ""
	if !dryRun {
		existing, err := client.Get(ctx, d.Object.GetName(), metav1.GetOptions{})
		switch {
		case err == nil:
			before = existing.GetResourceVersion()
		case !apierrors.IsNotFound(err):
			return "", err
		}
	}
	data, err := d.Object.MarshalJSON()
	if err != nil {
		return "", err
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager, FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
		// A field of the wrong type fails a server-side apply inside the apiserver, which answers
		// 500 and logs an unhandled error; a create validates the same document first and names
		// the field. An object that exists already passes that check.
		_, err := client.Create(ctx, d.Object, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager,
			FieldValidation: "Strict"})
		if apierrors.IsInvalid(err) {
			return "", err
		}
	}
	applied, err := client.Patch(ctx, d.Object.GetName(), types.ApplyPatchType, data, opts)
	if err != nil {
		return "", err
	}
	switch {
	case before == "":
		return Created, nil
	case applied.GetResourceVersion() == before:
		return Unchanged, nil
	}
	return Configured, nil
}

// resolve normalizes each document and finds its resource, refusing the file on the first
// problem so that nothing from it is applied.
func (o Options) resolve(docs []*Document) error {
	for _, d := range docs {
		errs := manifest.Normalize(d.Object.Object)
		if d.Object.GetKind() == "" {
			errs = append(errs, field.Required(field.NewPath("kind"), ""))
		}
		if d.Object.GetName() == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "name"), ""))
		}
		if len(errs) > 0 {
			return &FileError{File: d.File, Index: d.Index, Err: errs.ToAggregate()}
		}
		gvk := d.Object.GroupVersionKind()
		mapping, err := o.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return &FileError{File: d.File, Index: d.Index, Err: field.Invalid(field.NewPath("kind"), gvk.Kind, fmt.Sprintf("the server has no kind %s in %s", gvk.Kind, gvk.GroupVersion()))}
		}
		d.resource = mapping.Resource
		d.namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
		if d.namespaced {
			switch ns := d.Object.GetNamespace(); {
			case o.Namespace != "" && ns != "" && ns != o.Namespace:
				return &FileError{File: d.File, Index: d.Index, Err: field.Invalid(field.NewPath("metadata", "namespace"), ns,
					fmt.Sprintf("differs from the workspace %q given with -n", o.Namespace))}
			case ns == "" && o.Namespace != "":
				d.Object.SetNamespace(o.Namespace)
			case ns == "":
				d.Object.SetNamespace(metav1.NamespaceDefault)
			}
		}
	}
	return nil
}

// describe keeps the server's field paths: an Invalid error lists each cause with its field.
func describe(d *Document, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0 {
		var parts []string
		for _, c := range status.Status().Details.Causes {
			if c.Field != "" {
				parts = append(parts, fmt.Sprintf("%s: %s", c.Field, c.Message))
			} else {
				parts = append(parts, c.Message)
			}
		}
		return fmt.Errorf("%s: %s", d, strings.Join(parts, "; "))
	}
	return fmt.Errorf("%s: %w", d, err)
}

func manifestFiles(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("-f is required: a manifest file or a folder of them")
	}
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, entry fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !entry.IsDir() && isManifest(path) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}

func isManifest(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readFile splits a file into its documents; a document that does not parse refuses the file.
func readFile(file string) ([]*Document, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &FileError{File: file, Index: -1, Err: err}
	}
	reader := utilyaml.NewYAMLReader(bufioReader(data))
	var docs []*Document
	for index := 0; ; index++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, &FileError{File: file, Index: index, Err: err}
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			index--
			continue
		}
		obj := map[string]any{}
		if err := utilyaml.Unmarshal(raw, &obj); err != nil {
			return nil, &FileError{File: file, Index: index, Err: err}
		}
		docs = append(docs, &Document{File: file, Index: index, Object: &unstructured.Unstructured{Object: obj}})
	}
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
