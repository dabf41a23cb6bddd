import { describe, expect, it } from "vitest";
import { toolEnvironment } from "../src/runtimes/local-process.js";

describe("a local tool's environment", () => {
  it("keeps the machine's variables but none of the Dispatcher's settings or credentials", () => {
    const env = toolEnvironment(
      {
        PATH: "/usr/bin",
        HOME: "/root",
        TOOLMESH_JWT_SECRET: "s3cret",
        TOOLMESH_NATS_NKEY_FILE: "/data/bus/dispatcher.nk",
        NATS_URL: "nats://127.0.0.1:4222",
      },
      { API_BASE: "https://example.test", TOOLMESH_TOOL_MODE: "fast" },
      7301,
    );
    expect(env).toEqual({
      PATH: "/usr/bin",
      HOME: "/root",
      API_BASE: "https://example.test",
      TOOLMESH_TOOL_MODE: "fast",
      TOOLMESH_TOOL_PORT: "7301",
    });
  });
});
