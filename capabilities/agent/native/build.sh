#!/usr/bin/env bash
# capabilities/agent/native/build.sh — build the static in-container agent and the host's egress relay.
#
# Usage:
#   capabilities/agent/native/build.sh [--force]
#
# Compiles with musl-gcc, static, stripped, -Os, no dependencies:
#   pai-agent.c         -> build/pai-agent          (runs in any Linux image of this machine's architecture,
#                                                    even one without a libc)
#   pai-egress-relay.c  -> build/pai-egress-relay   (the host side of the egress fast channel)
# Both include splice-relay.h, the splice loop they share, and wire.h, the frames' integers.
#
# Idempotent: the build is keyed by a hash of the sources and this script, recorded in
# build/pai-agent.sha256 (and baked into the binaries' version strings, e.g. `0.1.0+1a2b3c4d5e6f`). When the
# recorded hash matches, nothing is rebuilt and nothing is installed. Concurrent runs are serialized with
# flock(1).
#
# Toolchain: Debian's `musl-tools` (musl-gcc, which drives the system gcc). When musl-gcc is missing the
# script installs it with apt-get (as root, or through `sudo -n`), so a fresh CI machine needs nothing else.
#
# Output: progress on stderr; the agent binary's absolute path on stdout.
#
# Environment:
#   PAI_AGENT_CC   compiler to use instead of musl-gcc (must produce a static binary)
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROGRAMS=(pai-agent pai-egress-relay)
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

SOURCES=("$HERE/splice-relay.h" "$HERE/wire.h")
for program in "${PROGRAMS[@]}"; do
  [ -f "$HERE/$program.c" ] || die "missing $HERE/$program.c"
  SOURCES+=("$HERE/$program.c")
done
hash=$( (cat "${SOURCES[@]}" "${BASH_SOURCE[0]}"; printf '%s\n' "${CFLAGS[*]}" "$(uname -m)" "${PAI_AGENT_CC:-}") | sha256sum | cut -c1-64)

up_to_date() {
  [ -z "$force" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$hash" ] || return 1
  for program in "${PROGRAMS[@]}"; do [ -x "$OUT_DIR/$program" ] || return 1; done
}

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

install_toolchain() {
  log "installing musl-tools"
  bash "$HERE/../../../scripts/apt-install" musl-tools gcc libc6-dev file || die "could not install musl-tools"
}

CC=${PAI_AGENT_CC:-musl-gcc}
if ! command -v "$CC" >/dev/null 2>&1; then
  [ -z "${PAI_AGENT_CC:-}" ] || die "PAI_AGENT_CC=$CC not found"
  install_toolchain
  command -v "$CC" >/dev/null 2>&1 || die "musl-gcc still missing after installing musl-tools"
fi

log "compiling with $CC (${hash:0:12})"
tmps=()
trap 'rm -f "${tmps[@]}"' EXIT
for program in "${PROGRAMS[@]}"; do
  tmp=$(mktemp "$OUT_DIR/.$program.XXXXXX")
  tmps+=("$tmp")
  "$CC" "${CFLAGS[@]}" -DPAI_AGENT_BUILD="\"${hash:0:12}\"" -o "$tmp" "$HERE/$program.c"

  # A dynamic binary would not run in an image without (the same) libc: refuse it.
  if command -v file >/dev/null 2>&1; then
    desc=$(file -b "$tmp")
    case $desc in
      *"statically linked"* | *"static-pie linked"*) ;;
      *) die "$program: not a static binary: $desc" ;;
    esac
  elif command -v readelf >/dev/null 2>&1 && readelf -l "$tmp" | grep -q 'Requesting program interpreter'; then
    die "$program: not a static binary (it has a program interpreter)"
  fi
  chmod 0755 "$tmp"
done
for index in "${!PROGRAMS[@]}"; do
  mv -f "${tmps[$index]}" "$OUT_DIR/${PROGRAMS[$index]}"
  log "built $OUT_DIR/${PROGRAMS[$index]} ($(wc -c <"$OUT_DIR/${PROGRAMS[$index]}") bytes)"
done
trap - EXIT
printf '%s\n' "$hash" >"$STAMP"
printf '%s\n' "$OUT"
