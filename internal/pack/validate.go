package pack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemacel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/flow"
	"platform.dev/platform/crds"
	"platform.dev/platform/internal/publication"
)

// kindSchema is what the kube API server checks of a kind on create: the CRD's structural
// schema (unknown fields, types, enums, patterns, bounds) and its CEL rules. Checking the same
// here refuses an invalid resource at preview, with its field path, before anything is applied.
type kindSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *schemacel.Validator
}

var (
	schemasOnce sync.Once
	schemas     map[string]*kindSchema
	schemasErr  error
)

func kindSchemas() (map[string]*kindSchema, error) {
	schemasOnce.Do(func() {
		schemas, schemasErr = loadSchemas()
	})
	return schemas, schemasErr
}

func loadSchemas() (map[string]*kindSchema, error) {
	out := map[string]*kindSchema{}
	entries, err := fs.ReadDir(crds.FS, ".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, err := fs.ReadFile(crds.FS, e.Name())
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if !packKinds[crd.Spec.Names.Kind] {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != platformv1.GroupVersion.Version || v.Schema == nil {
				continue
			}
			var internal apiextensionsinternal.CustomResourceValidation
			if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, &internal, nil); err != nil {
				return nil, err
			}
			s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", crd.Spec.Names.Kind, err)
			}
			validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", crd.Spec.Names.Kind, err)
			}
			out[crd.Spec.Names.Kind] = &kindSchema{structural: s, validator: validator, cel: schemacel.NewValidator(s, true, celconfig.PerCallLimit)}
		}
	}
	for k := range packKinds {
		if out[k] == nil {
			return nil, fmt.Errorf("no CRD schema for %s", k)
		}
	}
	return out, nil
}

func invalid(path string, errs field.ErrorList) *Error {
	// The first error in field order, so the same archive always names the same field.
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	e := errs[0]
	detail := e.ErrorBody()
	if len(errs) > 1 {
		detail += fmt.Sprintf(" (and %d more)", len(errs)-1)
	}
	return &Error{Reason: ReasonInvalidResource, Path: path, Field: e.Field, Detail: detail}
}

// allowedMetadata are the metadata fields a contained resource may carry; the rest are written
// by the server or (namespace) decided by the install.
var allowedMetadata = map[string]bool{"name": true, "labels": true, "annotations": true}

