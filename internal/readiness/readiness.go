// Package readiness waits until what a ready line announces answers.
package readiness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Polling is how Wait probes: every Interval, each probe bounded by Timeout; after Patience
// without an answer it warns once and goes on probing.
type Polling struct{ Interval, Timeout, Patience time.Duration }

// Default waits out a first start on a loaded machine before it warns.
var Default = Polling{Interval: 100 * time.Millisecond, Timeout: 2 * time.Second, Patience: 2 * time.Minute}

// Wait returns nil once every URL answers GET with a 2xx, probed in order, or ctx's error when
// it ends first. warn gets the reason, once, when Patience runs out.
func Wait(ctx context.Context, p Polling, warn func(error), urls ...string) error {
	client := &http.Client{Timeout: p.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	started, warned := time.Now(), false
	ticker := time.NewTicker(p.Interval)
	defer ticker.Stop()
	for {
		err := probeAll(ctx, client, urls)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !warned && time.Since(started) >= p.Patience {
			warned = true
			warn(fmt.Errorf("not ready after %s: %w", p.Patience.Round(time.Second), err))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

func probeAll(ctx context.Context, client *http.Client, urls []string) error {
	for _, target := range urls {
		if err := probe(ctx, client, target); err != nil {
			return err
		}
	}
	return nil
}

func probe(ctx context.Context, client *http.Client, target string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answers %s", target, resp.Status)
	}
	return nil
}
