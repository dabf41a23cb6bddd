import { WatchEventType } from "@toolmesh/proto";
import { describe, expect, it } from "vitest";
import { admin, service, setup, spec } from "./memory-registry.js";

// WatchTools (watch-tools.ts): snapshot, SNAPSHOT_END, changes, the end on shutdown.
describe("WatchTools", () => {
  it("streams the snapshot, SNAPSHOT_END, then changes, and ends on shutdown", async () => {
    const { client, shutdown } = setup();
    await client.registerTool({ tool: spec("b.tool") }, admin);
    await client.registerTool({ tool: spec("a.tool") }, admin);
    const stream = client.watchTools({}, service)[Symbol.asyncIterator]();
    const next = async () => (await stream.next()).value;
    expect(await next()).toMatchObject({ type: WatchEventType.SNAPSHOT, name: "a.tool" });
    expect(await next()).toMatchObject({ type: WatchEventType.SNAPSHOT, name: "b.tool" });
    expect(await next()).toMatchObject({ type: WatchEventType.SNAPSHOT_END, name: "" });
    await client.registerTool({ tool: spec("c.tool") }, admin);
    const put = await next();
    expect(put).toMatchObject({ type: WatchEventType.PUT, name: "c.tool" });
    expect(put.tool?.spec?.name).toBe("c.tool");
    await client.deregisterTool({ name: "a.tool" }, admin);
    const deleted = await next();
    expect(deleted).toMatchObject({ type: WatchEventType.DELETE, name: "a.tool" });
    expect(deleted.tool).toBeUndefined();
    shutdown.abort();
    expect((await stream.next()).done).toBe(true);
  });
});
