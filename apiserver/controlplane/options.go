package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"

	"platform.dev/platform/apiserver/native"
)

// DefaultKubeAddr is where kubectl finds the embedded API unless told otherwise.
const DefaultKubeAddr = "127.0.0.1:6443"

// Options are what a caller chooses about the control plane; Validate checks them before anything
// is started, so bad input fails with one clear message and nothing half-started.
type Options struct {
	// DataDir holds etcd's data (unless EtcdServers is set) and the certificates.
	DataDir string
	// KubeAddr is host:port of the TLS listener; port 0 picks a free port.
	KubeAddr string
	// EtcdServers, when set, replaces the embedded etcd with an external cluster.
	EtcdServers []string
	// EtcdPrefix is the key prefix of every object; it lets several control planes share one
	// external etcd cluster.
	EtcdPrefix string
	// CRDs holds the CustomResourceDefinition manifests applied at every start.
	CRDs fs.FS
	// Authenticators are consulted after client certificates; Authorizers after the
	// administrator group. The identity plane plugs its PAT/JWT authenticator and workspace
	// authorizer in here. An authenticator returns an error for a credential it recognizes but
	// rejects (a revoked token), so that the caller gets 401 instead of being anonymous.
	Authenticators []authenticator.Request
	Authorizers    []authorizer.Authorizer
	// Admission plugins run after the namespace lifecycle, for every request; the platform's
	// rules about Management objects are enforced here, once for every client.
	Admission []admission.Interface
	// Limit wraps the handler of authenticated, authorized requests, and Prelimit the whole
	// handler chain, before authentication (the rate limits; see kubeauth.Limits); nil: none.
	Limit, Prelimit func(http.Handler) http.Handler
	// MaxConnections caps the kube API's open connections (see package listener); unlimited
	// when zero.
	MaxConnections int
	// NamespaceVisibility narrows namespace lists and watches to what the caller may see
	// (optional: everyone authorized to list sees every namespace).
	NamespaceVisibility native.NamespaceVisibility
	// PostStart are run, by name, once the kube API serves, with the loopback configuration and a
	// context that ends when the server stops: what a plugged-in authorizer reads from the API
	// itself (a namespace informer) starts there. The server is ready once they have returned.
	PostStart map[string]func(ctx context.Context, loopback *rest.Config) error
	// APIGroups install further groups served beside the native ones, in the same discovery and
	// OpenAPI document (the Work plane's work.platform.dev).
	APIGroups []func(*genericapiserver.GenericAPIServer) error

	// crds are the decoded CRDs, filled by Validate.
	crds []*apiextensionsv1.CustomResourceDefinition
}

// Validate checks the options and decodes the CRD manifests.
func (o *Options) Validate() error {
	if o.DataDir == "" {
		return errors.New("--data-dir is required")
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("--data-dir %q: %w", o.DataDir, err)
	}
	o.DataDir = abs
	if o.KubeAddr == "" {
		o.KubeAddr = DefaultKubeAddr
	}
	if _, _, err := o.kubeHostPort(); err != nil {
		return err
	}
	for _, s := range o.EtcdServers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "unix") || (u.Scheme != "unix" && u.Host == "") {
			return fmt.Errorf("--etcd-servers: %q is not an etcd client URL such as http://127.0.0.1:2379", s)
		}
	}
	if o.EtcdPrefix == "" {
		o.EtcdPrefix = "/registry"
	}
	if !strings.HasPrefix(o.EtcdPrefix, "/") {
		return fmt.Errorf("etcd prefix %q must start with /", o.EtcdPrefix)
	}
	if o.CRDs != nil {
		if o.crds, err = decodeCRDs(o.CRDs); err != nil {
			return err
		}
	}
	return nil
}

func (o *Options) kubeHostPort() (string, int, error) {
	host, portText, err := net.SplitHostPort(o.KubeAddr)
	if err != nil {
		return "", 0, fmt.Errorf("--kube-addr %q: %w", o.KubeAddr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("--kube-addr %q: invalid port", o.KubeAddr)
	}
	if host != "" && net.ParseIP(host) == nil && host != "localhost" {
		return "", 0, fmt.Errorf("--kube-addr %q: host must be an IP address or localhost", o.KubeAddr)
	}
	return host, port, nil
}

func (o *Options) etcdDir() string { return filepath.Join(o.DataDir, "etcd") }
func (o *Options) pkiDir() string  { return filepath.Join(o.DataDir, "pki") }

// MakeDataDir creates the data directory when it is missing and makes it, and everything in it,
// private to the user: it holds the store, keys and credentials. A data directory that an older
// release left readable by others is narrowed at start.
func (o *Options) MakeDataDir() error {
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory %s: %w", o.DataDir, errors.Unwrap(err))
	}
	err := filepath.WalkDir(o.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // a link's own mode means nothing; its target is not ours to change
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if mode := info.Mode().Perm(); mode&0o077 != 0 {
			return os.Chmod(path, mode&^0o077)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("data directory %s: %w", o.DataDir, err)
	}
	return nil
}
