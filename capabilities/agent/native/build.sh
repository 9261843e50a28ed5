#!/usr/bin/env bash
# capabilities/sandbox/agent/build.sh — build the static in-container agent.
#
# Usage:
#   capabilities/sandbox/agent/build.sh [--force]
#
# Compiles pai-agent.c with musl-gcc into build/pai-agent: static, stripped, -Os, no dependencies, so it
# runs in any Linux image of this machine's architecture (even one without a libc).
#
# Idempotent: the build is keyed by a hash of pai-agent.c and this script, recorded in
# build/pai-agent.sha256 (and baked into the binary's version string, e.g. `0.1.0+1a2b3c4d5e6f`). When the
# recorded hash matches, nothing is rebuilt and nothing is installed. Concurrent runs are serialized with
# flock(1).
#
# Toolchain: Debian's `musl-tools` (musl-gcc, which drives the system gcc). When musl-gcc is missing the
# script installs it with apt-get (as root, or through `sudo -n`), so a fresh CI machine needs nothing else.
#
# Output: progress on stderr; the binary's absolute path on stdout.
#
# Environment:
#   PAI_AGENT_CC   compiler to use instead of musl-gcc (must produce a static binary)
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$HERE/pai-agent.c
OUT_DIR=$HERE/build
OUT=$OUT_DIR/pai-agent
STAMP=$OUT.sha256
CFLAGS=(-std=c11 -Os -s -static -Wall -Wextra
  -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables
  -fstack-protector-strong -Wl,--gc-sections -Wl,-z,noexecstack -Wl,--build-id=none)

log() { printf 'agent/build: %s\n' "$*" >&2; }
die() { printf 'agent/build: ERROR: %s\n' "$*" >&2; exit 1; }

force=
for arg in "$@"; do
  case $arg in
    --force | -f) force=1 ;;
    -h | --help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument: $arg" ;;
  esac
done

[ -f "$SRC" ] || die "missing $SRC"
hash=$( (cat "$SRC" "${BASH_SOURCE[0]}"; printf '%s\n' "${CFLAGS[*]}" "$(uname -m)" "${PAI_AGENT_CC:-}") | sha256sum | cut -c1-64)

up_to_date() { [ -z "$force" ] && [ -x "$OUT" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$hash" ]; }

if up_to_date; then
  log "up to date (${hash:0:12})"
  printf '%s\n' "$OUT"
  exit 0
fi

mkdir -p "$OUT_DIR"
# Serialize concurrent builds (parallel test workers); re-check once we hold the lock.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$OUT_DIR/.lock"
  flock 9
  if up_to_date; then
    log "up to date (${hash:0:12})"
    printf '%s\n' "$OUT"
    exit 0
  fi
fi

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"
  else die "need root (or sudo) to run: $*"
  fi
}

install_toolchain() {
  command -v apt-get >/dev/null 2>&1 || die "musl-gcc not found and apt-get is unavailable; install musl-tools"
  log "installing musl-tools with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  if ! as_root apt-get install -y -q --no-install-recommends musl-tools gcc libc6-dev file >&2; then
    as_root apt-get update -q >&2
    as_root apt-get install -y -q --no-install-recommends musl-tools gcc libc6-dev file >&2
  fi
}

CC=${PAI_AGENT_CC:-musl-gcc}
if ! command -v "$CC" >/dev/null 2>&1; then
  [ -z "${PAI_AGENT_CC:-}" ] || die "PAI_AGENT_CC=$CC not found"
  install_toolchain
  command -v "$CC" >/dev/null 2>&1 || die "musl-gcc still missing after installing musl-tools"
fi

log "compiling with $CC (${hash:0:12})"
tmp=$(mktemp "$OUT_DIR/.pai-agent.XXXXXX")
trap 'rm -f "$tmp"' EXIT
"$CC" "${CFLAGS[@]}" -DPAI_AGENT_BUILD="\"${hash:0:12}\"" -o "$tmp" "$SRC"

# A dynamic binary would not run in an image without (the same) libc: refuse it.
if command -v file >/dev/null 2>&1; then
  desc=$(file -b "$tmp")
  case $desc in
    *"statically linked"* | *"static-pie linked"*) ;;
    *) die "not a static binary: $desc" ;;
  esac
elif command -v readelf >/dev/null 2>&1 && readelf -l "$tmp" | grep -q 'Requesting program interpreter'; then
  die "not a static binary (it has a program interpreter)"
fi

chmod 0755 "$tmp"
mv -f "$tmp" "$OUT"
trap - EXIT
printf '%s\n' "$hash" >"$STAMP"
log "built $OUT ($(wc -c <"$OUT") bytes)"
printf '%s\n' "$OUT"
