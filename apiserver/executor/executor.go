// Package executor runs FlowRuns: workers claim runnable runs from the Work store under a lease,
// execute their steps sequentially and persist every transition before acting on it, so a run
// survives the death of its process and resumes from its last persisted transition.
package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/usage"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/internal/config"
)

// ErrNotPermitted is what an Authorize function returns when the run's Principal may no longer
// execute runs in the run's workspace.
var ErrNotPermitted = errors.New("runs/execute is not granted")

// Options configure an Executor.
type Options struct {
	Work     *work.Store
	Resolver Resolver
	Provider provider.Provider
	// Authorize revalidates that the Principal that submitted a run still holds runs/execute in
	// its workspace (ErrNotPermitted otherwise); it is checked each time a worker takes the run.
	Authorize func(ctx context.Context, c work.Context) error
	// Workers is how many runs execute at once; 64 when zero (runs mostly wait on agent calls).
	Workers int
	// WorkspaceShare is how many of them may execute runs of one workspace at once (FlowRuns and
	// Runtime Runs together), so that slow runs of one workspace never hold every worker while
	// another's wait; half the workers (at least one) when zero.
	WorkspaceShare int
	// Lease is how long a worker owns a run without renewing; 15 s when zero. A run left by a
	// dead process is taken over once its lease expires.
	Lease time.Duration
	// Poll is how often an idle worker looks for runs whose lease expired with a dead process; runs
	// made runnable by a commit wake a worker at once (package notify). 1 s when zero.
	Poll time.Duration
	// RetryBackoff is the first pause before retrying a transient agent failure; it doubles.
	RetryBackoff time.Duration
	// Tools runs the tools agents call in Managed mode; without it a model's tool calls read
	// an error result.
	Tools ToolRunner
	// MaxToolCallsPerStep bounds the tool calls of one Agent step; DefaultMaxToolCallsPerStep
	// when zero.
	MaxToolCallsPerStep int
	// Artifacts stores the deliverables agents declare before the step that declares them
	// completes; without it a declared deliverable fails the step.
	Artifacts ArtifactPutter
	// Budgets reads the Entry of a run and the budgets of its model calls; without it no budget
	// is checked and usage names no Entry.
	Budgets Budgets
	// DeterministicPrice is the instance's price of the Deterministic model
	// (Platform:Usage:Deterministic:*); it costs nothing without one.
	DeterministicPrice *usage.Price
	// Owner names this process's leases; host/pid/random when empty, so that a restarted
	// process never mistakes its dead predecessor's leases for its own. A process that alone
	// serves its data directory names itself the same on every start instead, and gives its
	// predecessor's leases back before it serves (work.Store.ReleaseLeasesOf).
	Owner string
	Log   logr.Logger
}

// ArtifactPutter stores bytes under a new opaque key (the Workplace's artifact store).
type ArtifactPutter interface {
	Put(ctx context.Context, r io.Reader) (key string, length int64, err error)
}

// OptionsFromConfig reads Platform:Executor:Workers, Platform:Executor:WorkspaceShare,
// Platform:Executor:LeaseSeconds, Platform:Tools:MaxCallsPerStep, the price of the Deterministic
// model (Platform:Usage:Deterministic:*) and checks the default budgets (Platform:Budgets:*).
func OptionsFromConfig(cfg *config.Config, opts Options) (Options, error) {
	if err := usage.CheckSettings(cfg); err != nil {
		return opts, err
	}
	price, err := usage.DeterministicPrice(cfg)
	if err != nil {
		return opts, err
	}
	opts.DeterministicPrice = price
	if v := cfg.Get("Platform:Executor:Workers"); v != "" {
		if _, err := fmt.Sscan(v, &opts.Workers); err != nil || opts.Workers < 1 || opts.Workers > 256 {
			return opts, fmt.Errorf("Platform:Executor:Workers=%q: must be a number from 1 to 256", v)
		}
	}
	if v := cfg.Get("Platform:Tools:MaxCallsPerStep"); v != "" {
		if _, err := fmt.Sscan(v, &opts.MaxToolCallsPerStep); err != nil || opts.MaxToolCallsPerStep < 1 || opts.MaxToolCallsPerStep > 256 {
			return opts, fmt.Errorf("Platform:Tools:MaxCallsPerStep=%q: must be a number from 1 to 256", v)
		}
	}
	if v := cfg.Get("Platform:Executor:WorkspaceShare"); v != "" {
		if _, err := fmt.Sscan(v, &opts.WorkspaceShare); err != nil || opts.WorkspaceShare < 1 || opts.WorkspaceShare > 256 {
			return opts, fmt.Errorf("Platform:Executor:WorkspaceShare=%q: must be a number from 1 to 256", v)
		}
	}
	if v := cfg.Get("Platform:Executor:LeaseSeconds"); v != "" {
		var seconds int
		if _, err := fmt.Sscan(v, &seconds); err != nil || seconds < 1 || seconds > 3600 {
			return opts, fmt.Errorf("Platform:Executor:LeaseSeconds=%q: must be a number from 1 to 3600", v)
		}
		opts.Lease = time.Duration(seconds) * time.Second
	}
	return opts, nil
}

