import { createHash } from "node:crypto";
import { constants, createReadStream } from "node:fs";
import { access, mkdir, readdir, readFile, stat, unlink } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { type AptMirrors, hostAptMirrors } from "./apt-sources.ts";
import { acquireFileLock } from "./file-lock.ts";
import type { ImageDriver } from "./image-driver.ts";
import type { ImageProgress } from "./image-progress.ts";
import { PoolError } from "./pool-error.ts";

/** The script that makes the root filesystem (debootstrap, then shaped like Debian's slim images). */
const mkrootfs = fileURLToPath(new URL("../debootstrap/mkrootfs", import.meta.url));

const SUITE = "bookworm";

/** The debootstrap base of this machine: a Debian rootfs PAI makes where no registry gives it one. */
export interface DebootstrapBase {
  /** `pai/base:<12 hex>`: a hash of the suite, the mirrors, the host's apt settings and the rootfs script. */
  ref: string;
  hash: string;
  mirrors: AptMirrors;
}

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

let computed: Promise<DebootstrapBase> | undefined;

/** This machine's debootstrap base (its tag is known without any engine); worked out once per process. */
export function debootstrapBase(): Promise<DebootstrapBase> {
  computed ??= (async () => {
    const mirrors = await hostAptMirrors({ suite: SUITE });
    const script = await readFile(mkrootfs);
    const hash = sha256(
      [
        `pai-base v1 ${SUITE} minbase`,
        `mirror ${mirrors.mirror}`,
        `security ${mirrors.security}`,
        `apt ${mirrors.aptSettings}`,
        `${sha256(script)}  -`,
        "",
      ].join("\n"),
    ).slice(0, 12);
    return { ref: `pai/base:${hash}`, hash, mirrors };
  })();
  computed.catch(() => {
    computed = undefined;
  });
  return computed;
}

/** Where rootfs tarballs are kept between builds: `PAI_IMAGES_CACHE`, else /var/cache/pai-images. */
function cacheDirectory(): string {
  return process.env.PAI_IMAGES_CACHE || "/var/cache/pai-images";
}

/** Whether `program` is on the PATH (the rootfs script runs debootstrap, chroot and mount from there). */
async function onPath(program: string): Promise<boolean> {
  for (const directory of (process.env.PATH ?? "").split(delimiter)) {
    if (directory === "") continue;
    try {
      await access(join(directory, program), constants.X_OK);
      return true;
    } catch {}
  }
  return false;
}

/** Why this process cannot run debootstrap, or `undefined` when it can. */
async function cannotDebootstrap(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return "debootstrap needs root";
  if (!(await onPath("debootstrap"))) {
    return "debootstrap is not on the PATH (apt-get install debootstrap; it lives in /usr/sbin)";
  }
  return undefined;
}

/** The error when the engine lacks the base and this process cannot make it. */
function noBaseError(image: string, base: DebootstrapBase, reason: string): PoolError {
  return new PoolError(
    "IMAGE_UNAVAILABLE",
    `Cannot build ${image}: no registry gave debian:bookworm-slim, the engine has no ${base.ref}, and ${reason}. ` +
      "Install debootstrap and run as root, make a registry reachable (the engine pulls debian:bookworm-slim), or " +
      "set a base image the engine has or can pull (the binding's baseImage, `pai images build --base REF`, or " +
      "PAI_BASE_IMAGE)",
    { details: { image, base: base.ref, reason } },
  );
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.size > 0,
    () => false,
  );
}

