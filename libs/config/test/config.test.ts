import { describe, expect, it } from "vitest";
import { bool, ConfigError, int, list, loadConfig, oneOf, port, str, url } from "../src/index.js";

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