// Executor is a pool of workers over the Work store.
type Executor struct {
	work      *work.Store
	resolver  Resolver
	provider  provider.Provider
	authorize func(context.Context, work.Context) error
	workers   int
	share     int
	lease     time.Duration
	poll      time.Duration
	backoff   time.Duration
	tools     ToolRunner
	// maxToolCalls bounds the tool calls of one Agent step.
	maxToolCalls int
	artifacts    ArtifactPutter
	budgets      Budgets
	// deterministicPrice prices the Deterministic model's calls.
	deterministicPrice *usage.Price
	log                logr.Logger
	owner              string
	wake               chan struct{}

	// claimSlots bounds the claims this process has under way at once (claimsAtOnce).
	claimSlots chan struct{}
	busyMu     sync.Mutex
	// busy counts the runs executing per workspace.
	busy map[string]int
	// claims counts the claims under way: each may land in any workspace, so each counts toward
	// every workspace's share until it is known where it landed.
	claims int
	// readRuns are the runs workers read claimable and have not taken yet (RunOnce); readMu
	// serializes the reads.
	readRuns map[string]bool
	readMu   sync.Mutex
	// waiters are the submitters waiting for a worker (ReserveWithin), the oldest first; guarded
	// by busyMu.
	waiters []*waiter
	// slots holds a token per run executing, claimed or reserved, so that no more than workers
	// execute at once.
	slots chan struct{}

	// lifecycle guards running and reserved: a reservation is taken only while Run runs, and Run
	// returns after every reservation ended.
	lifecycle sync.Mutex
	running   context.Context
	reserved  sync.WaitGroup
	reserveN  atomic.Int64

	// pinned keeps what the runs' pinned Flows and agents decode to.
	pinned pinnedCache

	// runnableSignals counts the signs that a run may have become runnable (Wake): a commit that
	// made one runnable, here or in another replica, a claim that may have left more, the poll
	// for leases that expired. noneRunnable records, guarded by busyMu, the count before the
	// last look in the store that found no runnable run in any workspace: while no sign came
	// since, a look would find none either.
	runnableSignals atomic.Uint64
	noneRunnable    struct {
		known   bool
		signals uint64
	}
}

// New checks opts and builds an Executor.
func New(opts Options) (*Executor, error) {
	if opts.Work == nil || opts.Resolver == nil || opts.Provider == nil || opts.Authorize == nil {
		return nil, errors.New("executor: Work, Resolver, Provider and Authorize are required")
	}
	e := &Executor{work: opts.Work, resolver: opts.Resolver, provider: opts.Provider, authorize: opts.Authorize,
		workers: opts.Workers, lease: opts.Lease, poll: opts.Poll, backoff: opts.RetryBackoff, artifacts: opts.Artifacts, log: opts.Log,
		tools: opts.Tools, maxToolCalls: opts.MaxToolCallsPerStep, budgets: opts.Budgets, deterministicPrice: opts.DeterministicPrice}
	if e.maxToolCalls <= 0 {
		e.maxToolCalls = DefaultMaxToolCallsPerStep
	}
	if e.workers <= 0 {
		e.workers = 64
	}
	e.share = opts.WorkspaceShare
	if e.share <= 0 {
		e.share = max(1, e.workers/2)
	}
	e.busy, e.readRuns = map[string]int{}, map[string]bool{}
	if e.lease <= 0 {
		e.lease = 15 * time.Second
	}
	if e.poll <= 0 {
		e.poll = time.Second
	}
	if e.backoff <= 0 {
		e.backoff = 200 * time.Millisecond
	}
	e.owner = opts.Owner
	if e.owner == "" {
		host, _ := os.Hostname()
		suffix := make([]byte, 4)
		_, _ = rand.Read(suffix)
		e.owner = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(suffix))
	}
	e.wake = make(chan struct{}, e.workers)
	e.slots = make(chan struct{}, e.workers)
	e.claimSlots = make(chan struct{}, min(claimsAtOnce, e.share))
	return e, nil
}

// Wake tells idle workers that a run became runnable, so they do not wait for the next poll.
func (e *Executor) Wake() {
	e.runnableSignals.Add(1)
	e.wakeWorker()
}

// wakeWorker wakes an idle worker, which looks for a run to execute or a submitter to go to.
func (e *Executor) wakeWorker() {
	// One idle worker tries; a worker that claims a run wakes the next (see claim), so a burst
	// of runs spreads over the workers and a single run does not send every worker to the store.
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run starts the workers and the expiry of PendingActions, and returns when ctx ends and every
// worker has stopped. A run a worker was executing keeps its persisted state and is taken over
// after its lease.
func (e *Executor) Run(ctx context.Context) {
	e.lifecycle.Lock()
	e.running = ctx
	e.lifecycle.Unlock()
	defer func() {
		e.lifecycle.Lock()
		e.running = nil
		e.lifecycle.Unlock()
		e.reserved.Wait()
	}()
	var wg sync.WaitGroup
	// A run made runnable here or by another replica wakes the workers at once; the poll only
	// finds the runs whose lease expired with a dead process.
	if sub, err := e.work.Changes().Subscribe(work.RunnableTopic); err == nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sub.Close()
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-sub.Events():
					if !ok {
						if sub, err = e.work.Changes().Subscribe(work.RunnableTopic); err != nil {
							return
						}
					}
					e.Wake()
				}
			}
		}()
	}
	for i := range e.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.worker(ctx, fmt.Sprintf("%s/%d", e.owner, i))
		}()
	}
	// The poll finds the runs whose lease expired with a dead process: one idle worker looks at
	// each interval (and finding one wakes the next), so an idle executor reads the store once
	// per interval, not once per worker.
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(e.poll)
		defer ticker.Stop()
		for e.Wake(); ; e.Wake() {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				if n, err := e.work.ExpirePendingActions(ctx); err != nil && ctx.Err() == nil {
					e.log.Error(err, "expiring pending actions")
				} else if n > 0 {
					e.log.Info("pending actions expired", "count", n)
				}
				if n, err := e.work.RemindPendingActions(ctx); err != nil && ctx.Err() == nil {
					e.log.Error(err, "reminding of pending actions")
				} else if n > 0 {
					e.log.Info("pending actions reminded", "count", n)
				}
			}
		}
	}()
	wg.Wait()
}

// worker executes runs each time it is woken, until it finds none.
func (e *Executor) worker(ctx context.Context, owner string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		}
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case e.slots <- struct{}{}:
			}
			worked, err := e.lookForRun(ctx, owner)
			// With nothing in the store to run, the worker goes to a submitter waiting for one;
			// its slot goes with it.
			if err == nil && !worked {
				if handed, more := e.handOff(); handed {
					if more {
						continue
					}
					break
				}
			}
			<-e.slots
			if err != nil && ctx.Err() == nil {
				// A failing store or kube API: wait for the next poll instead of spinning.
				e.log.Error(err, "executing a flow run")
				break
			}
			if !worked {
				break
			}
		}
	}
}

