import { int } from "@toolmesh/config";

/** Settings Permission and the Dispatcher both read, so they agree (docs/configuration.md). */
export const vaultSharedConfig = {
  /**
   * An access token is refreshed (Permission) and asked for again (the Dispatcher's cache) once it
   * expires within this long.
   */
  oauthRefreshMarginMs: int("TOOLMESH_OAUTH_REFRESH_MARGIN_MS", 60_000, {
    min: 0,
    max: 3_600_000,
  }),
};
