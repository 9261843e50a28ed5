import type { ContainerDriver } from "./container-driver.ts";
import { PoolError } from "./pool-error.ts";

/** What {@link guardEngineDriver} asks of the engine's health tracking. */
export interface EngineGate {
  /** The error calls fail with at once while the engine is known to be unreachable; `undefined` while it answers. */
  unreachable(): PoolError | undefined;
  /** Told when a call failed with `DOCKER_UNAVAILABLE` (the engine may have gone away): check it now. */
  suspect(): void;
}

/**
 * The driver of one engine of a multi-engine pool: every container call fails at once (`DOCKER_UNAVAILABLE`
 * naming the engine) while the engine is known to be unreachable, instead of waiting on a dead connection, and a
 * call that finds the engine gone triggers a health check. `ping`, `info` and `events` go straight through (the
 * health check and the event stream's own reconnects use them). Its `images`, when the driver has them, are guarded
 * alike.
 */
export function guardEngineDriver(driver: ContainerDriver, gate: EngineGate): ContainerDriver {
  async function guarded<T>(operation: () => Promise<T>): Promise<T> {
    const refusal = gate.unreachable();
    if (refusal) throw refusal;
    try {
      return await operation();
    } catch (error) {
      if (PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) gate.suspect();
      throw error;
    }
  }
  const { images } = driver;
  return {
    ...(images
      ? {
          images: {
            inspect: (ref, options) => guarded(() => images.inspect(ref, options)),
            list: (label, options) => guarded(() => images.list(label, options)),
            usedImageIds: (options) => guarded(() => images.usedImageIds(options)),
            pull: (ref, options) => guarded(() => images.pull(ref, options)),
            build: (options) => guarded(() => images.build(options)),
            import: (options) => guarded(() => images.import(options)),
            tag: (source, target, options) => guarded(() => images.tag(source, target, options)),
            remove: (ref, options) => guarded(() => images.remove(ref, options)),
            engineId: (options) => guarded(() => images.engineId(options)),
          },
        }
      : {}),
    create: (spec, labels, options) => guarded(() => driver.create(spec, labels, options)),
    start: (id, options) => guarded(() => driver.start(id, options)),
    stop: (id, options) => guarded(() => driver.stop(id, options)),
    remove: (id, options) => guarded(() => driver.remove(id, options)),
    inspect: (id, options) => guarded(() => driver.inspect(id, options)),
    diskUsage: (id, options) => guarded(() => driver.diskUsage(id, options)),
    list: (filter, options) => guarded(() => driver.list(filter, options)),
    exec: (id, options) => guarded(() => driver.exec(id, options)),
    execDuplex: (id, options) => guarded(() => driver.execDuplex(id, options)),
    putArchive: (id, path, tar, options) => guarded(() => driver.putArchive(id, path, tar, options)),
    getArchive: (id, path, options) => guarded(() => driver.getArchive(id, path, options)),
    checkEngine: (spec, options) => guarded(() => driver.checkEngine(spec, options)),
    events: (filter, onEvent) => driver.events(filter, onEvent),
    ping: (options) => driver.ping(options),
    info: (options) => driver.info(options),
  };
}
