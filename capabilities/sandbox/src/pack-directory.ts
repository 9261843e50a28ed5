import { close, constants, open, read, type Stats } from "node:fs";
import { lstat, readdir, readlink } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { Header } from "tar-stream";
import { type EncodableTarHeader, encodeTarHeader, tarPadding } from "./encode-tar-header.ts";
import { SandboxError } from "./sandbox-error.ts";
import type { TarHeaderInput, TransformedTar, TransformTarStats } from "./transform-tar.ts";

/** Options of {@link packDirectory}. */
export interface PackDirectoryOptions {
  /** Stops reading; the stream fails with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Rewrites each entry's header before it is written (an upload's sanitizer): `undefined` drops the entry, a
   * throw fails the archive with that error. Entries are mapped in archive order.
   * @default the header as read from the directory
   */
  map?: (header: Header) => TarHeaderInput | undefined;
}

/** Files up to this size are read whole, several at once, ahead of the output. */
const WHOLE_FILE_BYTES = 1024 * 1024;
/** How far reading runs ahead of the output: entries, and bytes of whole files. */
const READ_AHEAD_ENTRIES = 64;
const READ_AHEAD_BYTES = 8 * 1024 * 1024;
/** Output chunks gather small headers and bodies up to about this size; large files stream in chunks of it. */
const CHUNK_BYTES = 1024 * 1024;
/** How many `lstat` calls of one directory run at once. */
const STAT_BATCH = 64;
/** Padding after bodies, and the two zero blocks that end an archive. */
const ZEROS = Buffer.alloc(1024);

interface Found {
  relative: string;
  absolute: string;
  info: Stats;
}

interface Queued extends Found {
  /** The file's bytes, for a file of at most {@link WHOLE_FILE_BYTES}. */
  body?: Promise<Buffer>;
  /** The symlink's target. */
  linkname?: Promise<string>;
}

/** Directories, files and symlinks under `relative` in archive order: depth first, names sorted. */
async function* walk(root: string, relative: string, signal: AbortSignal | undefined): AsyncGenerator<Found> {
  signal?.throwIfAborted();
  const names = (await readdir(relative === "" ? root : join(root, relative))).sort();
  for (let start = 0; start < names.length; start += STAT_BATCH) {
    const batch = await Promise.all(
      names.slice(start, start + STAT_BATCH).map(async (name) => {
        const child = relative === "" ? name : `${relative}/${name}`;
        const absolute = join(root, child);
        return { relative: child, absolute, info: await lstat(absolute) };
      }),
    );
    for (const found of batch) {
      if (found.info.isDirectory()) {
        yield found;
        yield* walk(root, found.relative, signal);
      } else if (found.info.isFile() || found.info.isSymbolicLink()) {
        yield found;
      }
    }
  }
}

/** Opens a regular file without following a symlink swapped in since it was listed. */
function openFile(absolute: string): Promise<number> {
  return new Promise((resolve, reject) => {
    open(absolute, constants.O_RDONLY | constants.O_NOFOLLOW, (error, fd) =>
      error ? reject(error) : resolve(fd),
    );
  });
}

function closeFile(fd: number): Promise<void> {
  return new Promise((resolve, reject) => close(fd, (error) => (error ? reject(error) : resolve())));
}

/** Reads `length` bytes from `position`; fails when the file has become shorter than it was when listed. */
function readExactly(fd: number, absolute: string, length: number, position: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  return new Promise((resolve, reject) => {
    const next = (filled: number) => {
      if (filled === length) return resolve(buffer);
      read(fd, buffer, filled, length - filled, position + filled, (error, bytesRead) => {
        if (error) reject(error);
        else if (bytesRead === 0) reject(new Error(`${absolute} shrank while it was being packed`));
        else next(filled + bytesRead);
      });
    };
    next(0);
  });
}

async function readWhole(absolute: string, size: number): Promise<Buffer> {
  const fd = await openFile(absolute);
  try {
    return await readExactly(fd, absolute, size, 0);
  } finally {
    await closeFile(fd);
  }
}

/** A large file's bytes in chunks of {@link CHUNK_BYTES}: the next chunk is read while one is written out. */
async function* streamFile(
  absolute: string,
  size: number,
  signal: AbortSignal | undefined,
): AsyncGenerator<Buffer> {
  const fd = await openFile(absolute);
  const readChunk = (position: number) => {
    const chunk = readExactly(fd, absolute, Math.min(CHUNK_BYTES, size - position), position);
    chunk.catch(() => {});
    return chunk;
  };
  let reading = readChunk(0);
  try {
    for (let position = 0; position < size; position += CHUNK_BYTES) {
      signal?.throwIfAborted();
      const chunk = await reading;
      if (position + CHUNK_BYTES < size) reading = readChunk(position + CHUNK_BYTES);
      yield chunk;
    }
  } finally {
    await reading.catch(() => {}); // no read may still use the descriptor when it closes
    await closeFile(fd);
  }
}

