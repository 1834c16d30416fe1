#!/usr/bin/env bash
# A try-out cluster on one machine: three etcd members (Debian's etcd), one PostgreSQL server and
# three `platform serve` replicas sharing them, the CA of their PKI, the Local Vault key file and
# the artifact directory.
#
#   config/cluster/cluster.sh start [DIR]   # start everything, wait until every replica is ready
#   config/cluster/cluster.sh status [DIR]  # /readyz of each replica
#   config/cluster/cluster.sh stop [DIR]    # stop the replicas, then etcd and PostgreSQL
#
# DIR (default .cluster) holds every member's data, logs and pid files; `stop` keeps it, so a
# second `start` resumes the same cluster. Ports are PLATFORM_CLUSTER_PORT (default 7070) and the
# nine after it: etcd clients +0..+2, etcd peers +3..+5, PostgreSQL +6, replicas' service APIs
# +7..+9 (their kube APIs take a free port each; see DIR/replica-N/admin.kubeconfig).
# PLATFORM_CLUSTER_REPLICAS (1 to 3, default 3) says how many replicas `start` runs (a later
# `start` with more adds the missing ones). PLATFORM_BIN names the binary (default bin/platform); PLATFORM_SERVE_ARGS adds flags of
# `platform serve` (such as --leader-elect-lease-duration). Every other variable of the
# environment (PLATFORM_ENVIRONMENT, AI__Provider, ...) reaches the replicas.
set -euo pipefail

cmd=${1:-}
dir=${2:-.cluster}
base=${PLATFORM_CLUSTER_PORT:-7070}
bin=${PLATFORM_BIN:-bin/platform}
replicas=${PLATFORM_CLUSTER_REPLICAS:-3}
case "$replicas" in 1 | 2 | 3) ;; *) echo "PLATFORM_CLUSTER_REPLICAS must be 1, 2 or 3" >&2; exit 2 ;; esac
host=127.0.0.1

usage() { echo "usage: $0 start|status|stop [DIR]" >&2; exit 2; }

etcd_client() { echo "http://$host:$((base + $1 - 1))"; }
etcd_peer() { echo "http://$host:$((base + 2 + $1))"; }
pg_port=$((base + 6))
http_port() { echo $((base + 6 + $1)); }

