package sourceregistries

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// fakeRegistry answers like a registry with validators, and counts what it sends.
type fakeRegistry struct {
	serial        int64
	shardDigest   string
	fail          error
	indexRequests int
	shardRequests int
	bytesSent     int
}

func (f *fakeRegistry) index() []byte {
	return []byte(fmt.Sprintf(`{"serial":%d,"shards":[{"name":"main","digest":%q}]}`, f.serial, f.shardDigest))
}

func (f *fakeRegistry) FetchIndex(_ context.Context, etag, _ string) (*IndexFetch, error) {
	f.indexRequests++
	if f.fail != nil {
		return nil, f.fail
	}
	current := fmt.Sprintf(`"%d-%s"`, f.serial, f.shardDigest)
	if etag == current {
		return &IndexFetch{NotModified: true}, nil
	}
	doc := f.index()
	f.bytesSent += len(doc)
	return &IndexFetch{ETag: current, Serial: f.serial, Digest: fmt.Sprintf("sha256:%d-%s", f.serial, f.shardDigest), Document: doc,
		Shards: []ShardRef{{Name: "main", Digest: f.shardDigest}}}, nil
}

func (f *fakeRegistry) FetchShard(_ context.Context, ref ShardRef) (*FetchedShard, error) {
	f.shardRequests++
	doc := []byte(`{"sources":[{"publisher":"acme","name":"kit","versions":[{"version":"1.0","manifestDigest":"sha256:m-` + ref.Digest + `"}]}]}`)
	f.bytesSent += len(doc)
	l, err := ListingsOf(doc)
	return &FetchedShard{Document: doc, Listings: l}, err
}

var emptyDefinition = platformv1.SourceRegistryDefinition{}

func TestARefreshRevalidatesWith304AndFetchesOnlyChangedShardsAndAFailureKeepsTheLastKnownGood(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		reg := &fakeRegistry{serial: 1, shardDigest: "s1"}
		r := &Refresher{Store: &Store{DB: db}, ErrorCode: func(error) string { return "" }}
		run := func(trigger string) RefreshRecord {
			rec, _, err := r.Run(ctx, Refresh{RegistrationUID: "reg-r", IndexURL: "https://registry.example/index.json", Trigger: trigger,
				Policy: PolicyOf(emptyDefinition), Retain: 3, CorrelationID: "c", Fetcher: reg})
			g.Expect(err).NotTo(HaveOccurred())
			return rec
		}
		first := run(TriggerManual)
		g.Expect(first.Outcome).To(Equal(OutcomeSucceeded))
		g.Expect(reg.shardRequests).To(Equal(1))

		sent := reg.bytesSent
		validated := run(TriggerManual)
		g.Expect(validated.Outcome).To(Equal(OutcomeNotModified))
		g.Expect(validated.ObservationID).To(Equal(first.ObservationID))
		g.Expect(reg.bytesSent).To(Equal(sent), "a 304 transfers no body")
		g.Expect(reg.indexRequests).To(Equal(2))

		reg.serial = 2 // a new index, the same shard
		second := run(TriggerManual)
		g.Expect(second.Outcome).To(Equal(OutcomeSucceeded))
		g.Expect(reg.shardRequests).To(Equal(1), "a shard whose digest did not change is not fetched again")

		reg.fail = errors.New("connection refused")
		failed := run(TriggerManual)
		g.Expect(failed).To(And(HaveField("Outcome", OutcomeFailed), HaveField("ErrorCode", CodeUnavailable)))
		st, _ := r.Store.State(ctx, "reg-r")
		g.Expect(st.CurrentObservation).To(Equal(second.ObservationID), "a failure keeps the last-known-good observation")
		g.Expect(st.ConsecutiveFailures).To(Equal(1))

		reg.fail, reg.serial, reg.shardDigest = nil, 3, "s2"
		recovered := run(TriggerManual)
		g.Expect(recovered).To(And(HaveField("Outcome", OutcomeRecovered), HaveField("RetryCount", 1)))
		g.Expect(reg.shardRequests).To(Equal(2), "a changed shard is fetched")

		reg.serial = 2
		rolledBack := run(TriggerManual)
		g.Expect(rolledBack).To(And(HaveField("Outcome", OutcomeFailed), HaveField("ErrorCode", CodeRollback)))
		st, _ = r.Store.State(ctx, "reg-r")
		g.Expect(st.CurrentObservation).To(Equal(recovered.ObservationID))

		history, _ := r.Store.Refreshes(ctx, "reg-r", 0, 100)
		g.Expect(history).To(HaveLen(6))
	})
}

func TestAScheduledRefreshDoesNothingWhenANewerAttemptRanMeanwhile(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		reg := &fakeRegistry{serial: 1, shardDigest: "s1"}
		r := &Refresher{Store: &Store{DB: db}}
		seen := time.Now().Add(-time.Hour)
		_, _, err := r.Run(ctx, Refresh{RegistrationUID: "reg-s", IndexURL: "https://r.example/i.json", Trigger: TriggerManual, Policy: PolicyOf(emptyDefinition), Fetcher: reg})
		g.Expect(err).NotTo(HaveOccurred())
		_, _, err = r.Run(ctx, Refresh{RegistrationUID: "reg-s", IndexURL: "https://r.example/i.json", Trigger: TriggerScheduled, Policy: PolicyOf(emptyDefinition), Fetcher: reg, ScheduledAfter: seen})
		g.Expect(err).To(MatchError(ErrSuperseded))
		g.Expect(reg.indexRequests).To(Equal(1), "the scheduled run, which saw an older state, cannot overwrite the manual result")
	})
}
