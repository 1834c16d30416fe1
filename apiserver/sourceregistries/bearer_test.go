package sourceregistries

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/internal/registry"
	testregistry "platform.dev/platform/test/registry"
)

const bearerToken = "reg-token-7f3a91c2d4"

// storedText is every registry row of the store, as text, for looking for a value that must
// never be stored.
func storedText(t *testing.T, db *store.Store) string {
	t.Helper()
	return storetest.RowsText(t, db, "registry_observations", "registry_observation_shards", "registry_states", "registry_refreshes", "registry_first_seen")
}

func TestAStaticBearerCredentialIsResolvedForEachRequestToTheRegistrationsOriginOnlyAndIsNeverStored(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		reg, pool := startTestRegistry(t)
		reg.RequireBearer(bearerToken)
		secrets := map[platformv1.ResourceName]string{"registry-token": bearerToken, "stale-token": "not-the-token"}
		clients := &Clients{Pool: pool, Credentials: func(_ context.Context, ref platformv1.SecretReference) ([]byte, error) {
			v, ok := secrets[ref.Name]
			if !ok {
				return nil, fmt.Errorf("definition.credential.name: Secret %q not found in the instance", ref.Name)
			}
			return []byte(v + "\n"), nil
		}}
		private := periodicRegistration("private", reg.IndexURL(), func(d *platformv1.SourceRegistryDefinition) {
			d.AuthenticationMode = platformv1.StaticBearerRegistryAuthentication
			d.Credential = &platformv1.SecretReference{Name: "registry-token"}
		})
		r := &Refresher{Store: &Store{DB: db}, ErrorCode: ErrorCode}
		refresh := func(credential platformv1.ResourceName) RefreshRecord {
			private.Definition.Credential.Name = credential
			fetcher, err := clients.Fetcher(ctx, private)
			g.Expect(err).NotTo(HaveOccurred())
			rec, _, err := r.Run(ctx, RefreshOf(private, TriggerManual, fetcher))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fmt.Sprintf("%+v", rec)).NotTo(ContainSubstring(bearerToken))
			return rec
		}

		good := refresh("registry-token")
		g.Expect(good.Outcome).To(Equal(OutcomeSucceeded))
		g.Expect(reg.Authorizations(testregistry.ShardPath("acme"))).To(ConsistOf("Bearer "+bearerToken), "every request to the origin carries it, shards too")

		for name, tc := range map[string]struct {
			credential platformv1.ResourceName
			code       string
		}{
			"a missing Secret":              {"no-such-secret", "RegistryCredentialUnavailable"},
			"a Secret with the wrong value": {"stale-token", "RegistryHttpStatus"},
		} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				rec := refresh(tc.credential)
				g.Expect(rec).To(And(HaveField("Outcome", OutcomeFailed), HaveField("ErrorCode", tc.code)))
				st, err := r.Store.State(ctx, string(private.UID))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(st.CurrentObservation).To(Equal(good.ObservationID), "the last-known-good observation stays")
			})
		}

		// The registry sends the index elsewhere: the client refuses to follow, so the other
		// origin never sees a request, let alone the credential.
		elsewhere, _ := startTestRegistry(t)
		reg.Redirect(testregistry.IndexPath, elsewhere.IndexURL())
		g.Expect(refresh("registry-token")).To(HaveField("ErrorCode", "RegistryRedirectRefused"))
		g.Expect(elsewhere.Requests(testregistry.IndexPath)).To(BeZero())
		g.Expect(elsewhere.Authorizations(testregistry.IndexPath)).To(BeEmpty())
		// A redirect within the origin keeps it.
		reg.Redirect(testregistry.IndexPath, "/moved/index.json")
		reg.Redirect("/moved/index.json", testregistry.IndexPath+"-gone")
		refresh("registry-token")
		g.Expect(reg.Authorizations("/moved/index.json")).To(ConsistOf("Bearer " + bearerToken))

		g.Expect(storedText(t, db)).NotTo(ContainSubstring(bearerToken), "no stored row holds the credential")
		g.Expect(storedText(t, db)).To(ContainSubstring(string(private.UID)), "(the rows were read)")
	})
}

func TestAStaticBearerRegistrationWithoutCredentialsOnTheServerFailsCleanly(t *testing.T) {
	g := NewWithT(t)
	_, pool := startTestRegistry(t)
	c, err := (&Clients{Pool: pool}).Client(context.Background(), periodicRegistration("p", "https://127.0.0.1:1/index.json", func(d *platformv1.SourceRegistryDefinition) {
		d.AuthenticationMode = platformv1.StaticBearerRegistryAuthentication
		d.Credential = &platformv1.SecretReference{Name: "x"}
	}))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.FetchIndex(context.Background(), registry.Validators{})
	g.Expect(ErrorCode(err)).To(Equal("RegistryCredentialUnavailable"))
	g.Expect(errors.Is(err, errNoCredentials) || strings.Contains(err.Error(), "resolves no registry credentials")).To(BeTrue(), "%v", err)
}
