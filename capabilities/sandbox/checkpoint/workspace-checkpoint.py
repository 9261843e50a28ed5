"""PAI's checkpoint program: runs in a sandbox as the sandbox user and speaks to the host over stdin and stdout.

It starts in tens of milliseconds: standard modules only, and none of the slow ones (json, re, shutil) on the path
of a checkpoint. Paths are bytes throughout; names that are not UTF-8 are skipped (neither recorded nor removed).

A block is a decimal byte count on a line, then that many bytes: records of NUL-terminated fields,
  f path mode size digest | d path mode | l path target
(modes and sizes in decimal). A frame is a 4-byte big-endian length and that many bytes of a file; length 0 ends a
file, 0xFFFFFFFF says it could not be read. The sender of frames never runs WINDOW bytes past the "ack <bytes>"
lines the receiver writes.

take <root> <cache>: writes the manifest block (symlinks never followed, special files skipped; a file is hashed
  only when its size, mtime, inode or ctime changed since the last walk, remembered in <cache>), reads a block of
  paths and sends each file's frames.
restore <root> <cache>: reads the manifest block of the workspace to make; removes what it lacks, makes directories
  and symlinks, sets modes, writes a block of the paths it needs (files missing or whose bytes differ), reads each
  one's frames into a file beside its target, renames it into place, then writes "written <n> removed <n>".

The cache is only a hint: the host checks every byte it stores against its digest.
"""

import os
import stat
import sys

try:
    from _sha2 import sha256
except ImportError:
    try:
        from _sha256 import sha256
    except ImportError:
        from hashlib import sha256

CHUNK = 256 * 1024
WINDOW = 8 * 1024 * 1024
FAILED = 0xFFFFFFFF
stdin = sys.stdin.buffer
stdout = sys.stdout.buffer


def load_cache(path):
    """{path: (size, mtime_ns, inode, ctime_ns, digest)} from the last walk; empty when unreadable."""
    try:
        with open(path, "rb") as handle:
            fields = handle.read().split(b"\0")
        cache = {}
        for at in range(0, len(fields) - 5, 6):
            key = tuple(int(value) for value in fields[at + 1 : at + 5])
            cache[fields[at]] = key + (fields[at + 5],)
        return cache
    except (OSError, ValueError):
        return {}


def save_cache(path, cache):
    parts = []
    for name, (size, mtime, inode, ctime, digest) in cache.items():
        parts.append(b"%s\0%d\0%d\0%d\0%d\0%s\0" % (name, size, mtime, inode, ctime, digest))
    temporary = path + b".tmp"
    try:
        with open(temporary, "wb") as handle:
            handle.write(b"".join(parts))
        os.replace(temporary, path)
    except OSError:
        pass


def key_of(info):
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)


def hash_file(path):
    digest = sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        while True:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest().encode()


def walk(root, cache):
    """Every entry under root: {path: record fields}, and the cache lines of its files."""
    found = {}
    fresh = {}
    pending = [b""]
    while pending:
        relative = pending.pop()
        try:
            listing = list(os.scandir(root + b"/" + relative if relative else root))
        except OSError:
            continue
        for item in listing:
            try:
                item.name.decode("utf-8")
            except UnicodeDecodeError:
                continue
            path = relative + b"/" + item.name if relative else item.name
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                try:
                    target = os.readlink(item.path)
                    target.decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                found[path] = (b"l", path, target)
            elif stat.S_ISDIR(info.st_mode):
                found[path] = (b"d", path, b"%d" % mode)
                pending.append(path)
            elif stat.S_ISREG(info.st_mode):
                key = key_of(info)
                known = cache.get(path)
                if known is not None and known[:4] == key:
                    digest = known[4]
                else:
                    try:
                        digest = hash_file(item.path)
                    except OSError:
                        continue
                fresh[path] = key + (digest,)
                found[path] = (b"f", path, b"%d" % mode, b"%d" % info.st_size, digest)
    return found, fresh


def write_block(records):
    data = b"".join(b"\0".join(fields) + b"\0" for fields in records)
    stdout.write(b"%d\n" % len(data))
    stdout.write(data)
    stdout.flush()


def read_exactly(count):
    data = stdin.read(count)
    if len(data) != count:
        sys.exit(3)
    return data


