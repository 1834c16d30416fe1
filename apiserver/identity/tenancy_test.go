package identity_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func bootstrapRequest() identity.BootstrapRequest {
	return identity.BootstrapRequest{Username: username, Password: password, DisplayName: "Ada", TenantName: "Analytical", WorkspaceName: "engine"}
}

func noProvision(context.Context, identity.Workspace) error { return nil }

func TestBootstrapCreatesTheAdministratorOnceAndExactlyOneConcurrentCallWins(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, _ := newService(s)
		g.Expect(svc.Initialized(ctx)).To(BeFalse())

		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
			errs []error
		)
		for range 4 {
			wg.Go(func() {
				_, _, _, err := svc.Bootstrap(ctx, bootstrapRequest(), noProvision)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					wins++
				} else {
					errs = append(errs, err)
				}
			})
		}
		wg.Wait()
		g.Expect(wins).To(Equal(1))
		for _, err := range errs {
			g.Expect(errors.Is(err, identity.ErrAlreadyInitialized)).To(BeTrue(), "%v", err)
		}
		g.Expect(svc.Initialized(ctx)).To(BeTrue())

		_, p, err := svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(svc.IsPlatformAdministrator(ctx, p.ID)).To(BeTrue())
		ws, err := svc.DefaultWorkspace(ctx, p.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ws.RouteName).To(Equal("engine"))
		var memberships int
		g.Expect(s.DB().QueryRow(`SELECT COUNT(*) FROM memberships`).Scan(&memberships)).To(Succeed())
		g.Expect(memberships).To(BeZero(), "the administrator gets no membership")
	})
}

func TestBootstrapCompensatesWhenProvisioningFails(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, _ := newService(s)
		boom := errors.New("namespace refused")
		_, _, _, err := svc.Bootstrap(ctx, bootstrapRequest(), func(context.Context, identity.Workspace) error { return boom })
		g.Expect(err).To(MatchError(boom))
		g.Expect(svc.Initialized(ctx)).To(BeFalse())
		for _, table := range []string{"principals", "local_accounts", "platform_administrators", "tenants", "workspaces", "identity_bootstrap"} {
			var n int
			g.Expect(s.DB().QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n)).To(Succeed())
			g.Expect(n).To(BeZero(), table)
		}
		_, _, ws, err := svc.Bootstrap(ctx, bootstrapRequest(), noProvision)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ws.RouteName).To(Equal("engine"))
	})
}

func TestBootstrapRefusesABadWorkspaceName(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		svc, _ := newService(s)
		for _, name := range []string{"", "Engine", "kube-x", "a_b", "-a", "platform-instance", "platform-tenant-x"} {
			req := bootstrapRequest()
			req.WorkspaceName = name
			_, _, _, err := svc.Bootstrap(context.Background(), req, noProvision)
			g.Expect(err).To(MatchError(identity.ErrInvalidWorkspaceName), name)
		}
	})
}

// Replicas (each its own store and pool on one PostgreSQL database) asked to bootstrap at the same
// moment create exactly one first administrator: the others are told the platform is initialized.
func TestReplicasBootstrappingAtOnceCreateExactlyOneAdministrator(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		if opts.DatabaseURL == "" {
			t.Skip("one process owns a SQLite database: there are no other replicas")
		}
		g := NewWithT(t)
		ctx := context.Background()
		const replicas = 3
		services := make([]*identity.Service, replicas)
		for i := range replicas {
			s, err := store.Open(ctx, opts)
			g.Expect(err).NotTo(HaveOccurred())
			t.Cleanup(func() { s.Close() })
			services[i], _ = newService(s)
		}
		errs := make([]error, replicas)
		var wg sync.WaitGroup
		for i, svc := range services {
			wg.Go(func() { _, _, _, errs[i] = svc.Bootstrap(ctx, bootstrapRequest(), noProvision) })
		}
		wg.Wait()
		wins := 0
		for i, err := range errs {
			if err == nil {
				wins++
				continue
			}
			g.Expect(errors.Is(err, identity.ErrAlreadyInitialized)).To(BeTrue(), "replica %d: %v", i, err)
		}
		g.Expect(wins).To(Equal(1))
		var admins, accounts int
		db := services[0].Store.DB()
		g.Expect(db.QueryRow(`SELECT COUNT(*) FROM platform_administrators`).Scan(&admins)).To(Succeed())
		g.Expect(db.QueryRow(`SELECT COUNT(*) FROM local_accounts`).Scan(&accounts)).To(Succeed())
		g.Expect([]int{admins, accounts}).To(Equal([]int{1, 1}), "one administrator, one account")
		for _, svc := range services {
			g.Expect(svc.Initialized(ctx)).To(BeTrue())
		}
	})
}
