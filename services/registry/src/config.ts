import { authConfig } from "@toolmesh/auth";
import { type ConfigOf, commonConfig, port } from "@toolmesh/config";

/** Every setting of the Registry, read from the environment. */
export const registryConfig = {
  ...commonConfig,
  ...authConfig,
  port: port("TOOLMESH_REGISTRY_PORT", 7101),
};

export type RegistryConfig = ConfigOf<typeof registryConfig>;
