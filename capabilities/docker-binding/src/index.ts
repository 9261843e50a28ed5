export {
  type BindFacadeOptions,
  type BindScope,
  bindFacade,
  type FacadeCall,
  type FacadeCalls,
  type FacadeScope,
  type LostWatch,
} from "./bind-facade.ts";
export { type BindingNetwork, parseBindingNetwork } from "./binding-network.ts";
export {
  type ContainerConnectContext,
  type ContainerConnection,
  type ContainerState,
  createDockerBinding,
  type DockerBindingOptions,
  type DockerPrepareContext,
  type PreparedContainers,
} from "./docker-binding.ts";
export type { PooledBindingPoolOptions, PooledBindingTuning } from "./multi-engine-pool-settings.ts";
export {
  createPooledBinding,
  type PooledBinding,
  type PooledBindingOptions,
  type PreparedPool,
} from "./pooled-binding.ts";
export type {
  CheckpointsOf,
  FacadeOf,
  PooledResource,
  PooledResourceMeta,
  PortOpener,
} from "./pooled-resource.ts";
