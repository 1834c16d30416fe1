package controllers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Defaults of leader election, those of kube-controller-manager.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// restartBackoff bounds the pause before a term that failed to start is tried again.
const restartBackoff = 30 * time.Second

// Run runs the controllers until ctx ends, which is the only way it returns. With leader election
// it campaigns for the Lease and runs a fresh manager for each term it holds it; a term that
// ends without ctx ending (the Lease lost to a slow API, taken over, or a manager that failed)
// stops that term's controllers and campaigns again, so that a lost Lease never ends the
// process that embeds them.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	log := o.Log
	if log.GetSink() == nil {
		log = ctrl.Log.WithName("controllers")
	}
	if !o.LeaderElection {
		return runTerms(ctx, log, func(ctx context.Context) error { return startManager(ctx, cfg, o) })
	}
	o = o.withElectionDefaults()
	if err := o.Validate(); err != nil {
		return err
	}
	identity := o.ElectionIdentity
	if identity == "" {
		host, _ := os.Hostname()
		identity = host + "_" + uuid.NewString()
	}
	lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, o.LeaderElectionNamespace, LeaderElectionID,
		resourcelock.ResourceLockConfig{Identity: identity}, cfg, o.RenewDeadline)
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	return runTerms(ctx, log, func(ctx context.Context) error {
		return campaign(ctx, log, cfg, o, lock)
	})
}

// runTerms runs term again and again until ctx ends, pausing after a term that ended at once so
// that a persistent failure does not spin.
func runTerms(ctx context.Context, log logr.Logger, term func(context.Context) error) error {
	pause := time.Second
	for {
		began := time.Now()
		err := term(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			log.Info("controllers stopped; starting them again", "reason", err.Error())
		}
		if time.Since(began) > restartBackoff {
			pause = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, restartBackoff)
	}
}

// campaign waits for the Lease, runs the controllers while it is held and returns once it is
// not: lost, or released because ctx ended or the manager stopped. The term's manager has
// stopped when it returns.
func campaign(ctx context.Context, log logr.Logger, cfg *rest.Config, o Options, lock resourcelock.Interface) error {
	termCtx, endTerm := context.WithCancel(ctx)
	defer endTerm()
	held := &heldLock{Interface: lock}
	var (
		managerErr error
		stopped    = make(chan struct{})
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          held,
		LeaseDuration: o.LeaseDuration,
		RenewDeadline: o.RenewDeadline,
		RetryPeriod:   o.RetryPeriod,
		// A replica that stops cleanly hands the Lease over at once instead of after it expires.
		ReleaseOnCancel: true,
		Name:            LeaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				defer close(stopped)
				log.Info("holding the leader election Lease; controllers start", "lease", o.LeaderElectionNamespace+"/"+LeaderElectionID)
				managerErr = startManager(leadCtx, cfg, o)
				// A manager that stopped on its own gives the Lease up, so that another replica
				// (or the next term here) takes over.
				endTerm()
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(termCtx)
	if !held.acquired.Load() {
		return nil // ctx ended during the campaign
	}
	// The elector acquired the Lease before it started the term's controllers; they stop
	// before the next campaign.
	<-stopped
	if ctx.Err() != nil {
		return nil
	}
	if managerErr != nil {
		return managerErr
	}
	return errors.New("the leader election Lease was lost; the controllers stepped down and campaign again")
}

// heldLock records whether the elector ever wrote the Lease as its holder: client-go starts the
// term's callback right after, so a campaign that acquired must wait for that callback to end.
type heldLock struct {
	resourcelock.Interface
	acquired atomic.Bool
}

func (l *heldLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	l.record(r, err)
	return err
}

func (l *heldLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	l.record(r, err)
	return err
}

func (l *heldLock) record(r resourcelock.LeaderElectionRecord, err error) {
	if err == nil && r.HolderIdentity != "" && r.HolderIdentity == l.Identity() {
		l.acquired.Store(true)
	}
}

// startManager builds a manager for one term and runs it until ctx ends. A manager cannot be
// started twice, so each term gets a new one.
func startManager(ctx context.Context, cfg *rest.Config, o Options) error {
	o.LeaderElection = false
	o.skipNameValidation = true
	mgr, err := NewManager(cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// Validate checks the leader election durations, as client-go would, before anything starts.
func (o Options) Validate() error {
	if !o.LeaderElection {
		return nil
	}
	o = o.withElectionDefaults()
	if o.LeaseDuration <= o.RenewDeadline {
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be longer than --leader-elect-renew-deadline (%s)", o.LeaseDuration, o.RenewDeadline)
	}
	if o.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(o.RetryPeriod)) {
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be longer than %.1f times --leader-elect-retry-period (%s)", o.RenewDeadline, leaderelection.JitterFactor, o.RetryPeriod)
	}
	return nil
}

func (o Options) withElectionDefaults() Options {
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline <= 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod <= 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = "kube-system"
	}
	return o
}
