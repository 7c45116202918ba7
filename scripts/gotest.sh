#!/usr/bin/env bash
# The go test run of `make test`, as one `go test -json` stream for gotestsum
# --raw-command. Every package runs; the exit status is non-zero when any run failed.
#
# Three go test runs go side by side:
#   - the qual package, first and at normal priority: the longest package (its rows),
#     the run's critical path, and the only one that streams;
#   - at a lower priority (nice 10), the packages where concurrency lives, with -race
#     (RACE_PKGS: the harness, its serving and GPU pool and the overlapped order's
#     background commands, the contract double's servers, the reference server);
#   - at the same lower priority, every other package without -race (the checker,
#     reports, inventory and tools: single-threaded code, several times slower under
#     the race detector for nothing).
# The qual rows wait on their programs (AIPerf, pytest, containers): alone, the package
# left 40% of this 2-core machine idle (vmstat, 2026-12-04). The lower-priority runs fill
# those gaps instead of slowing the rows down.
# Their events follow the qual package's once all three are done (gotestsum reads whole
# lines, so two runs are never interleaved mid-line).
#
# Without -race, the qual package's harness code is race-checked by the harness's own
# tests (the fake family: rows side by side, signals and the overlapped order included).
#
# Environment: RACE_PKGS, TEST_TIMEOUT, SKIP (the -skip pattern), TAGS ("" or -tags X),
# NICE (the lower priority's niceness, default 10).
set -uo pipefail
first=qualkit/qual
race=$(go list $TAGS $RACE_PKGS) || exit 2
rest=$(go list $TAGS ./... | grep -vxF -e "$race" -e "$first") || exit 2
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
gotest() { # ARGS...: go test -json with the flags every run shares
	go test -json $TAGS -count=1 -timeout "$TEST_TIMEOUT" -skip "$SKIP" "$@"
}
run() { # NAME ARGS...: gotest ARGS at the lower priority, into $logs/NAME (run it with &:
	# the subshell lowers its own priority, which its children inherit)
	local name=$1
	shift
	renice -n "${NICE:-10}" -p "$BASHPID" > /dev/null
	gotest "$@" > "$logs/$name" 2> "$logs/$name.err"
	echo $? > "$logs/$name.rc"
}
run race -race $race &
racepid=$!
run rest $rest &
restpid=$!
gotest "$first"
status=$?
wait "$racepid" "$restpid"
for name in race rest; do
	cat "$logs/$name"
	cat "$logs/$name.err" >&2
	[ "$(cat "$logs/$name.rc")" = 0 ] || status=1
done
exit $(( status != 0 ))
