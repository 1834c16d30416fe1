package extension

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"platform.dev/platform/apiserver/tools/aep"
)

// NewCommand is `platform extension-example`, hidden: it serves the example at --addr until
// interrupted.
func NewCommand() *cobra.Command {
	var addr, tokenFile string
	cmd := &cobra.Command{
		Use:    "extension-example",
		Short:  "Serve the example extension (weather) of the extension protocol",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := Options{}
			if tokenFile != "" {
				// The file is read on every request, so a rotated token takes effect at once.
				opts.Token = func() string {
					b, err := os.ReadFile(tokenFile)
					if err != nil {
						return "\x00unreadable"
					}
					return strings.TrimSpace(string(b))
				}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			srv := &http.Server{Handler: New(opts), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
			fmt.Fprintf(cmd.OutOrStdout(), "extension weather-example (protocol %s) at http://%s%s\n", aep.Version, ln.Addr(), aep.DiscoveryPath)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(shutdown)
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:5190", "address to listen at")
	cmd.Flags().StringVar(&tokenFile, "bearer-token-file", "", "a file holding the Bearer token every request must carry (read on every request)")
	return cmd
}
