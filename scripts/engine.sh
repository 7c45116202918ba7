#!/usr/bin/env bash
# Makes sure a Docker engine answers: the one script that `make test` and .ci/run use.
# When none answers and this machine can start one (root, Debian's apt), it installs
# docker.io if needed and starts dockerd in the background (log: $DOCKERD_LOG); where it
# cannot, it fails at once with the exact commands to run.
set -euo pipefail
log=${DOCKERD_LOG:-/tmp/qualkit-dockerd.log}

# answers VERB: an engine answers; it is named with VERB (answers, started).
answers() {
  docker info >/dev/null 2>&1 &&
    docker info --format "engine: docker {{.ServerVersion}} $1 (storage {{.Driver}}, cgroup v{{.CgroupVersion}})"
}
answers answers && exit 0

manual="sudo apt-get install -y docker.io && sudo sh -c 'dockerd > $log 2>&1 &'"
if [[ $(id -u) != 0 ]]; then
  echo "engine: no Docker engine answers, and starting one needs root. Run: $manual" >&2
  echo "engine: (or point DOCKER_HOST at an engine you run, then rerun)" >&2
  exit 1
fi
# One start at a time on this machine (a run beside this one may be starting it), as
# scripts/browser.sh; after the wait, the other run's engine may answer.
exec 8>/run/lock/qualkit-apt.lock
flock 8
answers answers && exit 0
if ! command -v dockerd >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "engine: no Docker engine answers, dockerd is not installed, and there is no apt-get to install it: install a Docker engine, start it, then rerun" >&2
    exit 1
  fi
  echo "engine: installing docker.io (Debian's package)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq 8>&-
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq docker.io >/dev/null 8>&-
fi
if [[ -n ${DOCKER_HOST:-} ]]; then
  echo "engine: DOCKER_HOST=$DOCKER_HOST does not answer; unset it to use the engine this script starts" >&2
  exit 1
fi

echo "engine: starting dockerd (log $log)"
# setsid: the engine outlives this script and the make that ran it.
setsid dockerd >"$log" 2>&1 < /dev/null 8>&- &
for _ in $(seq 1 60); do
  answers started && exit 0
  sleep 1
done
echo "engine: dockerd did not answer within 60 s; the end of $log:" >&2
tail -n 30 "$log" >&2 || true
exit 1
