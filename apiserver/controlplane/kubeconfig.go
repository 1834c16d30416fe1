package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"platform.dev/platform/apiserver/pki"
)

const (
	addressFile    = "kube-api.address"
	kubeconfigFile = "admin.kubeconfig"
	contextName    = "platform"
)

// Kubeconfig renders a self-contained kubeconfig (CA, server, administrator certificate) for
// the control plane whose data is in dataDir. server overrides the address the server recorded.
func Kubeconfig(dataDir, server string) ([]byte, error) {
	files := pki.Files{Dir: filepath.Join(dataDir, "pki")}
	if server == "" {
		addr, err := os.ReadFile(filepath.Join(dataDir, addressFile))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no control plane yet: run `platform serve --data-dir %s` first", dataDir, dataDir)
		}
		if err != nil {
			return nil, err
		}
		server = "https://" + strings.TrimSpace(string(addr))
	}
	read := func(path string) ([]byte, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Base(path), err)
		}
		return data, nil
	}
	ca, err := read(files.CACert())
	if err != nil {
		return nil, err
	}
	cert, err := read(files.AdminCert())
	if err != nil {
		return nil, err
	}
	key, err := read(files.AdminKey())
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[pki.AdminUser] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: pki.AdminUser, Namespace: "default"}
	cfg.CurrentContext = contextName
	return clientcmd.Write(*cfg)
}

// RecordAddress writes the listening address and a ready-to-use kubeconfig into the data
// directory, so `platform kubeconfig` and KUBECONFIG=<data-dir>/admin.kubeconfig find the server.
func (s *Server) RecordAddress(dataDir string) (kubeconfigPath string, err error) {
	if err := os.WriteFile(filepath.Join(dataDir, addressFile), []byte(s.Address+"\n"), 0o644); err != nil {
		return "", err
	}
	data, err := Kubeconfig(dataDir, "")
	if err != nil {
		return "", err
	}
	kubeconfigPath = filepath.Join(dataDir, kubeconfigFile)
	return kubeconfigPath, mergeKubeconfig(kubeconfigPath, data)
}

// mergeKubeconfig writes the platform's cluster, administrator and context into the kubeconfig
// at path and keeps everything else a user added there (`kubectl config set-credentials`,
// set-context, use-context): only the platform's own entries are replaced at each start.
func mergeKubeconfig(path string, platform []byte) error {
	ours, err := clientcmd.Load(platform)
	if err != nil {
		return err
	}
	existing, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(existing.Clusters)+len(existing.AuthInfos)+len(existing.Contexts) == 0) {
		return os.WriteFile(path, platform, 0o600)
	}
	if err != nil {
		// A file the user broke is kept aside, not lost, and written anew.
		if renameErr := os.Rename(path, path+".unreadable"); renameErr != nil {
			return fmt.Errorf("%s is unreadable (%v) and cannot be moved aside: %w", path, err, renameErr)
		}
		return os.WriteFile(path, platform, 0o600)
	}
	existing.Clusters[contextName] = ours.Clusters[contextName]
	existing.AuthInfos[pki.AdminUser] = ours.AuthInfos[pki.AdminUser]
	existing.Contexts[contextName] = ours.Contexts[contextName]
	if _, ok := existing.Contexts[existing.CurrentContext]; !ok {
		existing.CurrentContext = contextName
	}
	merged, err := clientcmd.Write(*existing)
	if err != nil {
		return err
	}
	return os.WriteFile(path, merged, 0o600)
}
