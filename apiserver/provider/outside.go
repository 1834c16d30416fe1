package provider

import "context"

// An Agent step's start is committed before its call leaves the process, so that a crash makes
// the next worker run it again under the same idempotency key (StepRestarted) instead of as a
// second, unrelated call. A call answered in the process (the offline model) has no effect a
// crash could repeat: it needs no commit of its own. A provider that tells (OutsideCallTeller)
// calls BeforeOutsideCall right before each call that leaves the process, and the executor
// commits then, or with the step's outcome when no call left.

// OutsideCallTeller is a Provider that calls BeforeOutsideCall before every call that leaves the
// process, and never calls it for an answer made in the process.
type OutsideCallTeller interface {
	TellsOutsideCalls() bool
}

type outsideCallKey struct{}

// WithOutsideCall returns ctx carrying before: what must happen before a call leaves the process.
func WithOutsideCall(ctx context.Context, before func() error) context.Context {
	return context.WithValue(ctx, outsideCallKey{}, before)
}

// BeforeOutsideCall runs what ctx says must happen before a call leaves the process; an error
// means the call must not be made.
func BeforeOutsideCall(ctx context.Context) error {
	if before, ok := ctx.Value(outsideCallKey{}).(func() error); ok && before != nil {
		return before()
	}
	return nil
}

// TellsOutsideCalls is true: the offline model answers in the process (a declared latency, which
// stands for a model call, is told as one).
func (DeterministicProvider) TellsOutsideCalls() bool { return true }

// TellsOutsideCalls is true: Invoke calls BeforeOutsideCall before it asks a model endpoint.
func (*ManagedProvider) TellsOutsideCalls() bool { return true }
