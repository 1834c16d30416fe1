package pki

import (
	"bytes"
	"crypto/x509"
	"os"
	"testing"

	. "github.com/onsi/gomega"
)

func TestEnsureReusesTheCAAndCertificatesOnRestart(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	first, err := Ensure(dir, []string{"127.0.0.1"})
	g.Expect(err).NotTo(HaveOccurred())
	ca1, serving1, admin1 := read(t, first.CACert()), read(t, first.ServingCert()), read(t, first.AdminCert())

	second, err := Ensure(dir, []string{"127.0.0.1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(read(t, second.CACert())).To(Equal(ca1))
	g.Expect(read(t, second.ServingCert())).To(Equal(serving1))
	g.Expect(read(t, second.AdminCert())).To(Equal(admin1))
}

func TestEnsureReissuesTheServingCertificateForANewHostUnderTheSameCA(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	first, err := Ensure(dir, nil)
	g.Expect(err).NotTo(HaveOccurred())
	serving1 := read(t, first.ServingCert())

	second, err := Ensure(dir, []string{"10.11.12.13", "platform.example"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bytes.Equal(read(t, second.ServingCert()), serving1)).To(BeFalse())

	ca := parse(t, second.CACert())
	cert := parse(t, second.ServingCert())
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, host := range []string{"127.0.0.1", "localhost", "10.11.12.13", "platform.example"} {
		_, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: host})
		g.Expect(err).NotTo(HaveOccurred(), host)
	}
}

func TestAdminCertificateIsAClientCertificateOfTheAdministratorGroup(t *testing.T) {
	g := NewWithT(t)
	files, err := Ensure(t.TempDir(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	cert := parse(t, files.AdminCert())
	g.Expect(cert.Subject.CommonName).To(Equal(AdminUser))
	g.Expect(cert.Subject.Organization).To(ConsistOf(AdminGroup))
	g.Expect(cert.ExtKeyUsage).To(ConsistOf(x509.ExtKeyUsageClientAuth))
	info, err := os.Stat(files.AdminKey())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), "private keys are readable by their owner only")
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parse(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	cert, err := parseCert(read(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