// lookForRun executes a runnable FlowRun or Runtime Run of the store, and reports false when
// there was none. A look that finds none in any workspace is recorded (noneRunnable): until a
// sign comes that a run became runnable (Wake), workers skip the look. Under load, when workers
// go to submitters waiting for one (handOff), those looks were most of their trips to the store.
func (e *Executor) lookForRun(ctx context.Context, owner string) (bool, error) {
	signals := e.runnableSignals.Load()
	if e.knownNoneRunnable(signals) {
		return false, nil
	}
	worked, flowsLeftOut, err := e.runOnce(ctx, owner)
	if worked || err != nil {
		return worked, err
	}
	worked, runtimesLeftOut, err := e.runRuntimeOnce(ctx, owner)
	if worked || err != nil {
		return worked, err
	}
	if flowsLeftOut || runtimesLeftOut {
		// The looks left out the workspaces at their share: only a look at every workspace tells
		// that none has a runnable run.
		if any, err := e.work.AnyRunnable(ctx); any || err != nil {
			return false, err
		}
	}
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	if !e.noneRunnable.known || signals > e.noneRunnable.signals {
		e.noneRunnable.known, e.noneRunnable.signals = true, signals
	}
	return false, nil
}

// knownNoneRunnable says whether a look in the store found no runnable run after signals, the
// count of signs that one became runnable, last changed.
func (e *Executor) knownNoneRunnable(signals uint64) bool {
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	return e.noneRunnable.known && e.noneRunnable.signals == signals
}

// RunOnce claims one runnable run for owner and executes it until it suspends, ends, or is
// taken away; false when there was none to claim. The run is read claimable and taken with its
// first commit (work.Store.ClaimApplied), right before it first acts outside the process or
// stops executing: a run whose next steps need no call outside the process is claimed and
// finished in one commit. A worker that finds it taken meanwhile (by another replica) drops it;
// a crash before that commit leaves it claimable. The process's workers never read the same run
// while one of them has it unwritten.
func (e *Executor) RunOnce(ctx context.Context, owner string) (bool, error) {
	worked, _, err := e.runOnce(ctx, owner)
	return worked, err
}

// runOnce is RunOnce; leftOut tells that the look left out the runs of workspaces at their share.
func (e *Executor) runOnce(ctx context.Context, owner string) (worked, leftOut bool, err error) {
	var run *work.FlowRun
	workspace, leftOut, err := e.claim(func(full []string) (string, error) {
		// One read at a time, each leaving out the runs read before and not taken yet: no two
		// workers of the process read one run. A read is one statement, no commit.
		e.readMu.Lock()
		defer e.readMu.Unlock()
		var err error
		if run, err = e.work.Claimable(ctx, full, e.reading()); run == nil || err != nil {
			return "", err
		}
		if !e.read(run.ID) {
			run = nil
			return "", nil
		}
		return run.WorkspaceID, nil
	})
	if err != nil || run == nil {
		return false, leftOut, err
	}
	defer e.done(workspace)
	defer e.unread(run.ID)
	runsClaimed.Inc()
	run.LeaseOwner, run.LeaseExpiresAt = owner, time.Now().Add(e.lease)
	return true, leftOut, e.executeRun(ctx, run, owner, &submission{claimed: func() { e.unread(run.ID) }})
}

// read records that a worker of the process read the run claimable and has not taken it yet;
// false when another worker did.
func (e *Executor) read(runID string) bool {
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	if e.readRuns[runID] {
		return false
	}
	e.readRuns[runID] = true
	return true
}

// unread ends what read recorded: the run was taken (or dropped).
func (e *Executor) unread(runID string) {
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	delete(e.readRuns, runID)
}

// reading are the runs the process's workers read claimable and have not taken yet (at most one
// per worker).
func (e *Executor) reading() []string {
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	return slices.Collect(maps.Keys(e.readRuns))
}

// executeRun runs a run this process owns until it suspends, ends, or is taken away; sub, when
// set, is the run's submission, written with its first transition.
func (e *Executor) executeRun(ctx context.Context, run *work.FlowRun, owner string, sub *submission) error {
	// The correlation chain, InteractionId -> WorkTaskId -> WorkExecutionId -> FlowRunId, is on
	// every line of the run; Agent steps add their runtime execution id.
	log := e.log.WithValues("workspaceId", run.WorkspaceID, "workTaskId", run.WorkTaskID, "workExecutionId", run.WorkExecutionID(),
		"flowRunId", run.ID)
	if run.InteractionID != "" {
		log = log.WithValues("interactionId", run.InteractionID)
	}
	// The lease is renewed while the run executes; losing it (pause, cancel, or a takeover after
	// a stall) stops the execution before its next transition.
	runCtx, release := e.keepLease(ctx, func(ctx context.Context) (bool, error) {
		if sub != nil && !sub.written.Load() {
			return true, nil // nothing to renew before the submission is written
		}
		return e.work.RenewLease(ctx, run.ID, owner, e.lease)
	})
	err := e.drive(logr.NewContext(runCtx, log), run, owner, sub)
	release()
	if errors.Is(err, work.ErrLeaseLost) {
		log.V(1).Info("flow run taken away from this worker")
		return nil
	}
	if err != nil {
		// The run is given back at once; its persisted state is where the next worker starts.
		// One whose submission or answer was not written has no lease to give back.
		if sub == nil || sub.written.Load() {
			_ = e.work.ReleaseLease(context.WithoutCancel(ctx), run.ID, owner)
		}
		return fmt.Errorf("flow run %s: %w", run.ID, err)
	}
	return nil
}

// Reserve takes a free worker of this process for a run of workspace about to be submitted: the
// submission commits the run already leased to it and Start begins its execution at once,
// which saves the commit of a claim and the wait for a worker to wake. It reports false when
// every worker is busy, the workspace's runs and the claims under way (which may land in it)
// fill its share, or the executor is not running; the run is then submitted for any worker to
// claim.
func (e *Executor) Reserve(workspace string) (work.Reservation, bool) {
	e.lifecycle.Lock()
	defer e.lifecycle.Unlock()
	if !e.runningLocked() {
		return nil, false
	}
	select {
	case e.slots <- struct{}{}:
	default:
		return nil, false
	}
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	if !e.roomLocked(workspace) {
		<-e.slots
		return nil, false
	}
	return e.reservedLocked(workspace), true
}

