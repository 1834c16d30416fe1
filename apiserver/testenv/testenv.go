// Package testenv boots the whole control plane in-process, on free ports in a temporary
// directory, for tests. Its Config can be handed to envtest.Environment with
// UseExistingCluster, so controller suites written for envtest run against it unchanged; with
// PLATFORM_TEST_KUBECONFIG set they run against that cluster (a real kube-apiserver) instead.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"platform.dev/platform/apiserver/controlplane"
	"platform.dev/platform/crds"
)

// ExistingClusterEnv names a kubeconfig file; when set, Start uses that cluster and boots nothing.
const ExistingClusterEnv = "PLATFORM_TEST_KUBECONFIG"

// Env is a running control plane and clients for it.
type Env struct {
	// Config reaches the API as its administrator over TLS, as kubectl does. The administrator is
	// not the platform: the platform's admission rules apply to it.
	Config *rest.Config
	// Platform is the control plane's loopback identity, which the platform's controllers and its
	// own writes (published Flow versions and Entries, system-managed Flows) use. It is Config
	// for an existing cluster.
	Platform *rest.Config
	// ServiceAPI is the identity the service API writes with on its callers' behalf (see
	// controlplane.ServiceAPIUser). It is Config for an existing cluster.
	ServiceAPI *rest.Config
	// Kubeconfig is the path of a kubeconfig file for Config (for kubectl).
	Kubeconfig string
	// Dir is the data directory (etcd data, certificates); empty for an existing cluster.
	Dir string

	Kube          kubernetes.Interface
	Dynamic       dynamic.Interface
	APIExtensions apiextensionsclient.Interface

	server  *controlplane.Server
	ownsDir bool
}

// Options adjust the control plane a test starts.
type Options struct {
	// Dir is the data directory; a fresh temporary one when empty. Reusing a directory across
	// two Starts is how tests restart a server over its data.
	Dir string
	// EtcdServers selects an external etcd instead of the embedded one.
	EtcdServers []string
	// Tune, when set, changes the control plane options before start (extra authenticators...).
	Tune func(*controlplane.Options)
}

// Start boots a control plane (or connects to PLATFORM_TEST_KUBECONFIG's cluster).
func Start(ctx context.Context, opts Options) (*Env, error) {
	if path := os.Getenv(ExistingClusterEnv); path != "" {
		return existing(path)
	}
	env := &Env{Dir: opts.Dir}
	if env.Dir == "" {
		dir, err := os.MkdirTemp("", "platform-testenv-")
		if err != nil {
			return nil, err
		}
		env.Dir, env.ownsDir = dir, true
	}
	cpOptions := controlplane.Options{
		DataDir:     env.Dir,
		KubeAddr:    "127.0.0.1:0",
		EtcdServers: opts.EtcdServers,
		CRDs:        crds.FS,
	}
	if opts.Tune != nil {
		opts.Tune(&cpOptions)
	}
	server, err := controlplane.Start(ctx, cpOptions)
	if err != nil {
		env.removeDir()
		return nil, err
	}
	env.server = server
	if env.Kubeconfig, err = server.RecordAddress(env.Dir); err != nil {
		env.Stop()
		return nil, err
	}
	env.Config = rest.CopyConfig(server.AdminConfig)
	env.Platform = rest.CopyConfig(server.LoopbackConfig)
	env.ServiceAPI = rest.CopyConfig(server.ServiceAPIConfig)
	if err := env.clients(); err != nil {
		env.Stop()
		return nil, err
	}
	return env, nil
}

func existing(path string) (*Env, error) {
	config, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", ExistingClusterEnv, path, err)
	}
	env := &Env{Config: config, Platform: config, ServiceAPI: config, Kubeconfig: path}
	return env, env.clients()
}

func (e *Env) clients() (err error) {
	if e.Kube, err = kubernetes.NewForConfig(e.Config); err != nil {
		return err
	}
	if e.Dynamic, err = dynamic.NewForConfig(e.Config); err != nil {
		return err
	}
	e.APIExtensions, err = apiextensionsclient.NewForConfig(e.Config)
	return err
}

// Server is the in-process control plane, nil for an existing cluster.
func (e *Env) Server() *controlplane.Server { return e.server }

// Stop shuts the control plane down and removes a temporary data directory.
func (e *Env) Stop() error {
	var err error
	if e.server != nil {
		err = e.server.Stop()
	}
	e.removeDir()
	return err
}

// StopKeepData shuts the control plane down and keeps its data directory for a restart.
func (e *Env) StopKeepData() error {
	if e.server == nil {
		return errors.New("no in-process control plane to stop")
	}
	return e.server.Stop()
}

func (e *Env) removeDir() {
	if e.ownsDir && e.Dir != "" && filepath.Base(e.Dir) != "/" {
		os.RemoveAll(e.Dir)
	}
}
