package listener

// Budget is how many connections each API may hold open.
type Budget struct {
	ServiceAPI int
	KubeAPI    int
}

// BudgetOf divides a descriptor limit: a quarter (at least 256) stays for the store, etcd, the
// controllers' and the executor's connections and files; of the rest the service API, which
// anonymous clients reach, gets two thirds and the kube API one third.
func BudgetOf(limit uint64) Budget {
	reserve := max(256, limit/4)
	if limit < reserve+64 {
		return Budget{ServiceAPI: 32, KubeAPI: 32}
	}
	rest := int(limit - reserve)
	return Budget{ServiceAPI: rest * 2 / 3, KubeAPI: rest / 3}
}

// ProcessBudget is the Budget of this process's descriptor limit (Go raises the soft limit to
// the hard one at start).
func ProcessBudget() Budget { return BudgetOf(descriptorLimit()) }

// HostConnectionsOf is how many connections the Workplace host, a process of its own, may hold
// open under a descriptor limit: the same reserve as BudgetOf, and half of the rest, since every
// request the host relays holds a connection to the API as well.
func HostConnectionsOf(limit uint64) int {
	reserve := max(256, limit/4)
	if limit < reserve+64 {
		return 32
	}
	return int(limit-reserve) / 2
}

// HostConnections is HostConnectionsOf this process's descriptor limit.
func HostConnections() int { return HostConnectionsOf(descriptorLimit()) }
