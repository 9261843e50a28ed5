#!/usr/bin/env bash
# capabilities/container-agent/native/build.sh — build the static in-container agent and the host's helpers for every
# architecture @pai/container-agent ships.
#
# Usage:
#   capabilities/container-agent/native/build.sh [--force] [x64|arm64 ...]    (default: both)
#
# Compiles, static, stripped, -Os, no dependencies, into the package's prebuilt folder (architectures in Node's
# names, as `process.arch` says them: x64 is x86_64, arm64 is aarch64):
#   pai-agent.c         -> prebuilt/linux-<arch>/pai-agent          (runs in any Linux image of that architecture,
#                                                                     even one without a libc)
#   pai-egress-relay.c  -> prebuilt/linux-<arch>/pai-egress-relay   (the host side of the egress fast channel)
#   pai-splice.c        -> prebuilt/linux-<arch>/pai-splice         (moves a preview's large body in the kernel)
#   pai-port-connect.c  -> prebuilt/linux-<arch>/pai-port-connect   (connects a preview to a container's port)
# The first two include splice-relay.h, the splice loop they share, and wire.h, the frames' integers. At run time nothing is
# compiled: the package looks the binaries up there (src/prebuilt-binary.ts). The pack step and scripts/setup run
# this script; a published package carries prebuilt/ and not this folder.
#
# Toolchains (Debian's, installed with the repository's scripts/apt-install when missing):
#   - this machine's own architecture: musl-gcc (musl-tools), the smallest binaries (~70 KB);
#   - the other one: the cross gcc with its static glibc (gcc-aarch64-linux-gnu + libc6-dev-arm64-cross on an
#     x86_64 machine, gcc-x86-64-linux-gnu + libc6-dev-amd64-cross on an aarch64 one; ~600 KB). Debian has no musl
#     cross toolchain. The programs need nothing from glibc that a static binary cannot do (no NSS, no dlopen).
# Each result must be a static ELF executable of its architecture, or the build fails.
#
# Idempotent: each architecture's build is keyed by a hash of the sources, this script, the flags and this
# machine's architecture, recorded in build/linux-<arch>.sha256 (build/ is scratch, never shipped). When the
# recorded hash matches, nothing is rebuilt and nothing is installed. The binaries' version strings carry a hash of
# the sources alone (e.g. `0.2.0+1a2b3c4d5e6f`), the same for every architecture. Concurrent runs are serialized
# with flock(1).
#
# Output: progress on stderr; the prebuilt folder's absolute path on stdout.
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PACKAGE=$(dirname "$HERE")
PROGRAMS=(pai-agent pai-egress-relay pai-splice pai-port-connect)
ARCHITECTURES=(x64 arm64)
PREBUILT=$PACKAGE/prebuilt
SCRATCH=$HERE/build
CFLAGS=(-std=c11 -Os -s -static -Wall -Wextra
  -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables
  -fstack-protector-strong -Wl,--gc-sections -Wl,-z,noexecstack -Wl,--build-id=none)

log() { printf 'agent/build: %s\n' "$*" >&2; }
die() { printf 'agent/build: ERROR: %s\n' "$*" >&2; exit 1; }

force=
targets=()
for arg in "$@"; do
  case $arg in
    --force | -f) force=1 ;;
    x64 | arm64) targets+=("$arg") ;;
    -h | --help) sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument: $arg (architectures: ${ARCHITECTURES[*]})" ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${ARCHITECTURES[@]}")

SOURCES=("$HERE/splice-relay.h" "$HERE/wire.h" "$HERE/least-privilege.h")
for program in "${PROGRAMS[@]}"; do
  [ -f "$HERE/$program.c" ] || die "missing $HERE/$program.c"
  SOURCES+=("$HERE/$program.c")
done
source_hash=$(cat "${SOURCES[@]}" | sha256sum | cut -c1-12)

case $(uname -m) in
  x86_64) machine=x64 ;;
  aarch64 | arm64) machine=arm64 ;;
  *) machine=$(uname -m) ;;
esac

