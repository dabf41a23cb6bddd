import { readFileSync } from "node:fs";
import path from "node:path";
import { repoRoot } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";
import { type BusUser, busAccess, natsPermissions, subjects } from "../src/index.js";

const users = Object.keys(busAccess) as BusUser[];

/** The users whose permissions let them publish on this subject (exactly or by a wildcard). */
function publishers(subject: string): BusUser[] {
  const matches = (pattern: string) => {
    const p = pattern.split(".");
    const s = subject.split(".");
    for (let i = 0; i < p.length; i++) {
      if (p[i] === ">") return i < s.length;
      if (p[i] !== "*" && p[i] !== s[i]) return false;
    }
    return p.length === s.length;
  };
  return users.filter((user) => {
    const { allow, deny = [] } = natsPermissions(user).publish;
    return allow.some(matches) && !deny.some(matches);
  });
}

describe("the bus's permission table", () => {
  it("lets exactly one process publish each source's records", () => {
    for (const source of ["dispatcher", "callback", "registry", "permission", "audit"] as const)
      expect(publishers(subjects.records(source))).toEqual([source]);
    expect(publishers(subjects.callback("success", "tool"))).toEqual(["callback"]);
    // Only the Dispatcher and Callback ask Audit for a call's records.
    expect(publishers(subjects.callLookup)).toEqual(["dispatcher", "callback"]);
    expect(natsPermissions("audit").allow_responses).toBe(true);
    // Dispatcher replicas answer each other about the calls each runs (an MCP task's cancel).
    expect(natsPermissions("dispatcher").allow_responses).toBe(true);
    expect(publishers(subjects.dispatcherInstance("d-1"))).toEqual(["dispatcher"]);
    expect(publishers("$KV.toolmesh-registry.tools.x")).toEqual(["registry"]);
    expect(publishers("$KV.toolmesh-permission.grants.x")).toEqual(["permission"]);
    expect(publishers("toolmesh.auditlog.a.tool")).toEqual(["audit"]);
    // A lease is written by its own service alone, so no other can take it or renew it.
    expect(publishers("$KV.toolmesh-leases.audit")).toEqual(["audit"]);
    expect(publishers("$KV.toolmesh-leases.memory-writer")).toEqual(["memory-writer"]);
  });

  it("lets nobody answer on an inbox, delete or purge a stream, or ack another's durable", () => {
    for (const subject of [
      "_INBOX.dispatcher.abc.1",
      "$JS.API.STREAM.DELETE.TOOLMESH_RECORDS",
      "$JS.API.STREAM.PURGE.TOOLMESH_AUDIT_LOG",
      "$JS.API.STREAM.MSG.DELETE.TOOLMESH_AUDIT_LOG",
    ]) {
      expect(publishers(subject), subject).toEqual([]);
    }
    // A durable's acks and its deletion belong to its owner alone.
    expect(publishers("$JS.ACK.TOOLMESH_AUDIT_LOG.memory-writer.1.2.3.4.5")).toEqual([
      "memory-writer",
    ]);
    expect(publishers("$JS.API.CONSUMER.DELETE.TOOLMESH_AUDIT_LOG.memory-writer")).toEqual([
      "memory-writer",
    ]);
    expect(publishers("$JS.ACK.TOOLMESH_AUDIT_LOG.callback.1.2.3.4.5")).toEqual(["callback"]);
    expect(publishers("$JS.ACK.TOOLMESH_RECORDS.audit.1.2.3.4.5")).toEqual(["audit"]);
    expect(publishers("$JS.ACK.TOOLMESH_CALLBACK.agent-own.1.2.3.4.5")).toEqual(["agent"]);
  });

  it("is the table docs/security.md shows", () => {
    const doc = readFileSync(path.join(repoRoot, "docs", "security.md"), "utf8");
    for (const user of users) {
      const row = doc.split("\n").find((line) => line.startsWith(`| ${user} |`));
      expect(row, `a row for ${user}`).toBeDefined();
      for (const subject of busAccess[user].publishes) expect(row).toContain(`\`${subject}\``);
    }
  });
});
