package workplace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	connlimit "platform.dev/platform/apiserver/listener"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/logging"
	"platform.dev/platform/internal/readiness"
)

// Settings of the host, under Platform:Workplace in the YAML file or the environment
// (Platform__Workplace__ApiBaseUrl, ...); flags win.
const (
	settingAddress        = "Platform:Workplace:Address"
	settingAPIBaseURL     = "Platform:Workplace:ApiBaseUrl"
	settingHubURL         = "Platform:Workplace:HubUrl"
	settingAuthentication = "Platform:Workplace:Authentication"
)

// NewCommand is `platform workplace`: the Workplace UI host.
func NewCommand() *cobra.Command {
	var (
		addr, apiBase, hubURL, auth, configFile string
		logLevel                                logging.Level
	)
	cmd := &cobra.Command{
		Use:   "workplace",
		Short: "Serve the Workplace UI (default 127.0.0.1:5180), relaying its API and hub calls to the platform's API",
		Long: "Serves the Workplace app. Its only knowledge of the server is the API base URL and the hub URL (by default " +
			HubPath + " under the API base URL). With --authentication session (the local topology) the browser signs in " +
			"on the server and the relay forwards only the session cookie chunks and the workspace-selection cookie, to the " +
			"exact API origin, never following redirects; with --authentication bearer (an independently deployed Workplace) " +
			"the app sends a bearer token and no cookie is relayed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(configFile, os.Environ())
			if err != nil {
				return err
			}
			if logLevel, err = logging.Resolve(cmd.Flags(), logLevel, cfg); err != nil {
				return err
			}
			logging.Setup(logLevel, cmd.ErrOrStderr())
			pick := func(flag, key, value string) string {
				if cmd.Flags().Changed(flag) {
					return value
				}
				return cfg.GetOr(key, value)
			}
			opts := Options{
				APIBaseURL:     pick("api-base-url", settingAPIBaseURL, apiBase),
				HubURL:         pick("hub-url", settingHubURL, hubURL),
				Authentication: pick("authentication", settingAuthentication, auth),
				Log:            log.New(cmd.ErrOrStderr(), "workplace: ", log.LstdFlags),
				Diagnostics:    cfg.Environment() == config.Development,
			}
			host, err := New(opts)
			if err != nil {
				return err
			}
			listener, err := net.Listen("tcp", pick("addr", settingAddress, addr))
			if err != nil {
				return fmt.Errorf("workplace: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			served := make(chan error, 1)
			go func() { served <- Serve(ctx, host.Handler(), listener) }()
			// The ready line is a promise that the Workplace works: it waits for this host and for
			// the API it relays to.
			announceCtx, stopAnnouncing := context.WithCancel(ctx)
			announced := make(chan struct{})
			go func() {
				defer close(announced)
				line := fmt.Sprintf("Workplace ready at http://%s (API %s, hub %s, %s authentication)\n",
					listener.Addr(), host.APIBaseURL(), host.HubURL(), opts.Authentication)
				if readiness.Wait(announceCtx, readiness.Default, func(err error) {
					opts.Log.Printf("%v (the ready line follows once it answers)", err)
				}, "http://"+listener.Addr().String()+"/config.json", host.api.JoinPath("readyz").String()) == nil {
					_, _ = io.WriteString(cmd.OutOrStdout(), line)
				}
			}()
			err = <-served
			stopAnnouncing()
			<-announced
			return err
		},
	}
	cmd.Flags().StringVar(&addr, "addr", DefaultAddr, "host:port to listen on ("+settingAddress+")")
	cmd.Flags().StringVar(&apiBase, "api-base-url", DefaultAPIBaseURL, "the platform's API base URL ("+settingAPIBaseURL+")")
	cmd.Flags().StringVar(&hubURL, "hub-url", "", "the real-time hub's URL; default "+HubPath+" under the API base URL ("+settingHubURL+")")
	cmd.Flags().StringVar(&auth, "authentication", AuthSession, "session (relay the session cookie, local topology) or bearer (independent deployment) ("+settingAuthentication+")")
	cmd.Flags().StringVar(&configFile, "config", "", "YAML file of settings (Platform:Workplace:...); environment variables such as Platform__Workplace__ApiBaseUrl override it")
	logging.AddFlag(cmd.Flags(), &logLevel, logging.Warn)
	return cmd
}

// Serve answers on listener until ctx ends, then drains requests for up to 5 s. The host is
// bounded as the service API is: at most connlimit.HostConnections connections open (the
// quietest closed to make room), headers within 10 s, a keep-alive connection closed after a
// minute without a request.
func Serve(ctx context.Context, handler http.Handler, listener net.Listener) error {
	server := connlimit.Server(handler)
	done := make(chan error, 1)
	go func() { done <- server.Serve(connlimit.Bound(listener, connlimit.HostConnections())) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