// parseResource decodes, normalizes and validates one contained manifest.
func parseResource(path string, b []byte, declared map[string]BindingDeclaration) (*Resource, error) {
	if n := documents(b); n != 1 {
		return nil, &Error{Reason: ReasonInvalidResource, Path: path, Detail: fmt.Sprintf("a resource file holds exactly one manifest, not %d", n)}
	}
	obj, err := decodeYAML(b)
	if err != nil || obj == nil {
		detail := "not a YAML object"
		if err != nil {
			detail = yamlDetail(err)
		}
		return nil, &Error{Reason: ReasonInvalidResource, Path: path, Detail: detail}
	}
	if errs := manifest.Normalize(obj); len(errs) > 0 {
		return nil, invalid(path, errs)
	}
	kind, _ := obj["kind"].(string)
	if !packKinds[kind] {
		return nil, &Error{Reason: ReasonUnsupportedKind, Path: path, Field: "kind", Detail: fmt.Sprintf("%q cannot be in a Pack; it may contain ModelProvider, RuntimeProfile, ModelProfile, Agent, Flow and Entry", kind)}
	}
	for k := range obj {
		switch k {
		case "apiVersion", "kind", "metadata", "definition":
		case "status":
			return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: "status", Detail: "status is written by the platform, not by a Pack"}
		default:
			return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: k, Detail: "unknown field"}
		}
	}
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: "metadata.name", Detail: "required"}
	}
	if _, set := md["namespace"]; set {
		return nil, &Error{Reason: ReasonNamespaceSet, Path: path, Field: "metadata.namespace", Detail: "a Pack's resources carry no namespace; the install places them in the Pack's namespace"}
	}
	keys := sortedKeys(md)
	for _, k := range keys {
		if !allowedMetadata[k] {
			return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: "metadata." + k, Detail: "a Pack's resource carries only metadata.name, labels (tags) and annotations"}
		}
	}
	name, _ := md["name"].(string)
	if name == "" {
		return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: "metadata.name", Detail: "required"}
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: "metadata.name", Detail: msgs[0]}
	}
	for _, f := range []string{"labels", "annotations"} {
		if v, has := md[f]; has {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: "metadata." + f, Detail: "must be a map of strings"}
			}
			for _, k := range sortedKeys(m) {
				if _, ok := m[k].(string); !ok {
					return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: "metadata." + f + "." + k, Detail: "must be a string"}
				}
				if strings.HasPrefix(k, platformPrefix) {
					return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: "metadata." + f + "." + k, Detail: "platform/ " + f + " are written by the platform, not by a Pack"}
				}
				errs := validation.IsQualifiedName(k)
				if f == "labels" {
					if v := validation.IsValidLabelValue(m[k].(string)); len(v) > 0 {
						errs = append(errs, v...)
					}
				}
				if len(errs) > 0 {
					return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: "metadata." + f + "." + k, Detail: errs[0]}
				}
			}
		}
	}
	def, ok := obj["definition"].(map[string]any)
	if !ok {
		return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: "definition", Detail: "required: every contained resource has a typed definition"}
	}

	r := &Resource{Path: path, Kind: platformv1.PackResourceKind(kind), Name: name, Object: obj}
	// The copy that is validated has each binding reference replaced by a placeholder name, as
	// the rendered object will carry one.
	check := runtime.DeepCopyJSON(obj)
	checkDef := check["definition"].(map[string]any)
	for _, site := range bindingSites[kind] {
		ref, ok := checkDef[site.field].(map[string]any)
		if !ok {
			continue
		}
		bname, has := ref["binding"]
		if !has {
			continue
		}
		fieldPath := "definition." + site.field
		s, ok := bname.(string)
		if !ok || s == "" || len(ref) != 1 {
			return nil, &Error{Reason: ReasonInvalidResource, Path: path, Field: fieldPath, Detail: "a binding reference is exactly { binding: <name> }"}
		}
		decl, known := declared[s]
		if !known {
			return nil, &Error{Reason: ReasonUnknownBinding, Path: path, Field: fieldPath + ".binding", Detail: fmt.Sprintf("binding %q is not declared in pack.yaml definition.bindings", s)}
		}
		if decl.TargetKind != site.target {
			return nil, &Error{Reason: ReasonUnknownBinding, Path: path, Field: fieldPath + ".binding", Detail: fmt.Sprintf("binding %q is a %s binding; this field needs a %s binding", s, decl.TargetKind, site.target)}
		}
		if !containsString(r.Bindings, s) {
			r.Bindings = append(r.Bindings, s)
		}
		checkDef[site.field] = map[string]any{"name": "binding-placeholder"}
	}
	sort.Strings(r.Bindings)

	if err := validateObject(path, kind, check); err != nil {
		return nil, err
	}
	r.References = references(kind, def)
	return r, nil
}

// bindingSite is a field of a kind's definition that may hold `{ binding: <name> }`.
type bindingSite struct {
	field  string
	target BindingTargetKind
}

// bindingSites: an Agent's modelProfile refers to a ModelProfile; the only Secret reference a
// Pack kind has is a ModelProvider's credential.
var bindingSites = map[string][]bindingSite{
	"Agent":         {{"modelProfile", ModelProfileBinding}},
	"ModelProvider": {{"credential", SecretBinding}},
}

