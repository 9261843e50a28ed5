/**
 * The POSIX `sh` scripts behind the facade's file methods. Each runs as the sandbox user, takes the workspace
 * as `$1` and resolves every path with `realpath -m` inside the container, so a symlink pointing out of the
 * workspace is caught where it lives. Outcomes are exit codes ({@link scriptExit}).
 */
export const scriptExit = {
  ok: 0,
  realpathFailed: 90,
  outside: 91,
  missing: 92,
  notAFile: 93,
  isADirectory: 94,
  notADirectory: 95,
} as const;

const prelude = `ws=$1; shift
inside() { case "$1" in "$ws"|"$ws"/*) return 0 ;; *) return 1 ;; esac; }
resolve() { r=$(realpath -m -- "$1") || exit ${scriptExit.realpathFailed}; inside "$r" || { printf '%s\\n' "$r" >&2; exit ${scriptExit.outside}; }; }
`;

/** `read <path>`: the file's bytes on stdout. */
export const readScript = `${prelude}resolve "$1"
[ -e "$r" ] || exit ${scriptExit.missing}
[ -d "$r" ] && exit ${scriptExit.isADirectory}
[ -f "$r" ] || exit ${scriptExit.notAFile}
exec cat -- "$r"`;

/**
 * `write <path>...`: checks every target (one `realpath` for all of them; paths never hold a newline), then
 * extracts the tar on stdin (names relative to the workspace). A refused target is named on stderr after the
 * path it resolved to.
 */
export const writeScript = `${prelude}set -f
resolved=$(realpath -m -- "$@") || exit ${scriptExit.realpathFailed}
IFS='
'
i=0
for r in $resolved; do
  i=$((i + 1)); eval "p=\\\${$i}"
  inside "$r" || { printf '%s\\n%s\\n' "$r" "$p" >&2; exit ${scriptExit.outside}; }
  [ -d "$r" ] && { printf '%s\\n%s\\n' "$r" "$p" >&2; exit ${scriptExit.isADirectory}; }
done
exec tar -x -p -f - -C "$ws" --no-same-owner --no-overwrite-dir`;

/** `stat <path>`: `<resolved path>\\0<hex mode> <size> <mtime seconds.millis>`. */
export const statScript = `${prelude}resolve "$1"
[ -e "$r" ] || exit ${scriptExit.missing}
printf '%s\\0' "$r"
exec stat -c '%f %s %.3Y' -- "$r"`;

/** `list <dir> <maxdepth or empty>`: `<type letter> <size> <path>\\0` per entry, symlinks not followed. */
export const listScript = `${prelude}resolve "$1"
[ -e "$r" ] || exit ${scriptExit.missing}
[ -d "$r" ] || exit ${scriptExit.notADirectory}
if [ -n "$2" ]; then exec find "$r" -mindepth 1 -maxdepth "$2" -printf '%y %s %p\\0'; fi
exec find "$r" -mindepth 1 -printf '%y %s %p\\0'`;

/** `remove <path> <r if recursive>`: removes a file or symlink itself (its parent is what gets resolved). */
export const removeScript = `${prelude}resolve "$(dirname -- "$1")"
t="$r/$(basename -- "$1")"
[ "$t" = "$ws" ] && exit ${scriptExit.outside}
if [ ! -e "$t" ] && [ ! -L "$t" ]; then exit ${scriptExit.missing}; fi
if [ -d "$t" ] && [ ! -L "$t" ]; then
  [ "$2" = r ] || exit ${scriptExit.isADirectory}
  exec rm -rf -- "$t"
fi
exec rm -f -- "$t"`;

/** `upload <dir>`: creates the directory and extracts the tar on stdin into it. */
export const uploadScript = `${prelude}resolve "$1"
if [ -e "$r" ] && [ ! -d "$r" ]; then exit ${scriptExit.notADirectory}; fi
mkdir -p -- "$r" || exit 1
exec tar -x -p -f - -C "$r" --no-same-owner --no-overwrite-dir`;

/** `upload-target <dir>`: creates the directory (as the sandbox user) and prints its resolved path. */
export const uploadTargetScript = `${prelude}resolve "$1"
if [ -e "$r" ] && [ ! -d "$r" ]; then exit ${scriptExit.notADirectory}; fi
mkdir -p -- "$r" || exit 1
printf '%s' "$r"`;

/** `directory <dir>`: prints the resolved path of an existing directory. */
export const directoryScript = `${prelude}resolve "$1"
[ -e "$r" ] || exit ${scriptExit.missing}
[ -d "$r" ] || exit ${scriptExit.notADirectory}
printf '%s' "$r"`;

/** Prints the memory cgroup's OOM-kill count (cgroup v1 `memory.oom_control` or v2 `memory.events`). */
export const oomCountScript =
  "cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null || cat /sys/fs/cgroup/memory.events 2>/dev/null";