// runningLocked says whether Run runs, e.lifecycle held: only then is a worker reserved.
func (e *Executor) runningLocked() bool {
	return e.running != nil && e.running.Err() == nil
}

// roomLocked says whether a run more of workspace stays within its share, counting the claims
// under way as its runs too; e.busyMu is held.
func (e *Executor) roomLocked(workspace string) bool {
	return e.busy[workspace]+e.claims < e.share
}

// reservedLocked counts a run more of workspace and makes the reservation for it, the worker's
// slot taken; e.lifecycle and e.busyMu are held, and e.running is set.
func (e *Executor) reservedLocked(workspace string) *reservation {
	e.busy[workspace]++
	e.reserved.Add(1)
	return &reservation{e: e, ctx: e.running, workspace: workspace,
		lease: work.Lease{Owner: fmt.Sprintf("%s/reserved/%d", e.owner, e.reserveN.Add(1)), Until: time.Now().Add(e.lease)}}
}

// maxWaitersPerWorker bounds the submitters waiting for a worker (ReserveWithin) to this many per
// worker; those beyond queue their runs at once.
const maxWaitersPerWorker = 4

// waiter is a submitter waiting for a worker of its workspace (ReserveWithin).
type waiter struct {
	workspace string
	// granted receives the reservation handed over; buffered, so that handing over never blocks.
	granted chan work.Reservation
}

// ReserveWithin is Reserve for a submitter that waits for its run to settle anyway: when no
// worker is free for workspace it waits up to wait for one to be handed over (handOff), which
// saves its run the commit that queues it and the claim's read and commit. A worker is handed
// over only once the store has no runnable run for it to claim, so queued runs are never passed
// over for as long as submitters keep waiting. It gives up when ctx ends.
func (e *Executor) ReserveWithin(ctx context.Context, workspace string, wait time.Duration) (work.Reservation, bool) {
	if r, ok := e.Reserve(workspace); ok || wait <= 0 || !e.isRunning() {
		return r, ok
	}
	w := &waiter{workspace: workspace, granted: make(chan work.Reservation, 1)}
	e.busyMu.Lock()
	if len(e.waiters) >= maxWaitersPerWorker*e.workers {
		e.busyMu.Unlock()
		return nil, false
	}
	e.waiters = append(e.waiters, w)
	e.busyMu.Unlock()
	// A worker freed between the Reserve above and the registration woke nobody for this waiter.
	if r, ok := e.Reserve(workspace); ok {
		if !e.unwait(w) {
			(<-w.granted).Cancel() // one was handed over meanwhile too
		}
		return r, true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case r := <-w.granted:
		return r, true
	case <-timer.C:
	case <-ctx.Done():
	}
	if e.unwait(w) {
		return nil, false
	}
	r := <-w.granted // handed over as it gave up
	if ctx.Err() != nil {
		r.Cancel()
		return nil, false
	}
	return r, true
}

// isRunning says whether Run runs: only then is a worker handed over.
func (e *Executor) isRunning() bool {
	e.lifecycle.Lock()
	defer e.lifecycle.Unlock()
	return e.runningLocked()
}

// unwait removes w from the waiters; false when a worker was handed over to it already.
func (e *Executor) unwait(w *waiter) bool {
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	i := slices.Index(e.waiters, w)
	if i < 0 {
		return false
	}
	e.waiters = slices.Delete(e.waiters, i, i+1)
	return true
}

// handable says whether a submitter waits for a worker that its workspace's share allows it now.
func (e *Executor) handable() bool {
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	return e.handableLocked()
}

func (e *Executor) handableLocked() bool {
	return slices.ContainsFunc(e.waiters, func(w *waiter) bool { return e.roomLocked(w.workspace) })
}

// handOff hands the worker slot the calling worker holds to the oldest waiter whose workspace has
// room in its share, as a reservation; handed is false when there is none, and the caller keeps
// the slot. more tells whether another waiter could take a worker now.
func (e *Executor) handOff() (handed, more bool) {
	e.lifecycle.Lock()
	defer e.lifecycle.Unlock()
	if !e.runningLocked() {
		return false, false
	}
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	i := slices.IndexFunc(e.waiters, func(w *waiter) bool { return e.roomLocked(w.workspace) })
	if i < 0 {
		return false, false
	}
	w := e.waiters[i]
	e.waiters = slices.Delete(e.waiters, i, i+1)
	w.granted <- e.reservedLocked(w.workspace)
	runsHandedOver.Inc()
	return true, e.handableLocked()
}

// reservation is a worker taken by Reserve.
type reservation struct {
	e         *Executor
	ctx       context.Context
	workspace string
	lease     work.Lease
}

func (r *reservation) Lease() work.Lease { return r.lease }

// Start executes the submitted run under the reservation's lease, as a claimed run would be.
// The returned func tells the run as the worker left it settled, so that a waiter for the
// answer need not read it (as Submit's Settled).
func (r *reservation) Start(submitted work.FlowRun) func(ctx context.Context, timeout time.Duration) (work.FlowRun, bool) {
	x := &execution{committed: make(chan struct{}), done: make(chan struct{}), run: submitted, last: submitted}
	// The run is committed already: each commit of the worker only records the run it left.
	tracked := &submission{x: x}
	tracked.written.Store(true)
	go func() {
		defer r.Cancel()
		defer close(x.done)
		runsClaimed.Inc()
		// The run as Submit committed it is the run as the store holds it: nobody else has the lease.
		run := submitted
		err := r.e.executeRun(r.ctx, &run, r.lease.Owner, tracked) // gives the run back itself when it fails
		if err != nil && r.ctx.Err() == nil {
			r.e.log.Error(err, "executing a flow run")
		}
	}()
	return x.settled
}

