// Package cluster runs the platform as the README's "Running a cluster" section does
// (config/cluster/cluster.sh: three etcd members, PostgreSQL, three `platform serve` replicas) and
// breaks it under load: a replica is killed, an etcd member stopped, PostgreSQL restarted. It
// needs Debian's etcd and PostgreSQL binaries and skips, saying so, without them.
package cluster
