import { describe, expect, it } from "vitest";
import { renderNatsConfig } from "../src/nats-config.js";
import { replicaEnv, replicaName, replicasOf } from "../src/replicas.js";

// What a three-node stack on one machine is made of: each node's config and each replica's own
// port and files. The nodes running together is tested by test/cluster.test.ts.
describe("cluster configuration", () => {
  it("gives a node its name, monitoring port and authenticated routes to every peer", () => {
    const text = renderNatsConfig({
      host: "127.0.0.1",
      port: 4222,
      storeDir: "/data/nats/node-1",
      syncInterval: "always",
      users: [],
      serverName: "toolmesh-1",
      monitorPort: 8222,
      cluster: {
        name: "toolmesh",
        port: 6222,
        routes: ["127.0.0.1:6222", "127.0.0.1:6223", "127.0.0.1:6224"],
        user: "route",
        password: "p@ss word",
      },
    });
    expect(text).toContain('server_name: "toolmesh-1"');
    expect(text).toContain('http: "127.0.0.1:8222"');
    expect(text).toContain('listen: "127.0.0.1:6222"');
    expect(text).toContain('authorization: {"user":"route","password":"p@ss word"}');
    // The password is URL-escaped inside each route, so no character of it can break the URL.
    expect(text).toContain("nats-route://route:p%40ss%20word@127.0.0.1:6224");
    expect(text).toContain('sync_interval: "always"');
  });

  it("gives replica n its service's port + 10·(n − 1) and an audit index of its own", () => {
    const dispatcher = {
      name: "dispatcher",
      portEnv: "TOOLMESH_DISPATCHER_PORT",
      defaultPort: 7100,
    };
    expect(replicaName("dispatcher", 1)).toBe("dispatcher");
    expect(replicaName("dispatcher", 2)).toBe("dispatcher-2");
    expect(replicaEnv(dispatcher, 1, {}, "/d")).toEqual({});
    expect(replicaEnv(dispatcher, 2, {}, "/d")).toEqual({ TOOLMESH_DISPATCHER_PORT: "7110" });
    expect(
      replicaEnv(
        dispatcher,
        3,
        { TOOLMESH_DISPATCHER_PORT: "17100", TOOLMESH_DISPATCHER_GRPC_PORT: "-1" },
        "/d",
      ),
    ).toEqual({ TOOLMESH_DISPATCHER_PORT: "17120" });
    // Port 0 (a free one) stays 0 for every replica.
    expect(replicaEnv(dispatcher, 2, { TOOLMESH_DISPATCHER_PORT: "0" }, "/d")).toEqual({});
    const audit = { name: "audit", portEnv: "TOOLMESH_AUDIT_PORT", defaultPort: 7103 };
    expect(replicaEnv(audit, 2, {}, "/d")).toEqual({
      TOOLMESH_AUDIT_PORT: "7113",
      TOOLMESH_AUDIT_INDEX_PATH: "/d/audit/index-2.sqlite",
    });
    const callback = { name: "callback", portEnv: "TOOLMESH_CALLBACK_PORT", defaultPort: 7104 };
    expect(replicaEnv(callback, 3, {}, "/d")).toEqual({ TOOLMESH_CALLBACK_PORT: "7124" });
    expect(replicasOf({ name: "console" }, 2)).toBe(1);
    expect(replicasOf({ name: "callback" }, 2)).toBe(2);
  });
});
