package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"platform.dev/platform/apiserver/etcd"
)

func TestExternalEtcdHoldsTheDataAndTheDataDirectoryNone(t *testing.T) {
	requireKubectl(t)
	t.Parallel()
	g := NewWithT(t)

	// No etcd binary is installed, so the "external" cluster is the product's own member run in
	// this test process; to `platform serve` it is just a URL.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	external, err := etcd.Start(ctx, filepath.Join(t.TempDir(), "external-etcd"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(external.Stop) // registered first, so it runs after the server has stopped

	dataDir := filepath.Join(t.TempDir(), "data")
	s := mustStartServer(t, dataDir, "--etcd-servers", external.ClientURL())

	r := s.kubectl("apply", "-f", samplePath)
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(r.Stdout).To(Equal("agent.platform.dev/support-triage created\n"))
	r = s.kubectl("get", "agent", "support-triage", "-o", "jsonpath={.definition.displayName}")
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(r.Stdout).To(Equal("Support triage"))

	_, err = os.Stat(filepath.Join(dataDir, "etcd"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the data directory has an etcd directory (%v)", err)
	g.Expect(filepath.Join(dataDir, "admin.kubeconfig")).To(BeAnExistingFile())

	client, err := clientv3.New(clientv3.Config{Endpoints: []string{external.ClientURL()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	g.Expect(err).NotTo(HaveOccurred())
	defer client.Close()
	keys, err := client.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, kv := range keys.Kvs {
		names = append(names, string(kv.Key))
	}
	g.Expect(names).To(ContainElement(HaveSuffix("/agents/default/support-triage")), strings.Join(names, "\n"))
}
