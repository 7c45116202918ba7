#!/usr/bin/env bash
# Makes the project venv: the pinned AIPerf, pytest and NumPy for the correctness cases,
# and the local tokenizer that keeps AIPerf offline. Idempotent: a venv whose stamp
# matches the pins is left alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$root/.venv}
py=${PYTHON:-python3}

want=$(cat "$root/scripts/requirements.txt" "$root/scripts/constraints.txt" "$root/scripts/make_tokenizer.py" | sha256sum | cut -c1-16)
stamp="$venv/.qualkit-setup"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/aiperf" ]]; then
  echo "setup: $venv is up to date (aiperf $("$venv/bin/aiperf" --version 2>/dev/null | tail -n1))"
  exit 0
fi

if ! command -v "$py" >/dev/null; then
  echo "setup: $py not found: install Python 3.11, 3.12 or 3.13 (AIPerf 0.13.0 needs >=3.11,<3.14)" >&2
  exit 1
fi
ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case "$ver" in
  3.11|3.12|3.13) ;;
  *) echo "setup: $py is Python $ver; AIPerf 0.13.0 needs >=3.11,<3.14 (set PYTHON=...)" >&2; exit 1 ;;
esac

echo "setup: creating $venv with Python $ver"
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --no-input --disable-pip-version-check -q \
  -r "$root/scripts/requirements.txt" -c "$root/scripts/constraints.txt"
"$venv/bin/python" "$root/scripts/make_tokenizer.py" "$venv/qualkit-hf"
got=$("$venv/bin/aiperf" --version 2>/dev/null | tail -n1)
if [[ "$got" != "0.13.0" ]]; then
  echo "setup: installed aiperf reports version '$got', want 0.13.0" >&2
  exit 1
fi
echo "$want" > "$stamp"
echo "setup: done (aiperf $got, tokenizer $venv/qualkit-hf)"
