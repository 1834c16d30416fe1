// Package pki creates and reuses the certificate authority, the serving certificate and the
// local administrator's client certificate of the embedded kube API, all kept in the data
// directory so kubeconfigs stay valid across restarts.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/util/keyutil"
)

const (
	// AdminUser is the user name of the local administrator's client certificate.
	AdminUser = "platform-admin"
	// AdminGroup is the group that the authorizer treats as all-powerful, as kube-apiserver does.
	AdminGroup = "system:masters"

	caValidity        = 10 * 365 * 24 * time.Hour
	leafValidity      = 365 * 24 * time.Hour
	renewBeforeExpiry = 30 * 24 * time.Hour
)

// Files are the paths of the key material inside one directory.
type Files struct {
	Dir string
}

func (f Files) CACert() string      { return filepath.Join(f.Dir, "ca.crt") }
func (f Files) CAKey() string       { return filepath.Join(f.Dir, "ca.key") }
func (f Files) ServingCert() string { return filepath.Join(f.Dir, "apiserver.crt") }
func (f Files) ServingKey() string  { return filepath.Join(f.Dir, "apiserver.key") }
func (f Files) AdminCert() string   { return filepath.Join(f.Dir, "admin.crt") }
func (f Files) AdminKey() string    { return filepath.Join(f.Dir, "admin.key") }

// Ensure creates whatever is missing: the CA on first start, a serving certificate that covers
// hosts (reissued when a host is added or expiry nears) and the administrator's client
// certificate. Existing material is reused, so clients keep trusting the server.
func Ensure(dir string, hosts []string) (Files, error) {
	f := Files{Dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, fmt.Errorf("create certificate directory: %w", err)
	}
	caCert, caKey, err := loadOrCreateCA(f)
	if err != nil {
		return f, err
	}
	hosts = append([]string{"localhost", "127.0.0.1", "::1"}, hosts...)
	if !certCovers(f.ServingCert(), hosts, nil) {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: "platform-apiserver"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else if h != "" {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		if err := issue(f.ServingCert(), f.ServingKey(), tmpl, caCert, caKey); err != nil {
			return f, err
		}
	}
	if !certCovers(f.AdminCert(), nil, []string{AdminGroup}) {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: AdminUser, Organization: []string{AdminGroup}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if err := issue(f.AdminCert(), f.AdminKey(), tmpl, caCert, caKey); err != nil {
			return f, err
		}
	}
	return f, nil
}

func loadOrCreateCA(f Files) (*x509.Certificate, crypto.Signer, error) {
	if certPEM, err := os.ReadFile(f.CACert()); err == nil {
		cert, err := parseCert(certPEM)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", f.CACert(), err)
		}
		keyPEM, err := os.ReadFile(f.CAKey())
		if err != nil {
			return nil, nil, fmt.Errorf("read CA key: %w", err)
		}
		key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", f.CAKey(), err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, nil, fmt.Errorf("read %s: not a signing key", f.CAKey())
		}
		return cert, signer, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("read CA certificate: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "platform-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	// The key is written before the certificate: a crash in between leaves no certificate, so
	// the next start creates a fresh pair instead of failing on a certificate without its key.
	if err := writeKey(f.CAKey(), key); err != nil {
		return nil, nil, err
	}
	if err := writeFileAtomic(f.CACert(), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func issue(certPath, keyPath string, tmpl, caCert *x509.Certificate, caKey crypto.Signer) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(leafValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return err
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writeFileAtomic(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// certCovers reports whether the certificate at path exists, is not about to expire and names
// every host and organization asked for.
func certCovers(path string, hosts, orgs []string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	cert, err := parseCert(data)
	if err != nil || time.Until(cert.NotAfter) < renewBeforeExpiry {
		return false
	}
	for _, h := range hosts {
		if h != "" && cert.VerifyHostname(h) != nil {
			return false
		}
	}
	for _, o := range orgs {
		if !slices.Contains(cert.Subject.Organization, o) {
			return false
		}
	}
	return true
}

func parseCert(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
