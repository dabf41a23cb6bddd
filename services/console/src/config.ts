import { type ConfigOf, commonConfig, optionalStr, port } from "@toolmesh/config";

/** Every setting of the console, read from the environment. */
export const consoleConfig = {
  ...commonConfig,
  port: port("TOOLMESH_CONSOLE_PORT", 7105),
  /** The built app; by default services/console/dist/web, built on start when missing or stale. */
  assetsDir: optionalStr("TOOLMESH_CONSOLE_ASSETS"),
};

export type ConsoleConfig = ConfigOf<typeof consoleConfig>;
