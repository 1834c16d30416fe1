// Package packstest builds Pack archives for tests: a manifest and resource manifests zipped
// as a person would, so that install, update and crash tests need no files on disk.
package packstest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// Pack describes an archive to build.
type Pack struct {
	Publisher, Name, Version string
	// Bindings is the YAML of definition.bindings (without the key), optional.
	Bindings string
	// Resources are the contained manifests by archive path.
	Resources map[string]string
}

// Zip is the archive of p, with its files in a stable order.
func (p Pack) Zip() []byte {
	paths := make([]string, 0, len(p.Resources))
	for path := range p.Resources {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	var manifest strings.Builder
	fmt.Fprintf(&manifest, "apiVersion: platform/v1\nkind: Pack\nmetadata:\n  name: %s\n  publisher: %s\n  version: %s\n  displayName: %s\ndefinition:\n",
		p.Name, p.Publisher, p.Version, p.Name)
	if p.Bindings != "" {
		manifest.WriteString("  bindings:\n" + p.Bindings)
	}
	manifest.WriteString("  resources:\n")
	for _, path := range paths {
		fmt.Fprintf(&manifest, "  - %s\n", path)
	}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	write := func(name, content string) {
		f, err := w.Create(name)
		if err != nil {
			panic(err)
		}
		if _, err := f.Write([]byte(content)); err != nil {
			panic(err)
		}
	}
	write("pack.yaml", manifest.String())
	for _, path := range paths {
		write(path, p.Resources[path])
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Agent is the manifest of a chat Agent with instructions.
func Agent(name, instructions string) string {
	return fmt.Sprintf("apiVersion: platform/v1\nkind: Agent\nmetadata:\n  name: %s\ndefinition:\n  displayName: %s\n  handler: chat\n  instructions: %q\n",
		name, name, instructions)
}

// Flow is the manifest of a Direct Flow to agent.
func Flow(name, agent string) string {
	return fmt.Sprintf("apiVersion: platform/v1\nkind: Flow\nmetadata:\n  name: %s\ndefinition:\n  flowKind: Direct\n  displayName: %s\n  version: 1.0.0\n  enabled: true\n  target:\n    kind: Agent\n    id: %s\n",
		name, name, agent)
}

// Entry is the manifest of a Prompt Entry bound to agent.
func Entry(name, agent string) string {
	return fmt.Sprintf("apiVersion: platform/v1\nkind: Entry\nmetadata:\n  name: %s\ndefinition:\n  displayName: %s\n  type: Prompt\n  binding:\n    agent:\n      name: %s\n"+
		"  fields:\n  - name: request\n    label: Request\n    type: MultilineText\n    role: PrimaryInput\n    required: true\n",
		name, name, agent)
}

// Agents is a Pack of n Agents a-000, a-001, ... (the crash tests' and the benchmark's N-resource
// install).
func Agents(publisher, name, version string, n int, instructions string) Pack {
	p := Pack{Publisher: publisher, Name: name, Version: version, Resources: map[string]string{}}
	for i := 0; i < n; i++ {
		a := fmt.Sprintf("a-%03d", i)
		p.Resources["agents/"+a+".yaml"] = Agent(a, instructions)
	}
	return p
}

// Oversized is a manifest of kind/name that the archive format accepts and the kube API refuses
// (its annotations exceed the 256 KiB metadata limit): a step that fails during the install.
func Oversized(kind, name string) string {
	body := map[string]string{
		"Flow": "  flowKind: Direct\n  target:\n    kind: Agent\n    id: greeter\n",
	}[kind]
	return fmt.Sprintf("apiVersion: platform/v1\nkind: %s\nmetadata:\n  name: %s\n  annotations:\n    padding: %q\ndefinition:\n%s",
		kind, name, strings.Repeat("x", 300<<10), body)
}
