package controllers

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"platform.dev/platform/internal/logging"
)

// NewCommand is `platform controllers`: the controller manager alone, against any Kubernetes
// cluster that has the platform's CRDs (config/default installs them with the manager's
// Deployment). `platform serve` runs the same manager in-process.
func NewCommand() *cobra.Command {
	var (
		kubeconfig string
		o          = Options{LeaderElection: true}
		logLevel   logging.Level
	)
	cmd := &cobra.Command{
		Use:   "controllers [--kubeconfig FILE]",
		Short: "Run only the platform's controllers, against an existing Kubernetes cluster",
		Long: "Run the controller manager of the platform against the cluster of --kubeconfig, else of\n" +
			"$KUBECONFIG or ~/.kube/config, else the cluster the process runs in (in-cluster config).\n" +
			"Replicas share the work through a Lease (leader election).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Only the flag: this command reads no settings file.
			logging.Setup(logLevel, cmd.ErrOrStderr())
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			fmt.Fprintf(cmd.OutOrStdout(), "controllers starting against %s\n", cfg.Host)
			// Only SIGTERM or SIGINT ends the command: a lost Lease makes the controllers step down
			// and campaign again.
			return Run(ctx, cfg, o)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
	AddFlags(cmd.Flags(), &o)
	// In a cluster the manager's info logs are what its pod's log is for.
	logging.AddFlag(cmd.Flags(), &logLevel, logging.Info)
	cmd.Flags().BoolVar(&o.LeaderElection, "leader-elect", true, "share the work between replicas through a Lease; turn off only when a single replica runs")
	cmd.Flags().StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", metav1.NamespaceSystem, "namespace of the leader election Lease")
	return cmd
}

// AddFlags adds the flags of the controller manager that `platform serve` shares.
func AddFlags(fs *pflag.FlagSet, o *Options) {
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "0", `host:port of the controllers' Prometheus metrics ("0" serves none)`)
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", DefaultLeaseDuration, "how long the controllers' leader election Lease holds without renewal")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", DefaultRenewDeadline, "how long the Lease holder tries to renew before its controllers step down (and campaign again)")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", DefaultRetryPeriod, "how often the controllers try to acquire or renew the Lease")
}
