// Package hub is the Workplace's real-time hub: the SignalR JSON hub protocol (version 1) over
// WebSockets only, so that the official @microsoft/signalr client connects, reconnects and joins
// the group workspace:{workspaceId} of each workspace it may read; the group receives the
// Workplace outbox's events as invocations, read after their transactions committed, in order,
// woken by the notification of the outbox's topic (on PostgreSQL from every replica). The hub
// only invalidates: clients read the state again over REST.
package hub
