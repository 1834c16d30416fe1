package registry

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	contract "platform.dev/platform/internal/registry"
)

// NewCommand is `platform registry`, whose `serve` serves a folder of Pack archives as a
// registry v1 over HTTPS with its own CA, for local try-outs.
func NewCommand() *cobra.Command {
	root := &cobra.Command{Use: "registry", Short: "Serve a folder of Pack archives as a Source registry (for local try-outs)"}
	var dir, addr, caFile, pkiDir string
	var statuses map[string]string
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the *.zip Pack archives of --dir as a registry v1 over HTTPS on --addr",
		Long: `Serve the *.zip Pack archives of a folder (publisher, name and version read from each
pack.yaml) as a registry v1 (docs/registry-v1.md) over HTTPS, with a certificate from its own CA,
written to --ca-file so the platform can trust it (Platform:Sources:Registries:Transport:CaBundleFile).
Adding or changing an archive publishes a new serial at the next index request.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if info, err := os.Stat(dir); err != nil || !info.IsDir() {
				return fmt.Errorf("--dir %q is not a folder", dir)
			}
			if pkiDir == "" {
				// Next to the CA file, so a restart keeps the CA the platform already trusts.
				pkiDir = filepath.Join(filepath.Dir(caFile), ".platform-registry-pki")
			}
			s, err := New(pkiDir)
			if err != nil {
				return err
			}
			for publisher, status := range statuses {
				switch st := contract.PublisherStatus(status); st {
				case contract.Declared, contract.Verified, contract.Official, contract.Revoked:
					if err := s.SetPublisherStatus(publisher, st); err != nil {
						return err
					}
				default:
					return fmt.Errorf("--status %s=%s: must be Declared, Verified, Official or Revoked", publisher, status)
				}
			}
			if err := s.ServeDir(dir, cmd.ErrOrStderr()); err != nil {
				return err
			}
			ca, err := os.ReadFile(s.CAFile())
			if err != nil {
				return err
			}
			if err := os.WriteFile(caFile, ca, 0o644); err != nil {
				return fmt.Errorf("--ca-file: %w", err)
			}
			if err := s.Start(addr); err != nil {
				return err
			}
			defer s.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "registry of %s (serial %d) at %s\nits CA certificate: %s\n", dir, s.Serial(), s.IndexURL(), caFile)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return s.srv.Shutdown(shutdown)
		},
	}
	serve.Flags().StringVar(&dir, "dir", "", "folder of *.zip Pack archives")
	serve.Flags().StringVar(&addr, "addr", "127.0.0.1:8444", "address to listen on")
	serve.Flags().StringVar(&caFile, "ca-file", "", "where to write the registry's CA certificate (PEM)")
	serve.Flags().StringVar(&pkiDir, "pki-dir", "", "where the CA and serving keys are kept (default: .platform-registry-pki next to --ca-file)")
	serve.Flags().StringToStringVar(&statuses, "status", nil, "publisher=status asserted in its shard (Declared by default; Verified, Official, Revoked)")
	_ = serve.MarkFlagRequired("dir")
	_ = serve.MarkFlagRequired("ca-file")
	root.AddCommand(serve)
	return root
}