# The compiler for `$1`, the Debian packages that provide it, and what `file` says of a binary of it.
toolchain() {
  local arch=$1
  if [ "$arch" = "$machine" ]; then
    cc=musl-gcc packages=(musl-tools)
  elif [ "$arch" = arm64 ]; then
    cc=aarch64-linux-gnu-gcc packages=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
  else
    cc=x86_64-linux-gnu-gcc packages=(gcc-x86-64-linux-gnu libc6-dev-amd64-cross)
  fi
  case $arch in
    x64) elf_machine="x86-64" ;;
    arm64) elf_machine="ARM aarch64" ;;
  esac
}

hash_of() {
  (cat "${SOURCES[@]}" "${BASH_SOURCE[0]}"; printf '%s\n' "${CFLAGS[*]}" "$machine" "$1") | sha256sum | cut -c1-64
}

up_to_date() {
  local arch=$1 hash=$2
  [ -z "$force" ] && [ -f "$SCRATCH/linux-$arch.sha256" ] && [ "$(cat "$SCRATCH/linux-$arch.sha256")" = "$hash" ] ||
    return 1
  for program in "${PROGRAMS[@]}"; do [ -x "$PREBUILT/linux-$arch/$program" ] || return 1; done
}

stale=()
for arch in "${targets[@]}"; do
  if up_to_date "$arch" "$(hash_of "$arch")"; then
    log "linux-$arch up to date (${source_hash})"
  else
    stale+=("$arch")
  fi
done
if [ ${#stale[@]} -eq 0 ]; then
  printf '%s\n' "$PREBUILT"
  exit 0
fi

mkdir -p "$SCRATCH"
# Serialize concurrent builds (parallel setups); what was stale is re-checked once we hold the lock.
exec 9>"$SCRATCH/.lock"
flock 9

install_packages() {
  local installer=$PACKAGE/../../scripts/apt-install
  [ -f "$installer" ] || die "missing ${*}: install them (Debian: apt-get install ${*})"
  log "installing ${*}"
  bash "$installer" "$@" || die "could not install ${*}"
}

tmps=()
trap 'rm -f "${tmps[@]}"' EXIT
for arch in "${stale[@]}"; do
  hash=$(hash_of "$arch")
  if up_to_date "$arch" "$hash"; then
    log "linux-$arch up to date (${source_hash})"
    continue
  fi
  toolchain "$arch"
  command -v file >/dev/null 2>&1 || install_packages file
  if ! command -v "$cc" >/dev/null 2>&1; then
    install_packages "${packages[@]}"
    command -v "$cc" >/dev/null 2>&1 || die "$cc still missing after installing ${packages[*]}"
  fi

  log "linux-$arch: compiling with $cc (${source_hash})"
  built=()
  for program in "${PROGRAMS[@]}"; do
    tmp=$(mktemp "$SCRATCH/.$program-$arch.XXXXXX")
    tmps+=("$tmp")
    built+=("$tmp")
    "$cc" "${CFLAGS[@]}" -DPAI_AGENT_BUILD="\"$source_hash\"" -o "$tmp" "$HERE/$program.c"
    # A dynamic binary would not run in an image without (the same) libc, a binary of another machine not at all.
    desc=$(file -b "$tmp")
    case $desc in
      *"statically linked"* | *"static-pie linked"*) ;;
      *) die "$program ($arch): not a static binary: $desc" ;;
    esac
    case $desc in
      "ELF 64-bit LSB executable, $elf_machine,"*) ;;
      *) die "$program ($arch): not an ELF executable for $elf_machine: $desc" ;;
    esac
    chmod 0755 "$tmp"
  done
  mkdir -p "$PREBUILT/linux-$arch"
  for index in "${!PROGRAMS[@]}"; do
    target=$PREBUILT/linux-$arch/${PROGRAMS[$index]}
    mv -f "${built[$index]}" "$target"
    log "built $target ($(wc -c <"$target") bytes)"
  done
  printf '%s\n' "$hash" >"$SCRATCH/linux-$arch.sha256"
done
printf '%s\n' "$PREBUILT"
