import { authConfig } from "@toolmesh/auth";
import { type ConfigOf, commonConfig, port } from "@toolmesh/config";

/** Every setting of the Permission service, read from the environment. */
export const permissionConfig = {
  ...commonConfig,
  ...authConfig,
  port: port("TOOLMESH_PERMISSION_PORT", 7102),
};

export type PermissionConfig = ConfigOf<typeof permissionConfig>;