// validateObject runs the checks the kube API server and the kind's controller run, in that
// order: unknown fields, schema, CEL rules, typed decode, then the kind's own rules.
func validateObject(path, kind string, obj map[string]any) *Error {
	all, err := kindSchemas()
	if err != nil {
		return &Error{Reason: ReasonInvalidResource, Path: path, Detail: "schemas unavailable: " + err.Error()}
	}
	ks := all[kind]
	pruned := runtime.DeepCopyJSON(obj)
	opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}
	if unknown := pruning.PruneWithOptions(pruned, ks.structural, true, opts); len(unknown) > 0 {
		sort.Strings(unknown)
		return &Error{Reason: ReasonInvalidResource, Path: path, Field: unknown[0], Detail: "unknown field"}
	}
	defaulted := runtime.DeepCopyJSON(obj)
	defaulting.Default(defaulted, ks.structural)
	if errs := apiservervalidation.ValidateCustomResource(nil, defaulted, ks.validator); len(errs) > 0 {
		return invalid(path, errs)
	}
	if ks.cel != nil {
		errs, _ := ks.cel.Validate(context.Background(), nil, ks.structural, defaulted, nil, celconfig.RuntimeCELCostBudget)
		if len(errs) > 0 {
			return invalid(path, errs)
		}
	}
	var errs field.ErrorList
	defPath := field.NewPath("definition")
	switch kind {
	case "Flow":
		var f platformv1.Flow
		if e := strictDecode(path, defaulted, &f); e != nil {
			return e
		}
		errs = flow.ValidateDefinition(&f.Definition, defPath)
	case "Entry":
		var e platformv1.Entry
		if err := strictDecode(path, defaulted, &e); err != nil {
			return err
		}
		errs = publication.ValidateDraft(&e.Definition, defPath)
	case "Agent":
		return strictDecode(path, defaulted, &platformv1.Agent{})
	case "ModelProvider":
		return strictDecode(path, defaulted, &platformv1.ModelProvider{})
	case "ModelProfile":
		return strictDecode(path, defaulted, &platformv1.ModelProfile{})
	case "RuntimeProfile":
		return strictDecode(path, defaulted, &platformv1.RuntimeProfile{})
	}
	if len(errs) > 0 {
		return invalid(path, errs)
	}
	return nil
}

// strictDecode decodes into the kind's Go type, refusing unknown fields.
func strictDecode(path string, obj map[string]any, into any) *Error {
	b, err := json.Marshal(obj)
	if err != nil {
		return &Error{Reason: ReasonInvalidResource, Path: path, Detail: err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return &Error{Reason: ReasonInvalidResource, Path: path, Detail: err.Error()}
	}
	return nil
}

// documents counts the YAML documents of a file (comments and empty documents aside).
func documents(b []byte) int {
	n := 0
	for _, doc := range splitDocuments(b) {
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil || v != nil {
			n++
		}
	}
	return n
}

func splitDocuments(b []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		trimmed := bytes.TrimRight(line, " \t\r\n")
		if bytes.Equal(trimmed, []byte("---")) || bytes.HasPrefix(line, []byte("--- ")) {
			docs = append(docs, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	return append(docs, cur)
}

// references lists what a definition refers to by name (binding references aside).
func references(kind string, def map[string]any) []Reference {
	var refs []Reference
	add := func(k, name, ns, f string) {
		if name != "" {
			refs = append(refs, Reference{Kind: k, Name: name, Namespace: ns, Field: f})
		}
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	obj := func(m map[string]any, k string) map[string]any { o, _ := m[k].(map[string]any); return o }
	switch kind {
	case "ModelProvider":
		if c := obj(def, "credential"); c != nil && str(c, "scopeRef") == "" {
			add("Secret", str(c, "name"), str(c, "namespace"), "definition.credential")
		}
	case "ModelProfile":
		if p := obj(def, "provider"); p != nil {
			add("ModelProvider", str(p, "name"), "", "definition.provider.name")
		}
	case "Agent":
		if p := obj(def, "modelProfile"); p != nil {
			add("ModelProfile", str(p, "name"), "", "definition.modelProfile.name")
		}
	case "Flow":
		if t := obj(def, "target"); t != nil && str(t, "kind") == string(platformv1.AgentFlowTarget) {
			add("Agent", str(t, "id"), "", "definition.target.id")
		}
		steps, _ := def["steps"].([]any)
		for i, s := range steps {
			if sm, ok := s.(map[string]any); ok {
				if a := obj(sm, "agent"); a != nil {
					add("Agent", str(a, "name"), "", fmt.Sprintf("definition.steps[%d].agent.name", i))
				}
			}
		}
	case "Entry":
		if b := obj(def, "binding"); b != nil {
			if a := obj(b, "agent"); a != nil {
				add("Agent", str(a, "name"), "", "definition.binding.agent.name")
			}
			if f := obj(b, "flow"); f != nil {
				add("Flow", str(f, "name"), str(f, "namespace"), "definition.binding.flow.name")
			}
		}
	}
	return refs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
