export {
  type BindingImage,
  type BindingImageOptions,
  createBindingImage,
  writeImageProgress,
} from "./binding-image.ts";
export type {
  ContainerDriver,
  ContainerEvent,
  ContainerInspection,
  ContainerSummary,
  DiskUsage,
  EngineCheck,
  EngineInfo,
  ExecDuplexOptions,
  ExecOptions,
  ExecResult,
  ExecSession,
  LabelFilter,
} from "./container-driver.ts";
export type { ContainerLease, ContainerLeaseInfo, LeaseAcquisition } from "./container-lease.ts";
export type {
  AcquireOptions,
  AdoptOptions,
  CloseOptions,
  ContainerHookContext,
  ContainerPool,
  ContainerPoolMetrics,
  ContainerPoolOptions,
  ReapStraysOptions,
  WarmOptions,
} from "./container-pool.ts";
export { createContainerPool } from "./container-pool.ts";
export type {
  ContainerCapability,
  ContainerLimits,
  ContainerSpec,
  ResolvedContainerSpec,
} from "./container-spec.ts";
export { containerSpecDefaults, resolveContainerSpec } from "./container-spec.ts";
export type { CreateBackoffOptions } from "./create-backoff.ts";
export { type DebootstrapBase, debootstrapBase, ensureDebootstrapBase } from "./debootstrap-base.ts";
export { diskVolumePluginEntryPath } from "./disk-plugin/disk-volume-plugin-entry-path.ts";
export type { DockerDriverOptions, EnginePlacement } from "./docker-driver.ts";
export { createDockerDriver } from "./docker-driver.ts";
export type { DockerEngineConnection, DockerSshOptions } from "./docker-engine-connection.ts";
export { dockerEngineId } from "./docker-engine-connection.ts";
export type { DockerEngine, DockerEnginesOptions } from "./docker-pool-engines.ts";
export { dockerPoolEngines } from "./docker-pool-engines.ts";
export type { DockerStreamDemuxer, DockerStreamType } from "./docker-stream-demuxer.ts";
export { createDockerStreamDemuxer } from "./docker-stream-demuxer.ts";
export type { FreeCapacity } from "./engine-capacity.ts";
export type { ImageRecipe } from "./image-context.ts";
export type { ImageBuildOptions, ImageDriver, ImageImportOptions, ImageSummary } from "./image-driver.ts";
export type { ImageProgress } from "./image-progress.ts";
export { poolLabels } from "./labels.ts";
export type {
  CarryOptions,
  EngineCheckOptions,
  EngineLease,
  EngineMetrics,
  EngineStatus,
  MultiEnginePool,
  MultiEnginePoolEventMap,
  MultiEnginePoolMetrics,
  MultiEnginePoolOptions,
  PoolEngine,
  ReplaceOptions,
} from "./multi-engine-pool.ts";
export { createMultiEnginePool } from "./multi-engine-pool.ts";
export { listPaiImages, type PaiImage, type PrunedImage, prunePaiImages } from "./pai-images.ts";
export {
  type BaseImage,
  DEFAULT_REGISTRY_BASE,
  type ImagePlan,
  type PlanImageOptions,
  planImage,
} from "./plan-image.ts";
export type { PoolErrorCode } from "./pool-error.ts";
export { PoolError } from "./pool-error.ts";
export {
  type ContainerPoolEventMap,
  createPoolEvents,
  type DestroyReason,
  type PoolEventEmitter,
  type PoolEvents,
} from "./pool-events.ts";
export { type ProvidedImage, type ProvideImageOptions, provideImage } from "./provide-image.ts";
export {
  imageUnavailable,
  type ResolveDefaultImageOptions,
  resolveDefaultImage,
} from "./resolve-default-image.ts";
export { specHash } from "./spec-hash.ts";
