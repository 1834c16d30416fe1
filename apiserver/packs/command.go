package packs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"platform.dev/platform/internal/pack"
)

// NewCommand is `platform pack`: local work with Pack archives.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "pack", Short: "Work with Pack archives"}
	var out string
	build := &cobra.Command{
		Use:   "build <dir>",
		Short: "Build a Pack archive (ZIP) from a folder with pack.yaml at its root",
		Long: "Reads pack.yaml, the optional README.md and every resource it lists, writes them into a deterministic " +
			"archive (the same folder gives the same bytes) and validates it as an install would.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := Build(args[0])
			if err != nil {
				return err
			}
			if out == "" {
				return errors.New("--output (-o) is required")
			}
			if err := os.WriteFile(out, data, 0o644); err != nil {
				return err
			}
			a, err := pack.Read(data, filepath.Base(out))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s (%d resources, %d bytes)\n", a.Manifest.Namespace(), a.Manifest.Metadata.Version, a.Digest, len(a.Resources), len(data))
			return nil
		},
	}
	build.Flags().StringVarP(&out, "output", "o", "", "the archive file to write")
	cmd.AddCommand(build)
	return cmd
}

// Build is the archive of the Pack source folder dir, validated.
func Build(dir string) ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(dir, pack.ManifestFile))
	if err != nil {
		return nil, err
	}
	var m pack.Manifest
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", pack.ManifestFile, err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	files := make([]pack.File, 0, len(m.Definition.Resources))
	for _, p := range m.Definition.Resources {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(b, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		files = append(files, pack.File{Path: p, Object: obj})
	}
	data, err := pack.Write(m, string(readme), files)
	if err != nil {
		return nil, err
	}
	if _, err := pack.Read(data, ""); err != nil {
		return nil, err
	}
	return data, nil
}
