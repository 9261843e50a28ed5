import type { Readable } from "node:stream";
import type Docker from "dockerode";
import { abortOption, dockerCall, dockerMessage, isAbortError, toPoolError } from "./docker-call.ts";
import { dockerInfo } from "./docker-engine-checks.ts";
import type { ImageDriver, ImageSummary } from "./image-driver.ts";
import { PoolError } from "./pool-error.ts";

/** One object of an Engine API progress stream (`/build`, `/images/create`). */
interface ProgressMessage {
  stream?: string;
  status?: string;
  id?: string;
  aux?: { ID?: string };
  error?: string;
  errorDetail?: { message?: string };
}

/**
 * Reads a progress stream (one JSON object a line) to its end, handing each object to `onMessage`; rejects with
 * `IMAGE_UNAVAILABLE` carrying the first `error` the engine reported in it, or with the signal's reason.
 */
function followProgress(
  stream: Readable,
  action: string,
  onMessage: (message: ProgressMessage) => void,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let pending = "";
    let failure: string | undefined;
    let done = false;
    const onAbort = () => stream.destroy();
    const finish = (error?: unknown) => {
      if (done) return;
      done = true;
      signal?.removeEventListener("abort", onAbort);
      if (signal?.aborted) reject(signal.reason);
      else if (failure !== undefined) reject(new PoolError("IMAGE_UNAVAILABLE", `${action}: ${failure}`));
      else if (error) reject(toPoolError(error, action));
      else resolve();
    };
    const take = (line: string) => {
      if (line.trim() === "") return;
      let message: ProgressMessage;
      try {
        message = JSON.parse(line) as ProgressMessage;
      } catch {
        return;
      }
      if (message.error !== undefined || message.errorDetail?.message !== undefined) {
        failure ??= (message.errorDetail?.message ?? message.error ?? "").trim();
        return;
      }
      onMessage(message);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    stream.setEncoding("utf8");
    stream.on("data", (text: string) => {
      pending += text;
      let newline = pending.indexOf("\n");
      while (newline >= 0) {
        take(pending.slice(0, newline));
        pending = pending.slice(newline + 1);
        newline = pending.indexOf("\n");
      }
    });
    stream.on("end", () => {
      take(pending);
      finish();
    });
    stream.on("error", (error) => finish(error));
    // Closed before its end: the connection broke (or the signal aborted it).
    stream.on("close", () =>
      finish(Object.assign(new Error("the engine closed the connection"), { code: "ECONNRESET" })),
    );
  });
}

/** Splits `repository:tag` (a registry's `host:port/` prefix kept in the repository). */
function splitRef(ref: string): { repo: string; tag: string } {
  const slash = ref.lastIndexOf("/");
  const colon = ref.lastIndexOf(":");
  return colon > slash
    ? { repo: ref.slice(0, colon), tag: ref.slice(colon + 1) }
    : { repo: ref, tag: "latest" };
}

function realTags(tags: readonly string[] | null | undefined): string[] {
  return (tags ?? []).filter((tag) => tag !== "<none>:<none>");
}

/** Pull statuses that repeat for every chunk of a layer: not worth a line each. */
const noisyPullStatus = new Set(["Downloading", "Extracting", "Waiting", "Verifying Checksum"]);

/**
 * The {@link ImageDriver} of `createDockerDriver`, on dockerode. `streaming` carries the requests that stream for
 * as long as they take (build, pull, import): a client without a request timeout, which their signals bound.
 */
