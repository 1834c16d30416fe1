#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZ_TIME each (default 3s), so that `make test`
# exercises the parsers of untrusted input beyond their seed corpus. A new Fuzz function is
# picked up without changing this script.
set -euo pipefail
fuzz_time="${FUZZ_TIME:-3s}"
status=0
while IFS=: read -r file _ line; do
	name="$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/' <<<"$line")"
	pkg="./$(dirname "$file")"
	echo "fuzz: $pkg $name ($fuzz_time)"
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzz_time" "$pkg"; then
		status=1
	fi
done < <(git ls-files -z -- '*_test.go' | xargs -0 grep -nE '^func Fuzz[A-Za-z0-9_]*\(' || true)
exit "$status"
