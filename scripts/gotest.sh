#!/usr/bin/env bash
# The go test run of `make test`, as one `go test -json` stream for gotestsum
# --raw-command: -race on the packages where concurrency lives (RACE_PKGS: the harness,
# its serving and GPU pool and the overlapped order's background commands, the contract
# double's servers, the reference server), without it on the others (the qual rows,
# subprocess-bound end to end, whose harness code the harness's own tests race-check;
# the checker, reports, inventory and tools: single-threaded code, several times slower
# under the race detector for nothing). Every package runs; the exit status is non-zero
# when either run failed.
#
# The two runs go side by side: the one without -race holds the qual package, the
# longest, and streams; the -race one's events follow once both are done (gotestsum reads
# whole lines, so the two are never interleaved mid-line).
#
# Environment: RACE_PKGS, TEST_TIMEOUT, SKIP (the -skip pattern), TAGS ("" or -tags X).
set -uo pipefail
race=$(go list $TAGS $RACE_PKGS) || exit 2
norace=$(go list $TAGS ./... | grep -vxF -e "$race") || exit 2
racelog=$(mktemp)
trap 'rm -f "$racelog" "$racelog.err"' EXIT
go test -json $TAGS -race -count=1 -timeout "$TEST_TIMEOUT" -skip "$SKIP" $race > "$racelog" 2> "$racelog.err" &
racepid=$!
go test -json $TAGS -count=1 -timeout "$TEST_TIMEOUT" -skip "$SKIP" $norace
b=$?
wait "$racepid"
a=$?
cat "$racelog"
cat "$racelog.err" >&2
exit $(( a != 0 || b != 0 ))