// Submit hands the submission to the reserved worker, which executes its run at once and writes
// the submission with the run's first commit (work.Store.SubmitApplied): a run whose steps make
// no call outside the process is submitted, executed and ended in that one commit. It returns
// once the submission is committed, so that the caller acknowledges work that survives a crash.
// A worker that stops before it wrote anything submits the work as any submission, for any
// worker to claim.
func (r *reservation) Submit(ctx context.Context, sub work.Submission) (work.Submitted, error) {
	lease := r.lease
	sub.Lease = &lease
	p, err := r.e.work.Prepare(sub)
	if err != nil {
		r.Cancel()
		return work.Submitted{}, err
	}
	x := &execution{committed: make(chan struct{}), done: make(chan struct{})}
	s := &submission{prepared: p, x: x}
	go func() {
		defer r.Cancel()
		defer close(x.done)
		runsClaimed.Inc()
		run := p.Run
		err := r.e.executeRun(r.ctx, &run, r.lease.Owner, s)
		if !s.written.Load() {
			// Nothing was written: the same WorkItem (its id refuses a second one) goes to any
			// worker.
			sub.Lease, sub.ID = nil, p.Item.ID
			item, run, token, err := r.e.work.Submit(ctx, sub)
			x.item, x.run, x.last, x.token, x.err = item, run, run, token, err
			close(x.committed)
			if err == nil {
				r.e.Wake()
			}
			return
		}
		if err != nil && r.ctx.Err() == nil {
			r.e.log.Error(err, "executing a flow run")
		}
	}()
	if err := x.waitCommitted(ctx); err != nil {
		return work.Submitted{}, err
	}
	return work.Submitted{Item: x.item, Run: x.run, Token: x.token, Settled: x.settled}, nil
}

// Respond hands the answer to the reserved worker, which resumes the run at once in the process
// and writes the answer with the run's first commit (work.Store.RespondApplied): a resumed run
// whose next steps make no call outside the process is answered, executed and ended (or
// suspended again) in that one commit. It returns once the answer is committed, so that the
// answerer is acknowledged only of an answer that survives a crash. An answer only the store's
// Respond gives (PrepareResponse), and one whose run or action changed before the worker could
// write it, is given by Respond, the run leased to the worker; a worker that stops before it
// wrote anything leaves the answer to Respond, for any worker to claim the run.
func (r *reservation) Respond(ctx context.Context, resp work.Response) (work.Responded, error) {
	lease := r.lease
	resp.Lease = &lease
	p, ok, err := r.e.work.PrepareResponse(ctx, resp)
	if err != nil {
		r.Cancel()
		return work.Responded{}, err
	}
	if !ok {
		return r.respond(ctx, resp)
	}
	x := &execution{committed: make(chan struct{}), done: make(chan struct{})}
	s := &submission{answer: &p, x: x}
	go func() {
		defer r.Cancel()
		defer close(x.done)
		runsClaimed.Inc()
		run := p.Run
		err := r.e.executeRun(r.ctx, &run, r.lease.Owner, s)
		if !s.written.Load() {
			// Nothing was written: the answer is given as any answer is, which tells the answerer
			// what became of an action that changed meanwhile. The run goes on on this worker,
			// or, when it stops, on any.
			if r.ctx.Err() != nil {
				resp.Lease = nil
			}
			x.action, x.run, x.token, x.err = r.e.work.Respond(ctx, resp)
			x.last = x.run
			close(x.committed)
			if x.err != nil {
				return
			}
			if resp.Lease == nil || x.run.LeaseOwner != r.lease.Owner || !runnable(x.run) {
				r.e.Wake()
				return
			}
			s.written.Store(true)
			run := x.run
			err = r.e.executeRun(r.ctx, &run, r.lease.Owner, s)
		}
		if err != nil && r.ctx.Err() == nil {
			r.e.log.Error(err, "executing a flow run")
		}
	}()
	if err := x.waitCommitted(ctx); err != nil {
		return work.Responded{}, err
	}
	return work.Responded{Action: x.action, Run: x.run, Token: x.token, Settled: x.settled}, nil
}

// respond gives the answer with Store.Respond, the resumed run leased to the reserved worker,
// which starts it once committed; the worker is given back when the run is not resumed.
func (r *reservation) respond(ctx context.Context, resp work.Response) (work.Responded, error) {
	action, run, token, err := r.e.work.Respond(ctx, resp)
	if err != nil || run.LeaseOwner != r.lease.Owner || !runnable(run) {
		r.Cancel()
		if err == nil {
			r.e.Wake()
		}
		return work.Responded{Action: action, Run: run, Token: token}, err
	}
	return work.Responded{Action: action, Run: run, Token: token, Settled: r.Start(run)}, nil
}

// runnable says whether run is Pending or Running: a worker executes it.
func runnable(run work.FlowRun) bool {
	return run.State == work.StatePending || run.State == work.StateRunning
}

// submission is a run's submission, an answer that resumes it (answer set), or its claim
// (claimed set), that its worker writes with the run's first transition.
type submission struct {
	prepared work.Prepared
	answer   *work.PreparedResponse
	// claimed, for a run read claimable, is told once the run is taken.
	claimed func()
	// written is set once it is committed (read by the lease's renewals).
	written atomic.Bool
	x       *execution
}

// execution is what a submitter learns of a run its reserved worker executes: the submission as
// committed (once committed is closed), and the run as last committed (once done is closed).
type execution struct {
	committed, done chan struct{}
	item            work.WorkItem
	action          work.PendingAction
	run, last       work.FlowRun
	token           string
	err             error
}

// waitCommitted waits for the worker's first commit, the submission's or the answer's, and
// answers its error; ctx's when the caller went away first (the worker goes on).
func (x *execution) waitCommitted(ctx context.Context) error {
	select {
	case <-x.committed:
		return x.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flushed records a commit of the worker: the first is the submission's (or the answer's, action).
func (s *submission) flushed(item work.WorkItem, action work.PendingAction, run work.FlowRun) {
	if s.claimed != nil {
		if !s.written.Load() {
			s.written.Store(true)
			s.claimed()
		}
		return
	}
	s.x.last = run
	if !s.written.Load() {
		s.x.item, s.x.action, s.x.run, s.x.token = item, action, run, s.prepared.Token
		if s.answer != nil {
			s.x.token = s.answer.Token
		}
		s.written.Store(true)
		close(s.x.committed)
	}
}

// settled is the run once its worker stopped executing it, when it left it settled.
func (x *execution) settled(ctx context.Context, timeout time.Duration) (work.FlowRun, bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-x.done:
		settled := x.last.State != work.StatePending && x.last.State != work.StateRunning
		return x.last, settled
	case <-t.C:
	case <-ctx.Done():
	}
	return x.run, false
}

