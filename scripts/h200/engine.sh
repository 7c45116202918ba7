#!/usr/bin/env bash
# Sourced ON the H200 by container.sh and run.sh (RUN_RUNTIME=container): starts a Docker
# engine with the NVIDIA runtime in CDI mode from the carried pack, the steps of
# shared/h200-gpu-containers/start-engine.sh: dockerd, containerd and runc from Debian's
# docker.io 20.10; the NVIDIA Container Toolkit's nvidia-ctk writes the CDI spec of this
# host's GPUs; nvidia-container-runtime (mode cdi) is the default runtime; no bridge, no
# iptables (the device has neither). The pack is .gpupack/pack.tar.xz, or its parts in
# .gpupack-*/ (carried in two calls: container.sh split). Defines engine_api and
# engine_stop.
engine_api() { curl -s --unix-socket /var/run/docker.sock "http://x$1"; }

engine_start() {
  local pack=/tmp/qualkit-pack.tar.xz libs
  if [[ -f .gpupack/pack.tar.xz ]]; then cp .gpupack/pack.tar.xz "$pack"; else cat .gpupack-*/pack.tar.xz.part-* > "$pack"; fi
  libs=$(ls -d .gpupack/lib .gpupack-b/lib 2>/dev/null | head -n1)
  mkdir -p /opt/dk/lib
  tar xJf "$pack" -C /opt/dk || { echo "engine.sh: the pack does not unpack" >&2; return 1; }
  cp /opt/dk/bin/nvidia-cdi-hook /usr/bin/nvidia-cdi-hook   # the CDI spec calls it at this path
  for l in "$libs"/*; do ldconfig -p | grep -q "$(basename "$l")" || cp "$l" /opt/dk/lib/; done
  export PATH=/opt/dk/bin:$PATH LD_LIBRARY_PATH=/opt/dk/lib
  mkdir -p /etc/docker /etc/nvidia-container-runtime /etc/cdi
  nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml 2>&1 | tail -n1
  printf '[nvidia-container-runtime]\nmode = "cdi"\n' > /etc/nvidia-container-runtime/config.toml
  echo '{"runtimes":{"nvidia":{"path":"/opt/dk/bin/nvidia-container-runtime"}},"default-runtime":"nvidia","iptables":false,"bridge":"none","ip-forward":false,"ip-masq":false}' > /etc/docker/daemon.json
  setsid env PATH="$PATH" LD_LIBRARY_PATH="$LD_LIBRARY_PATH" dockerd > /tmp/dockerd.log 2>&1 < /dev/null &
  for _ in $(seq 1 30); do engine_api /_ping >/dev/null 2>&1 && break; sleep 1; done
  engine_api /_ping >/dev/null 2>&1 || { echo "dockerd did not answer:"; tail -20 /tmp/dockerd.log; return 1; }
  echo "  engine: $(engine_api /version | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["Version"], "API", v["ApiVersion"])')"
  engine_api /info | python3 -c 'import json,sys; i=json.load(sys.stdin); print("  runtimes:", sorted(i["Runtimes"]), "default:", i["DefaultRuntime"], "cgroup:", i["CgroupVersion"], "storage:", i["Driver"])'
}

# engine_stop stops dockerd and waits for it and containerd to exit; it fails when
# containers are left.
engine_stop() {
  local left
  left=$(engine_api '/containers/json?all=1' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
  echo "  containers left: $left"
  pkill -TERM dockerd
  for _ in $(seq 1 40); do pgrep -x dockerd >/dev/null || pgrep -x containerd >/dev/null || break; sleep 0.5; done
  if pgrep -x dockerd >/dev/null || pgrep -x containerd >/dev/null; then echo "engine.sh: the engine did not stop" >&2; return 1; fi
  [[ $left == 0 ]]
}