export function createDockerImageDriver(docker: Docker, streaming: Docker): ImageDriver {
  const inspect: ImageDriver["inspect"] = async (ref, options = {}) => {
    const { signal } = options;
    try {
      const image = docker.getImage(ref);
      // dockerode's typings omit the abort signal its `inspect` takes.
      const info = (await (image.inspect as unknown as (options: object) => Promise<unknown>).call(
        image,
        abortOption(signal),
      )) as Docker.ImageInspectInfo;
      return {
        id: info.Id,
        tags: realTags(info.RepoTags),
        sizeBytes: info.Size,
        createdAt: new Date(info.Created),
        labels: info.Config?.Labels ?? {},
      };
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      const mapped = toPoolError(error, "inspect image", { image: ref });
      if (PoolError.hasCode(mapped, "NOT_FOUND")) return undefined;
      throw mapped;
    }
  };
  return {
    inspect,

    list(label, options = {}) {
      return dockerCall(
        "list images",
        { label },
        async (): Promise<ImageSummary[]> => {
          const rows = await docker.listImages({
            filters: { label: [label] },
            ...abortOption(options.signal),
          });
          return rows.map((row) => ({
            id: row.Id,
            tags: realTags(row.RepoTags),
            sizeBytes: row.Size,
            createdAt: new Date(row.Created * 1000),
            labels: row.Labels ?? {},
          }));
        },
        options.signal,
      );
    },

    usedImageIds(options = {}) {
      return dockerCall(
        "list containers",
        {},
        async () => {
          const rows = await docker.listContainers({ all: true, ...abortOption(options.signal) });
          return new Set(rows.map((row) => row.ImageID));
        },
        options.signal,
      );
    },

    async pull(ref, options = {}) {
      const { signal, onStatus } = options;
      const action = `pull ${ref}`;
      const stream = await dockerCall(
        action,
        { image: ref },
        async () => (await streaming.pull(ref, abortOption(signal))) as Readable,
        signal,
      ).catch((error: unknown) => {
        // The engine answers 404/500 at once when the registry or the repository cannot be reached.
        if (PoolError.isInstance(error) && error.code !== "DOCKER_UNAVAILABLE") {
          throw new PoolError("IMAGE_UNAVAILABLE", `${action}: ${dockerMessage(error.cause)}`, {
            cause: error,
            details: { image: ref },
          });
        }
        throw error;
      });
      await followProgress(
        stream,
        action,
        (message) => {
          if (message.status === undefined || noisyPullStatus.has(message.status)) return;
          onStatus?.(message.id ? `${message.id}: ${message.status}` : message.status);
        },
        signal,
      );
    },

    async build(options) {
      const { signal, onOutput } = options;
      const [first] = options.tags;
      if (first === undefined) throw new TypeError("build: at least one tag");
      const action = `build ${first}`;
      const stream = await dockerCall(
        action,
        { image: first },
        async () =>
          (await streaming.buildImage(
            options.context as unknown as NodeJS.ReadableStream,
            {
              t: [...options.tags],
              buildargs: { ...options.buildArgs },
              labels: { ...options.labels },
              networkmode: options.networkMode ?? "host",
              ...(options.extraHosts?.length ? { extrahosts: [...options.extraHosts] } : {}),
              ...(options.noCache ? { nocache: true } : {}),
              rm: true,
              forcerm: true,
              ...abortOption(signal),
            } as unknown as Docker.ImageBuildOptions,
          )) as Readable,
        signal,
      );
      let id: string | undefined;
      let partial = "";
      await followProgress(
        stream,
        action,
        (message) => {
          if (message.aux?.ID) id = message.aux.ID;
          if (message.stream === undefined) return;
          // A step's output arrives in chunks that need not end at a line's end.
          const lines = (partial + message.stream).split("\n");
          partial = lines.pop() ?? "";
          for (const line of lines) if (line.trim() !== "") onOutput?.(line.trimEnd());
        },
        signal,
      );
      if (partial.trim() !== "") onOutput?.(partial.trimEnd());
      if (id === undefined) {
        const built = await inspect(first, { ...(signal ? { signal } : {}) });
        if (!built) throw new PoolError("IMAGE_UNAVAILABLE", `${action}: the engine reported no image`);
        id = built.id;
      }
      return { id };
    },

    async import(options) {
      const { signal, ref } = options;
      const { repo, tag } = splitRef(ref);
      const action = `import ${ref}`;
      const stream = await dockerCall(
        action,
        { image: ref },
        async () =>
          (await streaming.importImage(options.archive as unknown as NodeJS.ReadableStream, {
            repo,
            tag,
            ...(options.changes?.length ? { changes: [...options.changes] } : {}),
            ...(options.message !== undefined ? { message: options.message } : {}),
            ...abortOption(signal),
          })) as Readable,
        signal,
      );
      await followProgress(stream, action, () => {}, signal);
    },

    tag(source, target, options = {}) {
      return dockerCall(
        "tag image",
        { image: source, tag: target },
        async () => {
          await docker.getImage(source).tag({ ...splitRef(target), ...abortOption(options.signal) });
        },
        options.signal,
      );
    },

    async remove(ref, options = {}) {
      const { signal } = options;
      try {
        const answer = (await docker.getImage(ref).remove(abortOption(signal))) as Array<{
          Deleted?: string;
        }>;
        return answer.some((entry) => entry.Deleted !== undefined);
      } catch (error) {
        if (signal?.aborted || isAbortError(error)) throw signal?.reason ?? error;
        const mapped = toPoolError(error, "remove image", { image: ref });
        if (PoolError.hasCode(mapped, "NOT_FOUND")) return false;
        throw mapped;
      }
    },

    engineId(options = {}) {
      return dockerCall(
        "engine info",
        {},
        async () => (await dockerInfo(docker, options.signal)).ID ?? "",
        options.signal,
      );
    },
  };
}