# PostgreSQL refuses to run as root: as root its programs run as the postgres user, in a
# directory that user can reach.
as_pg=()
if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi
pg_bin() {
	if command -v "$1" >/dev/null; then command -v "$1"; return; fi
	local found
	found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$found" ] && [ -x "$found/$1" ] || { echo "$1 not found: install PostgreSQL (Debian: postgresql)" >&2; exit 1; }
	echo "$found/$1"
}
pg_dir() {
	if [ -f "$dir/postgres.path" ]; then cat "$dir/postgres.path"; return; fi
	local d="$dir/postgres"
	if [ ${#as_pg[@]} -gt 0 ]; then
		mkdir -p "$d" && chown postgres "$d"
		# A private parent (a home directory) keeps the postgres user out: use a directory of its own.
		if ! "${as_pg[@]}" test -w "$d"; then rmdir "$d"; d=$(mktemp -d /tmp/platform-cluster-pg.XXXXXX); chown postgres "$d"; fi
	fi
	mkdir -p "$d"
	(cd "$d" && pwd) > "$dir/postgres.path"
	cat "$dir/postgres.path"
}

wait_for() { # what, seconds, command...
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 4; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.25
	done
	echo "$what: not ready after ${secs}s" >&2
	return 1
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_etcd() {
	local i cluster=""
	for i in 1 2 3; do cluster+="${cluster:+,}member-$i=$(etcd_peer $i)"; done
	for i in 1 2 3; do
		alive "$dir/etcd-$i.pid" && continue
		local state=new
		[ -d "$dir/etcd-$i/member" ] && state=existing
		etcd --name "member-$i" --data-dir "$dir/etcd-$i" \
			--listen-client-urls "$(etcd_client $i)" --advertise-client-urls "$(etcd_client $i)" \
			--listen-peer-urls "$(etcd_peer $i)" --initial-advertise-peer-urls "$(etcd_peer $i)" \
			--initial-cluster "$cluster" --initial-cluster-state "$state" --initial-cluster-token platform-cluster \
			>"$dir/etcd-$i.log" 2>&1 &
		echo $! >"$dir/etcd-$i.pid"
	done
	for i in 1 2 3; do wait_for "etcd member-$i" 30 curl -sf "$(etcd_client $i)/health"; done
}

start_postgres() {
	local d
	d=$(pg_dir)
	if [ ! -f "$d/data/PG_VERSION" ]; then
		"${as_pg[@]}" "$(pg_bin initdb)" -D "$d/data" -A trust -U postgres -E UTF8 >"$dir/initdb.log" 2>&1
	fi
	if ! "${as_pg[@]}" "$(pg_bin pg_ctl)" -D "$d/data" status >/dev/null 2>&1; then
		"${as_pg[@]}" "$(pg_bin pg_ctl)" -D "$d/data" -l "$d/server.log" -w -t 60 \
			-o "-p $pg_port -c listen_addresses=$host -k $d -c max_connections=200" start >/dev/null
	fi
	if ! "${as_pg[@]}" "$(pg_bin psql)" -h "$host" -p "$pg_port" -U postgres -Atc "SELECT 1 FROM pg_database WHERE datname = 'platform'" | grep -q 1; then
		"${as_pg[@]}" "$(pg_bin psql)" -h "$host" -p "$pg_port" -U postgres -qc "CREATE DATABASE platform"
	fi
}

start_replica() { # N
	local n=$1 data="$dir/replica-$1" extra=()
	read -r -a extra <<<"${PLATFORM_SERVE_ARGS:-}"
	alive "$data.pid" && return 0
	mkdir -p "$data/pki"
	chmod 700 "$data" "$data/pki"
	# One CA for all: each replica issues its serving and client certificates from it, so one
	# kubeconfig's CA trusts every replica.
	cp -p "$dir/shared/pki/ca.crt" "$dir/shared/pki/ca.key" "$data/pki/" 2>/dev/null || true
	Platform__Secrets__LocalVault__KeyFile="$dir/shared/local-vault.key" \
		Platform__Artifacts__Directory="$dir/shared/artifacts" \
		"$bin" serve --data-dir "$data" --http-addr "$host:$(http_port "$n")" --kube-addr "$host:0" \
		--etcd-servers "$(etcd_client 1),$(etcd_client 2),$(etcd_client 3)" \
		--database-url "postgres://postgres@$host:$pg_port/platform?sslmode=disable" ${extra[@]+"${extra[@]}"} \
		>"$data.log" 2>&1 &
	echo $! >"$data.pid"
}

start() {
	mkdir -p "$dir/shared/artifacts" "$dir/shared/pki"
	chmod 700 "$dir/shared"
	dir=$(cd "$dir" && pwd)
	command -v etcd >/dev/null || { echo "etcd not found: install etcd (Debian: etcd-server)" >&2; exit 1; }
	start_etcd
	start_postgres
	# The first replica creates the CA (once); the others start with a copy of it.
	start_replica 1
	wait_for "replica 1's CA" 60 test -s "$dir/replica-1/pki/ca.key"
	cp -p "$dir/replica-1/pki/ca.crt" "$dir/replica-1/pki/ca.key" "$dir/shared/pki/"
	for ((n = 2; n <= replicas; n++)); do start_replica "$n"; done
	for ((n = 1; n <= replicas; n++)); do
		if ! wait_for "replica $n" 120 curl -sf "http://$host:$(http_port "$n")/readyz"; then
			tail -n 20 "$dir/replica-$n.log" >&2
			exit 1
		fi
	done
	for ((n = 1; n <= replicas; n++)); do echo "replica $n ready at http://$host:$(http_port "$n")"; done
}

status() {
	local n code=0
	for n in 1 2 3; do
		echo "replica $n: $(curl -s "http://$host:$(http_port "$n")/readyz" || echo down)" || true
	done
	for n in 1 2 3; do
		curl -sf "$(etcd_client "$n")/health" >/dev/null && echo "etcd member-$n: healthy" || { echo "etcd member-$n: down"; code=1; }
	done
	return $code
}

stop_pid() { # pidfile
	local pid
	[ -f "$1" ] || return 0
	pid=$(cat "$1")
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		for ((i = 0; i < 120; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
	fi
	rm -f "$1"
}

stop() {
	[ -d "$dir" ] || return 0
	local n
	for n in 1 2 3; do stop_pid "$dir/replica-$n.pid" & done
	wait
	# One member at a time: members stopping together wait on each other's leadership transfer.
	for n in 1 2 3; do stop_pid "$dir/etcd-$n.pid"; done
	if [ -f "$dir/postgres.path" ] && [ -f "$(cat "$dir/postgres.path")/data/postmaster.pid" ]; then
		"${as_pg[@]}" "$(pg_bin pg_ctl)" -D "$(cat "$dir/postgres.path")/data" -m fast -w stop >/dev/null
	fi
	echo "cluster in $dir stopped"
}

case "$cmd" in
start) start ;;
status) status ;;
stop) stop ;;
*) usage ;;
esac