/** The header of a listed entry, as a tar reader would have seen it. */
function headerOf(found: Found, linkname: string): Header {
  const { info } = found;
  const type = info.isDirectory() ? "directory" : info.isSymbolicLink() ? "symlink" : "file";
  return {
    name: type === "directory" ? `${found.relative}/` : found.relative,
    type,
    size: type === "file" ? info.size : 0,
    mode: info.mode & 0o7777,
    mtime: info.mtime,
    linkname,
    uid: info.uid,
    gid: info.gid,
    uname: "",
    gname: "",
    devmajor: 0,
    devminor: 0,
    pax: null,
  };
}

function isEncodable(header: TarHeaderInput): header is EncodableTarHeader {
  return (
    header.type === "file" ||
    header.type === "directory" ||
    header.type === "symlink" ||
    header.type === "link"
  );
}

/**
 * A tar stream of a host directory's contents (names relative to it): directories, files and symlinks (kept as
 * links, not followed); sockets, devices and fifos are skipped. `done` settles when the archive has ended: it
 * rejects with what failed it (a read, the `map`, the signal) and resolves with what was written when the reader
 * stops early (destroys the stream).
 *
 * Small files are read whole, several at once ahead of the output, and written with their headers in chunks of
 * about a megabyte; large files stream in such chunks. A file is packed with the size it had when listed: a file
 * that shrank since fails the archive, one that grew is cut at that size.
 */
export function packDirectory(directory: string, options: PackDirectoryOptions = {}): TransformedTar {
  const { signal, map } = options;
  const stats: TransformTarStats = { entries: 0, bytes: 0 };
  let settle: { resolve: (stats: TransformTarStats) => void; reject: (error: unknown) => void } | undefined;
  const done = new Promise<TransformTarStats>((resolve, reject) => {
    settle = { resolve, reject };
  });
  done.catch(() => {});

  async function* archive(): AsyncGenerator<Buffer> {
    /** Set while the reader holds a chunk: an error thrown in then is the reader's, not the archive's. */
    let handedOut = false;
    async function* handOut(chunk: Buffer): AsyncGenerator<Buffer> {
      handedOut = true;
      yield chunk;
      handedOut = false;
    }
    const queue: Queued[] = [];
    let queuedBytes = 0;
    let gathered: Buffer[] = [];
    let gatheredBytes = 0;
    const take = (chunk: Buffer) => {
      gathered.push(chunk);
      gatheredBytes += chunk.length;
    };
    const flush = () => {
      const chunk = gathered.length === 1 ? (gathered[0] as Buffer) : Buffer.concat(gathered, gatheredBytes);
      gathered = [];
      gatheredBytes = 0;
      return chunk;
    };
    try {
      const root = await lstat(directory);
      if (!root.isDirectory()) {
        throw new SandboxError("INVALID_ARGUMENT", `${directory} is not a directory`, {
          details: { directory },
        });
      }
      const found = walk(directory, "", signal);
      let listed = false;
      for (;;) {
        // keep reading ahead: symlink targets and small files start before their turn comes
        while (!listed && queue.length < READ_AHEAD_ENTRIES && queuedBytes < READ_AHEAD_BYTES) {
          const next = await found.next();
          if (next.done) {
            listed = true;
            break;
          }
          const entry: Queued = next.value;
          if (entry.info.isSymbolicLink()) entry.linkname = readlink(entry.absolute);
          else if (entry.info.isFile() && entry.info.size <= WHOLE_FILE_BYTES) {
            entry.body = readWhole(entry.absolute, entry.info.size);
            queuedBytes += entry.info.size;
          }
          // a failure surfaces when the entry's turn comes; until then it must not count as unhandled
          entry.body?.catch(() => {});
          entry.linkname?.catch(() => {});
          queue.push(entry);
        }
        const entry = queue.shift();
        if (!entry) break;
        signal?.throwIfAborted();
        const body = entry.body ? await entry.body : undefined;
        if (entry.body) queuedBytes -= entry.info.size;
        const raw = headerOf(entry, entry.linkname ? await entry.linkname : "");
        const header = map ? map(raw) : raw;
        if (!header) continue;
        if (!isEncodable(header))
          throw new Error(`cannot pack ${raw.name} as a ${String(header.type)} entry`);
        const size = header.type === "file" ? raw.size : 0;
        take(encodeTarHeader({ ...header, size }));
        if (body) take(body);
        else if (size > 0) {
          if (gatheredBytes > 0) yield* handOut(flush());
          for await (const chunk of streamFile(entry.absolute, size, signal)) yield* handOut(chunk);
        }
        if (size % 512 !== 0) take(ZEROS.subarray(0, tarPadding(size)));
        stats.entries++;
        stats.bytes += size;
        if (gatheredBytes >= CHUNK_BYTES) yield* handOut(flush());
      }
      take(ZEROS);
      yield* handOut(flush());
      settle?.resolve(stats);
    } catch (error) {
      if (!handedOut) settle?.reject(error);
      throw error;
    } finally {
      // the reader stopped early (files already being read close themselves): report what was written
      settle?.resolve(stats);
    }
  }

  return { stream: Readable.from(archive(), { objectMode: false }), done };
}
