// Package apiserver holds the `platform serve` and `platform kubeconfig` commands; the planes
// they start live in the sub-packages.
package apiserver

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"platform.dev/platform/apiserver/controlplane"
	"platform.dev/platform/crds"
)

// NewServeCommand runs the platform until SIGTERM or SIGINT.
func NewServeCommand() *cobra.Command {
	var (
		opts        controlplane.Options
		etcdServers string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the platform: embedded etcd, the kube API and the controllers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if etcdServers != "" {
				opts.EtcdServers = strings.Split(etcdServers, ",")
			}
			opts.CRDs = crds.FS
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return serve(ctx, cmd, opts)
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", ".data", "directory for etcd data, certificates and the admin kubeconfig")
	cmd.Flags().StringVar(&opts.KubeAddr, "kube-addr", controlplane.DefaultKubeAddr, "host:port of the kube API (TLS)")
	cmd.Flags().StringVar(&etcdServers, "etcd-servers", "", "comma-separated client URLs of an external etcd cluster instead of the embedded one")
	return cmd
}

func serve(ctx context.Context, cmd *cobra.Command, opts controlplane.Options) error {
	server, err := controlplane.Start(ctx, opts)
	if err != nil {
		return err
	}
	kubeconfig, err := server.RecordAddress(opts.DataDir)
	if err != nil {
		server.Stop()
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "kube API ready at https://%s\n", server.Address)
	fmt.Fprintf(out, "kubeconfig: export KUBECONFIG=%s   (or: platform kubeconfig --data-dir %s > kubeconfig)\n", kubeconfig, opts.DataDir)

	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "shutting down")
	case <-server.Done():
	}
	return server.Stop()
}

// NewKubeconfigCommand prints the administrator's kubeconfig.
func NewKubeconfigCommand() *cobra.Command {
	var dataDir, server string
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print a kubeconfig for the embedded kube API (CA, server, administrator credential)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := controlplane.Kubeconfig(dataDir, server)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", ".data", "data directory of `platform serve`")
	cmd.Flags().StringVar(&server, "server", "", "server URL to put in the kubeconfig (default: the address `platform serve` listens on)")
	return cmd
}
