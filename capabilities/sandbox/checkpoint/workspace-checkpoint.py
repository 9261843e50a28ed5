"""PAI's checkpoint program: runs in a sandbox as the sandbox user and speaks to the host over stdin and stdout.

take <root> <cache>:
  prints one JSON line {"entries": [...]} (files, directories and symlinks under <root>, symlinks never followed,
  other special files and names that are not UTF-8 skipped), hashing only files whose (size, mtime_ns, inode,
  ctime_ns) changed since the last walk (remembered in <cache>); then reads one JSON line {"send": [paths]} and
  sends each file's bytes as frames.
restore <root> <cache>:
  reads one JSON line {"entries": [...]}: the workspace to make; removes what it lacks, makes directories and
  symlinks, sets modes, prints one JSON line {"need": [paths], "removed": n} (files missing or whose bytes differ)
  and reads each needed file's bytes as frames, writing it beside its target and renaming it into place; then
  prints {"written": n}.

A frame is a 4-byte big-endian length then that many bytes; length 0 ends a file, 0xFFFFFFFF says it could not be
read. The sender of frames never runs more than WINDOW bytes ahead of the "ack <bytes>" lines the receiver writes.
The cache is only a hint: the host checks every byte it stores against its digest.
"""

import hashlib
import json
import os
import shutil
import stat
import struct
import sys

CHUNK = 256 * 1024
WINDOW = 8 * 1024 * 1024
FAILED = 0xFFFFFFFF


def load_cache(path):
    try:
        with open(path, "r", encoding="utf-8") as handle:
            cache = json.load(handle)
        return cache if isinstance(cache, dict) else {}
    except (OSError, ValueError):
        return {}


def save_cache(path, cache):
    temporary = path + ".tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(cache, handle, separators=(",", ":"))
        os.replace(temporary, path)
    except OSError:
        pass


def key_of(info):
    return [info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns]


def hash_file(path):
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as handle:
        fd = handle.fileno()
        while True:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            digest.update(chunk)
    return digest.hexdigest()


def walk(root, cache):
    """Every entry under root as {relative path: (entry, stat)}, files hashed through the cache."""
    found = {}
    fresh = {}
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            listing = list(os.scandir(os.path.join(root, relative) if relative else root))
        except OSError:
            continue
        for item in listing:
            try:
                item.name.encode("utf-8")
            except UnicodeEncodeError:
                continue
            path = relative + "/" + item.name if relative else item.name
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                try:
                    target = os.readlink(item.path)
                    target.encode("utf-8")
                except (OSError, UnicodeEncodeError):
                    continue
                found[path] = {"path": path, "type": "symlink", "target": target}
            elif stat.S_ISDIR(info.st_mode):
                found[path] = {"path": path, "type": "directory", "mode": mode}
                pending.append(path)
            elif stat.S_ISREG(info.st_mode):
                key = key_of(info)
                known = cache.get(path)
                if isinstance(known, list) and len(known) == 5 and known[:4] == key:
                    digest = known[4]
                else:
                    try:
                        digest = hash_file(item.path)
                    except OSError:
                        continue
                fresh[path] = key + [digest]
                found[path] = {"path": path, "type": "file", "mode": mode, "size": info.st_size, "digest": digest}
    return found, fresh


def write_line(value):
    sys.stdout.buffer.write(json.dumps(value, separators=(",", ":")).encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def read_line():
    line = sys.stdin.buffer.readline()
    if not line:
        sys.exit(3)
    return json.loads(line)


def take(root, cache_path):
    found, fresh = walk(root, load_cache(cache_path))
    save_cache(cache_path, fresh)
    write_line({"entries": list(found.values())})
    request = read_line()
    out = sys.stdout.buffer
    sent = 0
    acked = 0
    for path in request.get("send", []):
        entry = found.get(path)
        try:
            if entry is None or entry["type"] != "file":
                raise OSError("not a file of the manifest")
            fd = os.open(os.path.join(root, path), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            out.write(struct.pack(">I", FAILED))
            continue
        try:
            while True:
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    break
                while sent - acked > WINDOW:
                    out.flush()
                    line = sys.stdin.buffer.readline()
                    if not line:
                        sys.exit(3)
                    acked = int(line.split()[1])
                out.write(struct.pack(">I", len(chunk)))
                out.write(chunk)
                sent += len(chunk)
        finally:
            os.close(fd)
        out.write(struct.pack(">I", 0))
    out.flush()


def remove(path):
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def read_exactly(count):
    data = sys.stdin.buffer.read(count)
    if len(data) != count:
        sys.exit(3)
    return data


def receive(target, entry):
    """Writes the next file's frames beside `target`, then renames it into place with its mode."""
    directory, name = os.path.split(target)
    temporary = os.path.join(directory, ".pai-restore-" + name)
    remove(temporary)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    digest = hashlib.sha256()
    try:
        while True:
            (length,) = struct.unpack(">I", read_exactly(4))
            if length == 0:
                break
            chunk = read_exactly(length)
            digest.update(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
        os.fchmod(fd, entry["mode"])
    finally:
        os.close(fd)
    os.replace(temporary, target)
    return digest.hexdigest()


def restore(root, cache_path):
    wanted = {entry["path"]: entry for entry in read_line()["entries"]}
    found, fresh = walk(root, load_cache(cache_path))
    removed = 0
    # Every directory writable while entries are removed and written; wanted ones get their modes at the end.
    for path, have in found.items():
        if have["type"] == "directory":
            os.chmod(os.path.join(root, path), have["mode"] | 0o700)
    # Deepest first, so a directory's children go before it (or with it).
    for path in sorted(found, key=lambda p: p.count("/"), reverse=True):
        have = found[path]
        want = wanted.get(path)
        if want is None or want["type"] != have["type"] or (
            want["type"] == "symlink" and want["target"] != have["target"]
        ):
            if os.path.lexists(os.path.join(root, path)):
                remove(os.path.join(root, path))
                removed += 1
            found.pop(path)
            fresh.pop(path, None)
    need = []
    for path in sorted(wanted):
        want = wanted[path]
        target = os.path.join(root, path)
        have = found.get(path)
        if want["type"] == "directory":
            # Writable while files go in; its own mode is set at the end.
            if have is None:
                os.mkdir(target, 0o700)
            else:
                os.chmod(target, 0o700)
        elif want["type"] == "symlink":
            if have is None:
                os.symlink(want["target"], target)
        elif have is not None and have["digest"] == want["digest"]:
            if have["mode"] != want["mode"]:
                os.chmod(target, want["mode"])
                fresh[path] = key_of(os.lstat(target)) + [want["digest"]]
        else:
            need.append(path)
    write_line({"need": need, "removed": removed})
    for path in need:
        target = os.path.join(root, path)
        if os.path.lexists(target):
            remove(target)
        digest = receive(target, wanted[path])
        fresh[path] = key_of(os.lstat(target)) + [digest]
    for path in sorted(wanted, reverse=True):
        if wanted[path]["type"] == "directory":
            os.chmod(os.path.join(root, path), wanted[path]["mode"])
    save_cache(cache_path, fresh)
    write_line({"written": len(need)})


def main():
    mode, root, cache_path = sys.argv[1:4]
    os.umask(0o022)
    if mode == "take":
        take(root, cache_path)
    elif mode == "restore":
        restore(root, cache_path)
    else:
        sys.exit(2)


if __name__ == "__main__":
    main()
