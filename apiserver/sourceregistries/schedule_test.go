package sourceregistries

import (
	"testing"
	"testing/quick"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Property: the jitter of an attempt is a pure function of the registration UID and the attempt
// (the same on every call, replica and restart) and lies within [0, limit].
func TestJitterIsDeterministicForARegistrationAndWithinItsBound(t *testing.T) {
	property := func(uid string, attempt uint8, limitSeconds uint16) bool {
		limit := time.Duration(limitSeconds) * time.Second
		j := JitterOf(uid, int(attempt), limit)
		return j == JitterOf(uid, int(attempt), limit) && j >= 0 && j <= limit
	}
	if err := quick.Check(property, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
	spread := map[time.Duration]bool{}
	for _, uid := range []string{"a", "b", "c", "d", "e", "f"} {
		spread[JitterOf(uid, 1, time.Minute)] = true
	}
	if len(spread) < 2 {
		t.Fatal("registrations of different UIDs all got the same jitter")
	}
}

func TestAFailedRefreshBacksOffExponentiallyUpToMaximumAttemptsThenTheNormalIntervalApplies(t *testing.T) {
	g := NewWithT(t)
	p := PolicyOf(platformv1.SourceRegistryDefinition{RefreshPolicy: &platformv1.RefreshPolicy{
		PeriodicEnabled: true, Interval: "01:00:00", InitialBackoff: "00:00:10", MaximumBackoff: "00:01:00", Jitter: "00:00:05", MaximumAttempts: ptr.To[int32](4),
	}})
	last := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for failures, base := range map[int]time.Duration{
		0: time.Hour, 1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 4: time.Minute, 5: time.Hour,
	} {
		wait := p.NextAttempt("uid-1", last, failures).Sub(last)
		g.Expect(wait).To(BeNumerically(">=", base), "failures %d", failures)
		g.Expect(wait).To(BeNumerically("<=", base+5*time.Second), "failures %d", failures)
	}
}

func TestOmittedRefreshPolicyTakesTheServiceDefaultsAndPeriodicRefreshIsOff(t *testing.T) {
	g := NewWithT(t)
	p := PolicyOf(platformv1.SourceRegistryDefinition{})
	g.Expect(p.PeriodicEnabled).To(BeFalse())
	g.Expect(p.Timeout).To(Equal(DefaultTimeout))
	g.Expect(p.StaleAfter).To(Equal(DefaultStaleAfter))
	g.Expect(PolicyOf(platformv1.SourceRegistryDefinition{RefreshPolicy: &platformv1.RefreshPolicy{Timeout: "00:00:00"}}).Timeout).To(Equal(DefaultTimeout), "an attempt's timeout is always finite")
}