// Cancel gives the reserved worker back; with submitters waiting for one, a worker looks for a
// queued run first and else hands the worker over (handOff).
func (r *reservation) Cancel() {
	r.e.done(r.workspace)
	<-r.e.slots
	r.e.reserved.Done()
	if r.e.handable() {
		r.e.wakeWorker()
	}
}

// claimsAtOnce bounds the claims one process has under way together. Claims are store round
// trips, so one at a time would cap the process at one claim per commit; but each claim under
// way counts as one more run of every workspace for the others, so a few suffice.
const claimsAtOnce = 4

// claim runs take with the workspaces excluded that a run more could take beyond their share,
// counting the other claims under way as runs of every workspace, and counts the workspace of
// what it claimed ("" for nothing) as busy until done; leftOut tells that it excluded some. At
// most share claims are under way at once, so a workspace with no run executing is never
// filled beyond its share either.
func (e *Executor) claim(take func(full []string) (string, error)) (workspace string, leftOut bool, err error) {
	e.claimSlots <- struct{}{}
	defer func() { <-e.claimSlots }()
	e.busyMu.Lock()
	var full []string
	for ws := range e.busy {
		if !e.roomLocked(ws) {
			full = append(full, ws)
		}
	}
	e.claims++
	e.busyMu.Unlock()
	workspace, err = take(full)
	e.busyMu.Lock()
	e.claims--
	if workspace != "" {
		e.busy[workspace]++
	}
	e.busyMu.Unlock()
	if workspace != "" {
		e.Wake() // there may be more
	}
	return workspace, len(full) > 0, err
}

// done ends the count of a run of workspace claimed by claim.
func (e *Executor) done(workspace string) {
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	if e.busy[workspace]--; e.busy[workspace] <= 0 {
		delete(e.busy, workspace)
	}
}

