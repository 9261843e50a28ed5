#!/usr/bin/env bash
# capabilities/container-agent/fuzz/build.sh — build the libFuzzer targets of the C code that reads what a container
# (or the host) sends: relay-header (pai-egress-relay's token line and request head) and agent-frames (pai-agent's
# frame split and payload decoders). Run by libfuzzer.ts, for `npm run fuzz` (scripts/fuzz.ts) and the smoke in
# `npm test` (src/fuzz-smoke.test.ts).
#
# Usage:
#   capabilities/container-agent/fuzz/build.sh [--force]
#
# Each target is its .c here, which includes the program's own source from ../native (its main renamed), compiled
# with Debian's clang: -fsanitize=fuzzer,address,undefined, every UBSan finding fatal. clang and its sanitizer
# runtimes (libclang-rt-dev) are installed with the repository's scripts/apt-install when missing.
#
# Idempotent: keyed by a hash of the sources (../native's and these), this script, the flags and the compiler's
# version, recorded in build/targets.sha256; when it matches nothing is rebuilt. Concurrent runs are serialized
# with flock(1). Output: progress on stderr; the folder of the built targets (build/) on stdout.
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PACKAGE=$(dirname "$HERE")
BUILD=$HERE/build
TARGETS=(relay-header:pai-egress-relay agent-frames:pai-agent)
CFLAGS=(-std=c11 -g -O1 -Wall -Wextra -Werror -fno-omit-frame-pointer
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)

log() { printf 'fuzz/build: %s\n' "$*" >&2; }
die() { printf 'fuzz/build: ERROR: %s\n' "$*" >&2; exit 1; }

force=
for arg in "$@"; do
  case $arg in
    --force | -f) force=1 ;;
    -h | --help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument: $arg" ;;
  esac
done

# clang with libFuzzer and the sanitizers' runtimes: a program linked with all three.
toolchain_works() {
  command -v clang >/dev/null 2>&1 || return 1
  local probe
  probe=$(mktemp -d)
  printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' >"$probe/probe.c"
  clang -fsanitize=fuzzer,address,undefined -o "$probe/probe" "$probe/probe.c" >/dev/null 2>&1
  local ok=$?
  rm -rf "$probe"
  return $ok
}

hash_of() {
  local sources=("$HERE"/*.c "$PACKAGE"/native/*.c "$PACKAGE"/native/*.h "${BASH_SOURCE[0]}")
  (cat "${sources[@]}"; printf '%s\n' "${CFLAGS[*]}" "${TARGETS[*]}"; clang --version 2>/dev/null | head -1) |
    sha256sum | cut -c1-64
}

up_to_date() {
  [ -z "$force" ] && command -v clang >/dev/null 2>&1 && [ -f "$BUILD/targets.sha256" ] &&
    [ "$(cat "$BUILD/targets.sha256")" = "$(hash_of)" ] || return 1
  for entry in "${TARGETS[@]}"; do [ -x "$BUILD/${entry%%:*}" ] || return 1; done
}

if up_to_date; then
  printf '%s\n' "$BUILD"
  exit 0
fi
mkdir -p "$BUILD"
exec 9>"$BUILD/.lock"
flock 9
if up_to_date; then
  printf '%s\n' "$BUILD"
  exit 0
fi

if ! toolchain_works; then
  installer=$PACKAGE/../../scripts/apt-install
  [ -f "$installer" ] || die "clang with libFuzzer is missing (Debian: apt-get install clang libclang-rt-dev)"
  log "installing clang and its sanitizer runtimes"
  bash "$installer" clang libclang-rt-dev || die "could not install clang libclang-rt-dev"
  toolchain_works || die "clang cannot link a libFuzzer target with ASan and UBSan even after installing them"
fi

for entry in "${TARGETS[@]}"; do
  target=${entry%%:*} program=${entry#*:}
  log "compiling $target (includes native/$program.c)"
  tmp=$(mktemp "$BUILD/.$target.XXXXXX")
  if ! clang "${CFLAGS[@]}" -Dmain="${program//-/_}_main" -o "$tmp" "$HERE/$target.c"; then
    rm -f "$tmp"
    die "$target does not compile"
  fi
  mv -f "$tmp" "$BUILD/$target"
done
hash_of >"$BUILD/targets.sha256"
printf '%s\n' "$BUILD"
