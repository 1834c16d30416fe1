package sourceregistries

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func observation(uid string, serial int64, digest string) Observation {
	return Observation{RegistrationUID: uid, IndexURL: "https://registry.example/index.json", Serial: serial, IndexDigest: digest, Index: []byte(`{"serial":1}`), ETag: `"v1"`}
}

func TestAnIndexWithALowerSerialOrTheSameSerialAndAnotherDigestIsARefusedRollback(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		s := &Store{DB: db}
		good, _, err := s.SaveObservation(ctx, observation("reg-a", 5, "sha256:five"), []Shard{{Name: "main", Digest: "sha256:s", Document: []byte("{}")}}, nil)
		g.Expect(err).NotTo(HaveOccurred())
		for name, tc := range map[string]struct {
			serial int64
			digest string
		}{
			"a lower serial":                      {4, "sha256:four"},
			"the same serial with another digest": {5, "sha256:other"},
		} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				_, _, err := s.SaveObservation(ctx, observation("reg-a", tc.serial, tc.digest), nil, nil)
				g.Expect(err).To(MatchError(ErrRollback))
				st, err := s.State(ctx, "reg-a")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(st.CurrentObservation).To(Equal(good.ID), "the last-known-good observation stays current")
				g.Expect(st.HighestSerial).To(Equal(int64(5)))
			})
		}
		_, _, err = s.SaveObservation(ctx, observation("reg-a", 5, "sha256:five"), nil, nil)
		g.Expect(err).NotTo(HaveOccurred(), "the same serial with the same digest is the same index")
		_, _, err = s.SaveObservation(ctx, observation("reg-a", 6, "sha256:six"), nil, nil)
		g.Expect(err).NotTo(HaveOccurred())
	})
}

func TestTheFirstDigestSeenForAVersionIsKeptAndAnotherLaterIsAConflict(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		s := &Store{DB: db}
		first, conflicts, err := s.SaveObservation(ctx, observation("reg-a", 1, "sha256:a1"), nil, []Listing{{"acme", "kit", "1.0", "sha256:m1"}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(conflicts).To(BeEmpty())
		for name, uid := range map[string]string{"the same registration": "reg-a", "another registration": "reg-b"} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				serial := int64(2)
				if uid == "reg-a" {
					serial = 3
				}
				later, conflicts, err := s.SaveObservation(ctx, observation(uid, serial, "sha256:later"+uid), nil, []Listing{{"acme", "kit", "1.0", "sha256:m2"}})
				g.Expect(err).NotTo(HaveOccurred(), "the observation is kept: both stay visible")
				g.Expect(conflicts).To(ConsistOf(HaveField("FirstSeen.ManifestDigest", "sha256:m1")))
				_, ok, err := s.ObservationByID(ctx, later.ID)
				g.Expect(ok, err).To(BeTrue())
				_, ok, err = s.ObservationByID(ctx, first.ID)
				g.Expect(ok, err).To(BeTrue())
			})
		}
		f, ok, err := s.FirstSeenOf(ctx, "acme", "kit", "1.0")
		g.Expect(ok, err).To(BeTrue())
		g.Expect(f.ManifestDigest).To(Equal("sha256:m1"))
		g.Expect(f.ObservationID).To(Equal(first.ID))
	})
}

func TestCleanupKeepsTheRetainedObservationsNeverTheCurrentOneAndNeverHistory(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		s := &Store{DB: db, Now: func() time.Time { return clock }}
		var ids []string
		for serial := int64(1); serial <= 5; serial++ {
			clock = clock.Add(time.Minute)
			o, _, err := s.SaveObservation(ctx, observation("reg-c", serial, "sha256:"+string(rune('a'+serial))), []Shard{{Name: "main", Digest: "d", Document: []byte("{}")}}, nil)
			g.Expect(err).NotTo(HaveOccurred())
			ids = append(ids, o.ID)
			_, err = s.AppendRefresh(ctx, RefreshRecord{RegistrationUID: "reg-c", Trigger: TriggerManual, Outcome: OutcomeSucceeded, StartedAt: clock, FinishedAt: clock.Add(time.Second), CorrelationID: "c", ObservationID: o.ID})
			g.Expect(err).NotTo(HaveOccurred())
		}
		deleted, err := s.Cleanup(ctx, "reg-c", 2)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(deleted).To(Equal(3))
		for i, id := range ids {
			_, ok, err := s.ObservationByID(ctx, id)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ok).To(Equal(i >= 3), "observation %d", i)
		}
		shards, err := s.Shards(ctx, ids[0])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(shards).To(BeEmpty())
		history, err := s.Refreshes(ctx, "reg-c", 0, 100)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(history).To(HaveLen(5), "cleanup never deletes refresh history")
		g.Expect(history[0].ObservationID).To(Equal(ids[4]), "newest first")
		g.Expect(history[0].Duration()).To(Equal(time.Second))

		deleted, err = s.Cleanup(ctx, "reg-c", 1)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(deleted).To(Equal(1))
		st, _ := s.State(ctx, "reg-c")
		_, ok, _ := s.ObservationByID(ctx, st.CurrentObservation)
		g.Expect(ok).To(BeTrue(), "the current observation is never removed")
	})
}
