// Package hub serves the real-time hub at /hubs/workplace: the SignalR transport (negotiate,
// WebSocket upgrade) of apiserver/hub behind the platform's own authentication, with its bounds
// read from the configuration (Platform:Hub:...).
package hub
