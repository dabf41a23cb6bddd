/**
 * The KV buckets and their key layout: a shared contract, because the owner writes a bucket and
 * other services keep read-only snapshots of it through a watch. Values are binary Protobuf.
 */
export const buckets = {
  /** Owned by the Registry: `tools.<name>` → registry.v1.Tool, `groups.<name>` → registry.v1.Group. */
  registry: {
    name: "toolmesh-registry",
    toolKey: (name: string) => `tools.${name}`,
    groupKey: (name: string) => `groups.${name}`,
    toolPrefix: "tools.>",
    groupPrefix: "groups.>",
  },
  /**
   * Owned by Permission: `grants.<id>` → permission.v1.Grant, `keys.<id>` → permission.v1.ApiKeyRecord,
   * `meta.admin_bootstrapped` → empty, set once the first admin key exists.
   */
  permission: {
    name: "toolmesh-permission",
    grantKey: (id: string) => `grants.${id}`,
    apiKeyKey: (id: string) => `keys.${id}`,
    grantPrefix: "grants.>",
    apiKeyPrefix: "keys.>",
    /** Rate limits by id (`<subject>.<escaped target>`). */
    rateLimitKey: (id: string) => `limits.${id}`,
    rateLimitPrefix: "limits.>",
  },
  /**
   * Owned by the Dispatchers together: `instances.<id>` → the time of that instance's last
   * heartbeat (decimal epoch ms), so a sweeper can tell a live Dispatcher from a vanished one.
   */
  dispatchers: {
    name: "toolmesh-dispatchers",
    instanceKey: (id: string) => `instances.${id}`,
    instancePrefix: "instances.>",
  },
} as const;
