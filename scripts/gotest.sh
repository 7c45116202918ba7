#!/usr/bin/env bash
# The go test run of `make test`, as one `go test -json` stream for gotestsum
# --raw-command: -race on the packages where concurrency lives (RACE_PKGS: the harness,
# its serving and GPU pool, the contract double's servers, the reference server, and the
# qual rows that run side by side and handle signals), without it on the others (the
# checker, reports, inventory and tools: single-threaded code, several times slower under
# the race detector for nothing). Every package runs; the exit status is non-zero when
# either run failed.
#
# Environment: RACE_PKGS, TEST_TIMEOUT, SKIP (the -skip pattern), TAGS ("" or -tags X).
set -uo pipefail
race=$(go list $TAGS $RACE_PKGS) || exit 2
norace=$(go list $TAGS ./... | grep -vxF -e "$race") || exit 2
go test -json $TAGS -race -count=1 -timeout "$TEST_TIMEOUT" -skip "$SKIP" $race
a=$?
go test -json $TAGS -count=1 -timeout "$TEST_TIMEOUT" -skip "$SKIP" $norace
b=$?
exit $(( a != 0 || b != 0 ))
