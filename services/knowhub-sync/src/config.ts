import { type ConfigOf, commonConfig, optionalStr, url } from "@toolmesh/config";

/** Every setting of knowhub-sync, read from the environment. */
export const knowhubSyncConfig = {
  ...commonConfig,
  /** The knowledge hub's HTTP API; unset disables the sync (the process idles). */
  knowhubUrl: optionalStr("TOOLMESH_KNOWHUB_URL"),
  knowhubToken: optionalStr("TOOLMESH_KNOWHUB_TOKEN"),
  registryUrl: url("TOOLMESH_REGISTRY_URL", "http://127.0.0.1:7101", ["http:", "https:"]),
  serviceToken: optionalStr("TOOLMESH_SERVICE_TOKEN"),
};

export type KnowhubSyncConfig = ConfigOf<typeof knowhubSyncConfig>;
