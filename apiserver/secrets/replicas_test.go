package secrets_test

import (
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/internal/config"
)

// Replicas sharing the key file's volume may initialize the Local Vault at the same moment: one
// key is written, every other initialization is refused, and a replica reading the file meanwhile
// finds either no key or the whole key, never a partial one (which would read as malformed and
// make its Vaults Unavailable).
func TestReplicasInitializingTogetherWriteOneKeyAndNoneReadsAPartialOne(t *testing.T) {
	g := NewWithT(t)
	for round := range 100 {
		source, err := secrets.MasterKeySourceFrom(config.FromMap("Testing", nil), filepath.Join(t.TempDir(), "shared"))
		g.Expect(err).NotTo(HaveOccurred())
		var (
			wg       sync.WaitGroup
			created  atomic.Int32
			partial  atomic.Int32
			refusals atomic.Int32
			done     atomic.Bool
		)
		for range 2 {
			wg.Go(func() {
				for !done.Load() {
					if err := source.Check(); err != nil && !errors.Is(err, secrets.ErrMasterKeyMissing) {
						partial.Add(1)
					}
				}
			})
		}
		var writers sync.WaitGroup
		for range 4 {
			writers.Go(func() {
				switch _, err := source.Initialize(); {
				case err == nil:
					created.Add(1)
				case errors.Is(err, secrets.ErrMasterKeyExists):
					refusals.Add(1)
				default:
					t.Errorf("round %d: %v", round, err)
				}
			})
		}
		writers.Wait()
		done.Store(true)
		wg.Wait()
		g.Expect(created.Load()).To(Equal(int32(1)), "round %d: one key is written", round)
		g.Expect(refusals.Load()).To(Equal(int32(3)), "round %d", round)
		g.Expect(partial.Load()).To(BeZero(), "round %d: a reader found a partial key", round)
		g.Expect(source.Check()).To(Succeed())
	}
}
