package apply

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"platform.dev/platform/apiserver/controlplane"
)

// NewCommand is `platform apply`.
func NewCommand() *cobra.Command {
	var (
		paths                      []string
		namespace, server, dataDir string
		kubeconfig                 string
	)
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR [-n WORKSPACE]",
		Short: "Apply manifests (platform/v1 or platform.dev/v1) with server-side apply; idempotent",
		Long: "Apply every manifest of the files and folders given with -f. Each document is checked by the\n" +
			"server first; a file with a bad document is reported with its document index and field path,\n" +
			"and nothing from it is applied. Prints kind/name created, configured or unchanged.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			config, err := restConfig(kubeconfig, dataDir, server)
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(config)
			if err != nil {
				return err
			}
			disco, err := discovery.NewDiscoveryClientForConfig(config)
			if err != nil {
				return err
			}
			return Run(cmd.Context(), Options{
				Paths: paths, Namespace: namespace, Dynamic: dyn,
				Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)),
				Out:    cmd.OutOrStdout(), Err: cmd.ErrOrStderr(),
			})
		},
	}
	cmd.Flags().StringArrayVarP(&paths, "filename", "f", nil, "manifest file or folder (repeatable)")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "workspace to apply into (default: the manifest's, else default)")
	cmd.Flags().StringVar(&server, "server", "", "URL of the kube API (default: where `platform serve` of --data-dir listens)")
	cmd.Flags().StringVar(&dataDir, "data-dir", ".data", "data directory of `platform serve`, for its administrator credential")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig to use instead of the data directory's credential")
	return cmd
}

func restConfig(kubeconfig, dataDir, server string) (*rest.Config, error) {
	var config *rest.Config
	if kubeconfig != "" {
		loaded, err := clientcmd.BuildConfigFromFlags(server, kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		config = loaded
	} else {
		data, err := controlplane.Kubeconfig(dataDir, server)
		if err != nil {
			return nil, err
		}
		if config, err = clientcmd.RESTConfigFromKubeConfig(data); err != nil {
			return nil, err
		}
	}
	// The server is local; the run is bounded by the manifests, not by a client-side limit.
	config.QPS, config.Burst = -1, -1
	return config, nil
}
