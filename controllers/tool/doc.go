// Package tool reconciles ToolProviders and their Tools with static checks: a provider is Ready
// when its definition is complete and its Secrets exist, a Tool when its provider exists.
// Reconciling never starts or contacts a provider; discovery is an explicit action.
package tool
