import { authConfig } from "@toolmesh/auth";
import { type ConfigOf, commonConfig, int, port } from "@toolmesh/config";

/** Every setting of the Callback service, read from the environment. */
export const callbackConfig = {
  ...commonConfig,
  ...authConfig,
  port: port("TOOLMESH_CALLBACK_PORT", 7104),
  /** How long a call's outcome stays readable with GetOutcome; 0 keeps it until deleted. */
  callTtlDays: int("TOOLMESH_CALLBACK_TTL_DAYS", 7, { min: 0, max: 3650 }),
};

export type CallbackConfig = ConfigOf<typeof callbackConfig>;
