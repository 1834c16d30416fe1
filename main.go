// Command platform is the whole product in one binary: `serve` runs the control plane and the
// controllers, `controllers` runs only the controllers against an existing cluster, `kubeconfig`
// prints the administrator's kubeconfig, `workplace` serves the Workplace UI, `openapi` prints the
// service API's contract, `registry serve` serves a folder of Pack archives as a Source registry for
// local try-outs, `version` prints the version.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"platform.dev/platform/apiserver"
	"platform.dev/platform/apiserver/packs"
	"platform.dev/platform/controllers"
	"platform.dev/platform/internal/apply"
	"platform.dev/platform/internal/version"
	"platform.dev/platform/test/extension"
	registryserver "platform.dev/platform/test/registry"
	"platform.dev/platform/workplace"
)

func main() {
	root := &cobra.Command{
		Use:           "platform",
		Short:         "A local-first work-delegation platform for AI agents",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(apiserver.NewServeCommand(), controllers.NewCommand(), apiserver.NewKubeconfigCommand(), apply.NewCommand(), workplace.NewCommand(), apiserver.NewOpenAPICommand(), packs.NewCommand(), extension.NewCommand(), registryserver.NewCommand(), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version.Version)
		},
	})
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "platform:", err)
		os.Exit(1)
	}
}