// drive executes the run's steps, persisting each transition before acting on it.
func (e *Executor) drive(ctx context.Context, run *work.FlowRun, owner string, sub *submission) error {
	log := logr.FromContextOrDiscard(ctx)
	// Transitions are staged and persisted together, in one commit, right before the run acts
	// outside the store (an Agent call) or stops executing (suspended, ended, failed, retried):
	// the steps in between are pure functions of the persisted data, so a crash before the
	// commit only makes the next worker compute them again, with the same outcome.
	var staged *work.Transition
	// held is the run as the store holds it (run has the staged transitions applied): each
	// commit checks against it that nobody changed the run meanwhile, instead of reading it.
	held := *run
	drive := &driveState{noToolCalls: !run.Pinned(), noUsage: !run.Pinned()}
	stage := func(t work.Transition) error {
		// Each event says the run's state as its own transition left it, however many
		// transitions commit together.
		state := run.State
		switch {
		case t.Suspend != nil:
			state = work.StateActionRequired
		case t.State != "":
			state = t.State
		}
		events := make([]work.Event, len(t.Events))
		for i, e := range t.Events {
			if e.State == "" {
				e.State = state
			}
			events[i] = e
		}
		t.Events = events
		if staged != nil {
			t = staged.Then(t)
		}
		staged = &t
		return t.ApplyTo(run)
	}
	flush := func() error {
		first := sub != nil && !sub.written.Load()
		if staged == nil && !first {
			return nil
		}
		var t work.Transition
		if staged != nil {
			t = *staged
		}
		staged = nil
		var (
			item   work.WorkItem
			action work.PendingAction
			next   work.FlowRun
			err    error
		)
		switch {
		case first && sub.claimed != nil:
			// The run is taken with what it did since it was read claimable, in one commit.
			t.UsageFresh = drive.noUsage
			next, err = e.work.ClaimApplied(ctx, held, owner, t)
		case first && sub.answer != nil:
			// The answer is written with what the run it resumed did since, in one commit.
			t.UsageFresh = drive.noUsage
			action, next, err = e.work.RespondApplied(ctx, *sub.answer, owner, t)
		case first:
			// The submission is written with what its run did so far, in one commit.
			item, next, err = e.work.SubmitApplied(ctx, sub.prepared, owner, t)
		default:
			t.UsageFresh = drive.noUsage
			next, err = e.work.ApplyHeld(ctx, held, owner, t)
		}
		if len(t.Usage) > 0 {
			drive.noUsage = false // from this commit on, whether or not it committed
		}
		if err == nil {
			*run, held = next, next
			observeUsage(run.WorkspaceID, t.Usage...)
			if sub != nil {
				sub.flushed(item, action, next)
			}
		}
		return err
	}
	apply := func(t work.Transition) error {
		if err := stage(t); err != nil {
			return err
		}
		return flush()
	}
	fail := func(reason string, before ...work.Event) error {
		log.Info("flow run failed", "step", run.CurrentStep, "reason", reason)
		runsFinished.WithLabelValues(work.StateFailed).Inc()
		return apply(work.Transition{State: work.StateFailed, Reason: reason,
			Events: append(before, work.Event{Type: work.EventRunFailed, Step: run.CurrentStep, Reason: reason})})
	}

	if err := e.authorize(ctx, run.Context); err != nil {
		if errors.Is(err, ErrNotPermitted) {
			return fail("the Principal that submitted the run no longer holds runs/execute in its workspace")
		}
		return err
	}
	ctx = context.WithValue(ctx, driveKey{}, drive)
	if !run.Pinned() {
		pin, input, reason, err := e.pin(ctx, run)
		if err != nil {
			return err
		}
		if reason != "" {
			return fail(reason)
		}
		started := false
		if err := stage(work.Transition{Pin: pin, State: work.StateRunning, CurrentStep: &input, StepStarted: &started, Attempt: 1,
			Events: []work.Event{{Type: work.EventRunStarted, Step: input, State: work.StateRunning}}}); err != nil {
			return err
		}
		if run.FlowDraft {
			log.Info("flow run started", "flow", run.FlowName, "draftRevision", run.FlowRevision, "digest", run.FlowDigest)
		} else {
			log.Info("flow run started", "flow", run.FlowName, "version", run.FlowVersion)
		}
	} else if run.State == work.StatePending {
		if err := stage(work.Transition{State: work.StateRunning}); err != nil {
			return err
		}
	} else if run.StepStarted {
		// The worker that started this step stopped before it persisted the outcome.
		if err := stage(work.Transition{Events: []work.Event{{Type: work.EventStepRestarted, Step: run.CurrentStep, Attempt: run.Attempt,
			Reason: "the worker executing the step stopped; it runs again under the same idempotency key"}}}); err != nil {
			return err
		}
		log.Info("flow run step restarted after its worker stopped", "step", run.CurrentStep, "attempt", run.Attempt)
		stepsRestarted.Inc()
	}
	g, reason := pinnedGraphs.graph(run.Snapshot)
	if reason != "" {
		return fail(reason)
	}
	agents, reason := e.pinned.agentsOf(run.Agents)
	if reason != "" {
		return fail(reason)
	}
	for {
		if err := ctx.Err(); err != nil {
			return work.ErrLeaseLost
		}
		step, ok := g.steps[run.CurrentStep]
		if !ok {
			return fail(fmt.Sprintf("the flow has no step %q", run.CurrentStep))
		}
		data, err := run.DecodeData()
		if err != nil {
			return fail(err.Error())
		}
		if !run.StepStarted {
			if _, answered := data.Answers[step.Name]; step.Suspend != nil && !answered {
				return apply(work.Transition{Suspend: suspensionOf(step), Events: []work.Event{}})
			}
		}
		// An Agent step resumed after its question, not started since, has the tool calls it had
		// when it asked: none, when its data says so. Once started, a crash may have left calls
		// of its resumption, which are read.
		drive.noCallsOf = ""
		if _, answered := data.Answers[step.Name]; !run.StepStarted && answered && questionWithoutToolCalls(data.Steps[step.Name]) {
			drive.noCallsOf = step.Name
		}
		// An Agent step's start is persisted before the call, the step's one effect outside the
		// store. Any other step is a pure function of the persisted data: its start is written
		// with its outcome, in one transaction, which halves its commits and changes nothing a
		// crash could observe.
		// An Agent step attempt is one runtime execution: its idempotency key names it on the
		// events and log lines about it.
		runtimeExecutionID := ""
		stepLog := log
		if step.Type == platformv1.AgentStep {
			runtimeExecutionID = agentExecutionID(run, step.Name)
			stepLog = log.WithValues("runtimeExecutionId", runtimeExecutionID)
		}
		var startEvents []work.Event
		if !run.StepStarted {
			startEvents = []work.Event{{Type: work.EventStepStarted, Step: step.Name, Attempt: run.Attempt, RuntimeExecutionID: runtimeExecutionID}}
			if step.Type == platformv1.AgentStep {
				started := true
				if err := stage(work.Transition{StepStarted: &started, Events: startEvents}); err != nil {
					return err
				}
				startEvents = nil
			}
		}
		stepCtx := ctx
		var flushed error
		if step.Type == platformv1.AgentStep {
			// Whatever is staged (the step's start, or its restart after a crash) is persisted
			// before the call leaves the process and before the tool calls the step makes. A
			// provider that tells when a call leaves the process (provider.OutsideCallTeller)
			// flushes then; a call it answers in the process (the offline model) commits with
			// the step's outcome, as a pure step does: a crash before that commit leaves nothing
			// outside the store to repeat.
			if teller, ok := e.provider.(provider.OutsideCallTeller); ok && teller.TellsOutsideCalls() {
				stepCtx = provider.WithOutsideCall(ctx, func() error { flushed = flush(); return flushed })
			} else if err := flush(); err != nil {
				return err
			}
		}
		began := time.Now()
		out := e.execute(stepCtx, run, g, step, data, agents)
		if flushed != nil {
			return flushed
		}
		stepDuration.WithLabelValues(string(step.Type)).Observe(time.Since(began).Seconds())
		stepsExecuted.WithLabelValues(string(step.Type), out.kind()).Inc()
		if ctx.Err() != nil {
			// Paused, cancelled or taken over meanwhile: nothing of this try is kept.
			return work.ErrLeaseLost
		}
		if len(out.usage) > 0 && out.err == nil {
			// The model calls are recorded with the outcome they led to, in its transaction.
			t := work.Transition{Usage: out.usage}
			if out.prior != nil {
				t.Prior = map[string][]work.ModelCall{step.Name: out.prior}
			}
			if err := stage(t); err != nil {
				return err
			}
			if drive.stagedCalls == nil {
				drive.stagedCalls = map[string]int{}
			}
			drive.stagedCalls[step.Name] += len(out.usage)
		}
		done := work.Event{Type: work.EventStepCompleted, Step: step.Name, Attempt: run.Attempt, RuntimeExecutionID: runtimeExecutionID}
		notStarted := false
		events := func(e ...work.Event) []work.Event { return append(append([]work.Event{}, startEvents...), e...) }
		switch {
		case out.err != nil:
			return out.err
		case out.failure != "":
			stepLog.V(1).Info("flow run step failed", "step", step.Name, "attempt", run.Attempt)
			return fail(out.failure, startEvents...)
		case out.retry != "":
			pause := e.backoff << (run.Attempt - 1)
			stepLog.Info("flow run step retried", "step", step.Name, "attempt", run.Attempt, "reason", out.retry)
			if err := apply(work.Transition{Attempt: run.Attempt + 1,
				Events: events(work.Event{Type: work.EventStepRetried, Step: step.Name, Attempt: run.Attempt + 1, Reason: out.retry,
					RuntimeExecutionID: agentExecutionID(run, step.Name, 1)})}); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return work.ErrLeaseLost
			case <-time.After(pause):
			}
		case out.suspend != nil && out.suspend.ToolCallSeq > 0:
			// A tool call waits for its approval; the step goes on once it is decided.
			stepLog.Info("flow run waits for the approval of a tool call", "step", step.Name, "toolCall", out.suspend.ToolCallSeq)
			return apply(forgetAsked(work.Transition{Suspend: out.suspend, StepStarted: &notStarted, Events: events()}, data, step.Name))
		case out.suspend != nil && out.suspend.Budget != nil:
			// A model call waits for the approval to continue past a budget; the step goes on
			// (or fails) once it is decided.
			stepLog.Info("flow run waits for the approval to continue past a budget", "step", step.Name, "budget", out.suspend.Budget.Key)
			return apply(forgetAsked(work.Transition{Suspend: out.suspend, StepStarted: &notStarted, Events: events()}, data, step.Name))
		case out.suspend != nil:
			stepLog.Info("flow run waits for a pending action", "step", step.Name, "kind", out.suspend.Kind)
			t := work.Transition{Suspend: out.suspend, StepStarted: &notStarted, Events: events(done)}
			if out.output != nil {
				data.Steps[step.Name] = out.output
				t.Data = &data
			}
			return apply(t)
		case out.result != nil:
			log.Info("flow run completed", "step", step.Name)
			runsFinished.WithLabelValues(work.StateCompleted).Inc()
			return apply(work.Transition{State: work.StateCompleted, Result: out.result,
				Events: events(done, work.Event{Type: work.EventRunCompleted, Step: step.Name, State: work.StateCompleted})})
		default:
			data.Steps[step.Name], data.Current = out.output, out.output
			if err := stage(work.Transition{CurrentStep: &out.next, StepStarted: &notStarted, Attempt: 1, Data: &data,
				Events: events(done)}); err != nil {
				return err
			}
		}
	}
}

