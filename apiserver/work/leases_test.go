package work_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func TestReleasingAnOwnersLeasesMakesItsRunsClaimableAtOnceAndLeavesOtherOwnersAlone(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, _ := newStore(s)
		// Owners whose names share the released owner's prefix without being its workers.
		owners := []string{"host/abc/3", "host/abc/reserved/1", "host/abc", "host/abcd/1", "host/abc0", "other/1"}
		leased := map[string]string{}
		for _, owner := range owners {
			submit(t, w)
			claimed, err := w.Claim(ctx, owner, time.Hour)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(claimed).NotTo(BeNil())
			leased[claimed.ID] = owner
		}

		released, err := w.ReleaseLeasesOf(ctx, "host/abc")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(released).To(BeEquivalentTo(3), "the owner and its workers and reservations")

		var claimedAgain []string
		for {
			run, err := w.Claim(ctx, "successor/1", time.Hour)
			g.Expect(err).NotTo(HaveOccurred())
			if run == nil {
				break
			}
			claimedAgain = append(claimedAgain, leased[run.ID])
		}
		g.Expect(claimedAgain).To(ConsistOf("host/abc/3", "host/abc/reserved/1", "host/abc"),
			"only the released owner's runs are claimable before their leases expire")

		released, err = w.ReleaseLeasesOf(ctx, "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(released).To(BeZero(), "no owner names nobody")
	})
}