def read_block():
    line = stdin.readline()
    if not line:
        sys.exit(3)
    data = read_exactly(int(line))
    return data.split(b"\0")[:-1] if data else []


def parse_records(fields):
    """{path: record fields} from a manifest block's fields."""
    records = {}
    at = 0
    while at < len(fields):
        width = {b"f": 5, b"d": 3, b"l": 3}[fields[at]]
        records[fields[at + 1]] = tuple(fields[at : at + width])
        at += width
    return records


def take(root, cache_path):
    found, fresh = walk(root, load_cache(cache_path))
    save_cache(cache_path, fresh)
    write_block(found.values())
    sent = 0
    acked = 0
    for path in read_block():
        entry = found.get(path)
        try:
            if entry is None or entry[0] != b"f":
                raise OSError("not a file of the manifest")
            fd = os.open(root + b"/" + path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            stdout.write(FAILED.to_bytes(4, "big"))
            continue
        try:
            while True:
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    break
                while sent - acked > WINDOW:
                    stdout.flush()
                    line = stdin.readline()
                    if not line:
                        sys.exit(3)
                    acked = int(line.split()[1])
                stdout.write(len(chunk).to_bytes(4, "big"))
                stdout.write(chunk)
                sent += len(chunk)
        finally:
            os.close(fd)
        stdout.write(b"\0\0\0\0")
    stdout.flush()


def remove(path):
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        import shutil

        shutil.rmtree(path)
    else:
        os.unlink(path)


def receive(target, mode):
    """Writes the next file's frames beside `target`, then renames it into place with its mode; its digest."""
    directory, name = os.path.split(target)
    temporary = directory + b"/.pai-restore-" + name
    remove(temporary)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    digest = sha256()
    try:
        while True:
            length = int.from_bytes(read_exactly(4), "big")
            if length == 0:
                break
            chunk = read_exactly(length)
            digest.update(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    os.replace(temporary, target)
    return digest.hexdigest().encode()


def restore(root, cache_path):
    # The walk first: it overlaps with the host reading the manifest from its store.
    found, fresh = walk(root, load_cache(cache_path))
    wanted = parse_records(read_block())
    removed = 0
    # Every directory writable while entries are removed and written; wanted ones get their modes at the end.
    for path, have in found.items():
        if have[0] == b"d":
            os.chmod(root + b"/" + path, int(have[2]) | 0o700)
    # Deepest first, so a directory's children go before it (or with it).
    for path in sorted(found, key=lambda p: p.count(b"/"), reverse=True):
        have = found[path]
        want = wanted.get(path)
        if want is None or want[0] != have[0] or (want[0] == b"l" and want[2] != have[2]):
            target = root + b"/" + path
            if os.path.lexists(target):
                remove(target)
                removed += 1
            del found[path]
            fresh.pop(path, None)
    need = []
    for path in sorted(wanted):
        want = wanted[path]
        target = root + b"/" + path
        have = found.get(path)
        if want[0] == b"d":
            # Writable while files go in; its own mode is set at the end.
            if have is None:
                os.mkdir(target, 0o700)
            else:
                os.chmod(target, 0o700)
        elif want[0] == b"l":
            if have is None:
                os.symlink(want[2], target)
        elif have is not None and have[4] == want[4]:
            if have[2] != want[2]:
                os.chmod(target, int(want[2]))
                fresh[path] = key_of(os.lstat(target)) + (want[4],)
        else:
            need.append((path,))
    write_block(need)
    for (path,) in need:
        target = root + b"/" + path
        remove(target)
        digest = receive(target, int(wanted[path][2]))
        fresh[path] = key_of(os.lstat(target)) + (digest,)
    for path in sorted(wanted, reverse=True):
        if wanted[path][0] == b"d":
            os.chmod(root + b"/" + path, int(wanted[path][2]))
    save_cache(cache_path, fresh)
    stdout.write(b"written %d removed %d\n" % (len(need), removed))
    stdout.flush()


def main():
    mode, root, cache_path = sys.argv[1], os.fsencode(sys.argv[2]), os.fsencode(sys.argv[3])
    os.umask(0o022)
    if mode == "take":
        take(root, cache_path)
    elif mode == "restore":
        restore(root, cache_path)
    else:
        sys.exit(2)


if __name__ == "__main__":
    main()
