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
# Once the qual package ends, what is left of the lower-priority runs is the critical path:
# they go back to make test's own priority (every thread of every process under them). At
# nice 10 beside a busy host's normal-priority work they starve: beside `stress-ng --cpu 2`
# the checker's test binary got 6% of a CPU for 25 minutes (2026-12-05, d812dce). A user
# who may not raise a priority (not root, no CAP_SYS_NICE) is told so, and they stay low.
#
# Without -race, the qual package's harness code is race-checked by the harness's own
# tests (the fake family: rows side by side, signals and the overlapped order included).
#
# Environment: RACE_PKGS, TEST_TIMEOUT, SKIP (the -skip pattern), TAGS ("" or -tags X),
# NICE (the lower priority's niceness, default 10), BESIDE (PIDs of make test's other
# lower-priority jobs, lint and the Python tests: raised with these runs).
set -uo pipefail
first=qualkit/qual
base=$(nice)
low=$(( base + ${NICE:-10} ))
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
	renice --priority "$low" -p "$BASHPID" > /dev/null
	gotest "$@" > "$logs/$name" 2> "$logs/$name.err"
	echo $? > "$logs/$name.rc"
}
under() { # PID...: those processes and every process under them
	ps -eo pid=,ppid= | awk -v roots="$*" '
		BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) in_tree[r[i]] = 1 }
		{ parent[$1] = $2 }
		END {
			do {
				grew = 0
				for (p in parent)
					if (!(p in in_tree) && (parent[p] in in_tree)) { in_tree[p] = 1; grew = 1 }
			} while (grew)
			for (p in in_tree) print p
		}'
}
restore() { # PID...: every thread under PIDs back to make test's own priority (twice: a
	# process forked from a thread not yet raised would keep the low priority)
	local pass p t tids err
	for pass in 1 2; do
		tids=()
		for p in $(under "$@"); do
			for t in /proc/"$p"/task/*; do [ -e "$t" ] && tids+=("${t##*/}"); done
		done
		[ ${#tids[@]} -gt 0 ] || return
		# Threads that ended meanwhile fail harmlessly; a refusal is said once.
		err=$(renice --priority "$base" -p "${tids[@]}" 2>&1 > /dev/null)
		case $err in *"Permission denied"*)
			echo "gotest.sh: not permitted to raise the remaining packages back to nice $base: they finish at nice $low" >&2
			return ;;
		esac
	done
}
run race -race $race &
racepid=$!
run rest $rest &
restpid=$!
gotest "$first"
status=$?
restore "$racepid" "$restpid" ${BESIDE:-}
wait "$racepid" "$restpid"
for name in race rest; do
	cat "$logs/$name"
	cat "$logs/$name.err" >&2
	[ "$(cat "$logs/$name.rc")" = 0 ] || status=1
done
exit $(( status != 0 ))