// forgetAsked is t, which suspends a step that may have made calls since its question, with what
// the question says of the step's calls then taken out of the run's data: the step resumes not
// started, and must read the calls it has now.
func forgetAsked(t work.Transition, data work.RunData, step string) work.Transition {
	m, ok := data.Steps[step].(map[string]any)
	if !ok {
		return t
	}
	_, calls := m[noToolCallsKey]
	_, usage := m[modelCallsKey]
	if !calls && !usage {
		return t
	}
	kept := maps.Clone(m)
	delete(kept, noToolCallsKey)
	delete(kept, modelCallsKey)
	data.Steps = maps.Clone(data.Steps)
	data.Steps[step] = kept
	t.Data = &data
	return t
}

func suspensionOf(step platformv1.FlowStep) *work.Suspension {
	kinds := map[platformv1.SuspendKind]string{
		platformv1.TextSuspend: work.KindText, platformv1.ChoiceSuspend: work.KindChoice,
		platformv1.ConfirmationSuspend: work.KindConfirmation, platformv1.FileSuspend: work.KindFile,
		platformv1.ApprovalSuspend: work.KindApproval,
	}
	sus := &work.Suspension{Step: step.Name, Kind: kinds[step.Suspend.Kind], Prompt: step.Suspend.Prompt, Continuation: step.Name}
	for _, c := range step.Suspend.Choices {
		sus.Options = append(sus.Options, work.Option{Value: c.Value, Label: c.Label})
	}
	applyExpiry(sus, step.Suspend.Expiry)
	return sus
}

// agentExecutionID is the runtime execution id of an Agent step attempt: the idempotency key
// its provider call carries (run, step, attempt), attempts ahead of the current one when given.
func agentExecutionID(run *work.FlowRun, step string, ahead ...int) string {
	attempt := run.Attempt
	for _, n := range ahead {
		attempt += n
	}
	return fmt.Sprintf("%s/%s/%d", run.ID, step, attempt)
}

// pin reads the exact Flow snapshot and the revisions of the agents it invokes. A reason is
// returned (and no error) when the run cannot execute: the version or an agent is gone, or the
// snapshot is invalid.
func (e *Executor) pin(ctx context.Context, run *work.FlowRun) (*work.Pin, string, string, error) {
	var (
		def    platformv1.FlowDefinition
		digest string
		err    error
	)
	if run.FlowDraft {
		// A Draft Run executes the draft revision it was submitted against, never the Flow's
		// draft of now: its snapshot was written with the run.
		if err := json.Unmarshal(run.Snapshot, &def); err != nil {
			return nil, "", fmt.Sprintf("the draft snapshot of flow %q is unreadable: %v", run.FlowName, err), nil
		}
		digest = run.FlowDigest
	} else {
		def, digest, err = e.resolver.FlowVersion(ctx, run.Namespace, run.FlowName, run.FlowVersion)
		if errors.Is(err, ErrFlowNotFound) {
			return nil, "", fmt.Sprintf("version %s of flow %q is not published in the workspace", run.FlowVersion, run.FlowName), nil
		}
		if err != nil {
			return nil, "", "", err
		}
	}
	invalid := func(errs error) string {
		what := "version " + run.FlowVersion
		if run.FlowDraft {
			what = "draft revision " + run.FlowRevision
		}
		return fmt.Sprintf("%s of flow %q is invalid: %v", what, run.FlowName, errs)
	}
	g, snapshot, reason, err := e.pinned.version(def, !run.FlowDraft, invalid)
	if err != nil || reason != "" {
		return nil, "", reason, err
	}
	agents := map[string]provider.Agent{}
	for _, name := range g.agentNames() {
		a, err := e.resolver.Agent(ctx, run.Namespace, name)
		if errors.Is(err, ErrAgentNotFound) {
			return nil, "", fmt.Sprintf("flow %q invokes agent %q, which the workspace does not have", run.FlowName, name), nil
		}
		if err != nil {
			return nil, "", "", err
		}
		agents[name] = a
	}
	pinnedAgents, err := json.Marshal(agents)
	if err != nil {
		return nil, "", "", err
	}
	return &work.Pin{Digest: digest, Snapshot: snapshot, Agents: pinnedAgents}, g.input, "", nil
}

// keepLease renews a lease every third of its duration while the returned context lives. The
// context ends when renew reports the lease lost; release ends it and waits for the renewals to
// stop.
func (e *Executor) keepLease(ctx context.Context, renew func(context.Context) (bool, error)) (context.Context, func()) {
	leaseCtx, cancel := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		ticker := time.NewTicker(e.lease / 3)
		defer ticker.Stop()
		for {
			select {
			case <-leaseCtx.Done():
				return
			case <-ticker.C:
				if ok, err := renew(leaseCtx); err == nil && !ok {
					cancel()
					return
				}
			}
		}
	}()
	return leaseCtx, func() { cancel(); <-renewed }
}
