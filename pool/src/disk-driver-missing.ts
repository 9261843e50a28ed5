// The error of a container engine that lacks the disk volume plugin bounding `limits.diskBytes`.
import { PoolError } from "./pool-error.ts";

/** The engine has no `diskVolumeDriver` plugin: how to get it, or do without. */
export function diskDriverMissing(diskVolumeDriver: string, cause?: PoolError): PoolError {
  return new PoolError(
    "CONTAINER_FAILED",
    `The engine has no "${diskVolumeDriver}" volume plugin, which bounds a container's disk (limits.diskBytes): ` +
      "run `npx pai engine setup` as root on the engine's host, or set limits.diskBytes to null for unbounded volumes",
    { cause, details: { ...cause?.details, reason: "disk-driver-missing", diskVolumeDriver } },
  );
}

/** A clearer error for a create that failed because the engine lacks the disk volume plugin. */
export function missingDiskDriver(error: unknown, diskVolumeDriver: string): PoolError | undefined {
  // Docker answers 404 (after ~15 s of looking for the plugin's socket).
  if (!PoolError.hasCode(error, "NOT_FOUND") && !PoolError.hasCode(error, "CONTAINER_FAILED"))
    return undefined;
  if (!error.message.includes(`volume plugin ${diskVolumeDriver}: plugin "${diskVolumeDriver}" not found`)) {
    return undefined;
  }
  return diskDriverMissing(diskVolumeDriver, error);
}