/** Makes the rootfs tarball with the rootfs script (once per machine: other processes wait for it). */
async function makeRootfs(options: {
  base: DebootstrapBase;
  tarball: string;
  report: (message: string) => void;
  signal?: AbortSignal | undefined;
}): Promise<void> {
  const { base, tarball, report, signal } = options;
  const lock = await acquireFileLock({
    name: `debootstrap ${tarball}`,
    onWait: () => report("another process is making the rootfs; waiting for it"),
    ...(signal ? { signal } : {}),
  });
  try {
    if (await exists(tarball)) return;
    const { mirror, security, aptSettings } = base.mirrors;
    report(
      `making a ${SUITE} rootfs with debootstrap from ${mirror}${security ? ` (security: ${security})` : ""}`,
    );
    const run = execa("bash", [mkrootfs, tarball, SUITE, mirror, security], {
      env: { PAI_ROOTFS_APT_EXTRA: aptSettings },
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
      reject: false,
      ...(signal ? { cancelSignal: signal } : {}),
      forceKillAfterDelay: 10_000,
    });
    let lastLines: string[] = [];
    run.stderr?.setEncoding("utf8");
    let partial = "";
    run.stderr?.on("data", (text: string) => {
      const lines = (partial + text).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        if (line.trim() === "") continue;
        lastLines = [...lastLines.slice(-19), line];
        report(line.replace(/^images\/base: /, ""));
      }
    });
    const result = await run;
    signal?.throwIfAborted();
    if (result.failed) {
      throw new PoolError(
        "IMAGE_UNAVAILABLE",
        `debootstrap of the ${SUITE} rootfs failed: ${lastLines.at(-1) ?? result.shortMessage}`,
        {
          details: { base: base.ref, output: lastLines.join("\n") },
        },
      );
    }
  } finally {
    await lock.release();
  }
}

/**
 * Makes sure the engine has this machine's debootstrap base: there already, or imported from the cached rootfs
 * tarball (`PAI_IMAGES_CACHE`, default /var/cache/pai-images), which is made first with debootstrap when this
 * process can (root, `debootstrap` on the PATH; nothing is installed). Tags it `pai/base:latest` too.
 *
 * @param options.image The image that needs the base (named in progress and errors).
 * @throws PoolError `IMAGE_UNAVAILABLE` naming what to do when the base cannot be made here.
 */
export async function ensureDebootstrapBase(options: {
  images: ImageDriver;
  image: string;
  onProgress?: ((progress: ImageProgress) => void) | undefined;
  signal?: AbortSignal | undefined;
}): Promise<DebootstrapBase> {
  const { images, signal } = options;
  const base = await debootstrapBase();
  const withSignal = signal ? { signal } : {};
  if (await images.inspect(base.ref, withSignal)) return base;
  const report = (message: string) => options.onProgress?.({ image: base.ref, phase: "base", message });
  const cache = cacheDirectory();
  const tarball = join(cache, `base-${base.hash}.tar`);
  if (!(await exists(tarball))) {
    const reason = await cannotDebootstrap();
    if (reason) throw noBaseError(options.image, base, reason);
    try {
      await mkdir(cache, { recursive: true });
    } catch {
      throw noBaseError(
        options.image,
        base,
        `the cache directory ${cache} cannot be made (set PAI_IMAGES_CACHE)`,
      );
    }
    await makeRootfs({ base, tarball, report, signal });
  }
  const startedAt = Date.now();
  report(`importing ${tarball} as ${base.ref}`);
  await images.import({
    archive: createReadStream(tarball),
    ref: base.ref,
    changes: [
      "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      'CMD ["bash"]',
      `LABEL pai.image=base pai.content-hash=${base.hash}`,
    ],
    message: `pai base: debootstrap --variant=minbase ${SUITE} ${base.mirrors.mirror}`,
    ...withSignal,
  });
  await images.tag(base.ref, "pai/base:latest", withSignal);
  report(`${base.ref} ready in ${Math.round((Date.now() - startedAt) / 1000)} s`);
  // Keep only this base's tarball.
  for (const name of await readdir(cache).catch(() => [] as string[])) {
    if (/^base-[0-9a-f]+\.tar$/.test(name) && name !== `base-${base.hash}.tar`) {
      await unlink(join(cache, name)).catch(() => undefined);
    }
  }
  return base;
}
