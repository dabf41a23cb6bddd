import { describe, expect, it } from "vitest";
import {
  bool,
  bytes,
  ConfigError,
  int,
  list,
  loadConfig,
  natsCredentials,
  oneOf,
  port,
  str,
  syncInterval,
  url,
} from "../src/index.js";

describe("loadConfig", () => {
  const spec = {
    port: port("X_PORT", 7101),
    level: oneOf("X_LEVEL", ["info", "debug"], "info"),
    nats: url("X_NATS", "nats://127.0.0.1:4222", ["nats:"]),
    verbose: bool("X_VERBOSE", false),
    scopes: list("X_SCOPES", ["a"]),
  };

  it("uses defaults when nothing is set", () => {
    expect(loadConfig(spec, {})).toEqual({
      port: 7101,
      level: "info",
      nats: "nats://127.0.0.1:4222",
      verbose: false,
      scopes: ["a"],
    });
  });

  it("reads and converts set values", () => {
    const cfg = loadConfig(spec, {
      X_PORT: "0",
      X_LEVEL: "debug",
      X_VERBOSE: "yes",
      X_SCOPES: "b, c",
    });
    expect(cfg).toMatchObject({ port: 0, level: "debug", verbose: true, scopes: ["b", "c"] });
  });

  it("names every bad variable in one error", () => {
    let error: unknown;
    try {
      loadConfig(spec, {
        X_PORT: "70000",
        X_LEVEL: "loud",
        X_NATS: "http://x",
        X_VERBOSE: "maybe",
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toEqual([
      "X_PORT=70000 is out of range; expected 0 to 65535",
      'X_LEVEL="loud" is not one of info, debug',
      'X_NATS="http://x" must use nats:',
      'X_VERBOSE="maybe" is not a boolean; use true or false',
    ]);
  });

  it("refuses a non-integer and a missing required string", () => {
    expect(() => loadConfig({ n: int("X_N", 1), s: str("X_S") }, { X_N: "1.5" })).toThrow(
      /X_N="1.5" is not an integer[\s\S]*X_S is required/,
    );
  });
});

describe("bus settings", () => {
  it("reads sizes with units and refuses what is not a size", () => {
    const spec = { size: bytes("X_SIZE", 1024) };
    expect(loadConfig(spec, {}).size).toBe(1024);
    expect(loadConfig(spec, { X_SIZE: "512MiB" }).size).toBe(512 * 1024 * 1024);
    expect(loadConfig(spec, { X_SIZE: "2GiB" }).size).toBe(2 * 1024 ** 3);
    expect(loadConfig(spec, { X_SIZE: "4096" }).size).toBe(4096);
    expect(() => loadConfig(spec, { X_SIZE: "lots" })).toThrow(/X_SIZE="lots" is not a size/);
    expect(() => loadConfig(spec, { X_SIZE: "2GB" })).toThrow(/KiB, MiB, GiB or TiB/);
  });

  it("takes one NATS credential at most", () => {
    const spec = { creds: natsCredentials };
    expect(loadConfig(spec, {}).creds).toEqual({});
    expect(loadConfig(spec, { TOOLMESH_NATS_NKEY_FILE: "/d/bus/x.nk" }).creds).toEqual({
      nkeyFile: "/d/bus/x.nk",
    });
    expect(
      loadConfig(spec, { TOOLMESH_NATS_USER: "svc", TOOLMESH_NATS_PASSWORD: "pw" }).creds,
    ).toEqual({ user: "svc", password: "pw" });
    expect(() =>
      loadConfig(spec, { TOOLMESH_NATS_NKEY_FILE: "/a", TOOLMESH_NATS_USER: "svc" }),
    ).toThrow(/TOOLMESH_NATS_NKEY_FILE and TOOLMESH_NATS_USER are both set/);
    expect(() => loadConfig(spec, { TOOLMESH_NATS_PASSWORD: "pw" })).toThrow(
      /TOOLMESH_NATS_PASSWORD is set without TOOLMESH_NATS_USER/,
    );
  });

  it("takes a sync interval of always or a duration", () => {
    const spec = { sync: syncInterval("X_SYNC", "always") };
    expect(loadConfig(spec, {}).sync).toBe("always");
    expect(loadConfig(spec, { X_SYNC: "2m" }).sync).toBe("2m");
    expect(() => loadConfig(spec, { X_SYNC: "sometimes" })).toThrow(/neither "always" nor/);
  });
});
