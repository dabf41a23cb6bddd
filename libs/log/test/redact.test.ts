import { Writable } from "node:stream";
import { createLogger, createSecretRedactor, REDACTED } from "@toolmesh/log";
import { describe, expect, it } from "vitest";

const R = REDACTED;

describe("the redaction rule", () => {
  const redact = createSecretRedactor();

  it("hides values of secret keys at any depth, whatever their case or separators", () => {
    expect(
      redact({
        q: "select",
        Password: "p",
        passwd: "p",
        Authorization: "Basic x",
        auth: "a",
        author: "kept: not a secret key",
        private_key: "k",
        credentials: { user: "u", pass: "p" },
        headers: { Cookie: "sid=1", "Set-Cookie": "sid=2", "x-api-key": "k", accept: "json" },
        nested: { apiKey: "k", "API-KEY": "k", list: [{ refresh_token: "t" }, "plain"] },
        client_secret: { deep: "s" },
        bearer_token: "t",
        session: "s",
        aws_access_key_id: "a",
        tokens_used: 5,
        admin_token_file: "/data/admin.token",
      }),
    ).toEqual({
      q: "select",
      Password: R,
      passwd: R,
      Authorization: R,
      auth: R,
      author: "kept: not a secret key",
      private_key: R,
      credentials: R,
      headers: { Cookie: R, "Set-Cookie": R, "x-api-key": R, accept: "json" },
      nested: { apiKey: R, "API-KEY": R, list: [{ refresh_token: R }, "plain"] },
      client_secret: R,
      bearer_token: R,
      session: R,
      aws_access_key_id: R,
      tokens_used: R,
      admin_token_file: "/data/admin.token",
    });
  });

  it("hides credential-looking values under any key", () => {
    const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJlLWhlcmU";
    expect(
      redact({
        note: `use Bearer ${"x".repeat(20)} please`,
        jwt,
        key: "tmk_0123456789abcdef_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
        pem: "-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----",
        list: [jwt, "plain"],
        text: "nothing to see",
      }),
    ).toEqual({
      note: `use ${R} please`,
      jwt: R,
      key: R,
      pem: R,
      list: [R, "plain"],
      text: "nothing to see",
    });
  });

  it("keeps every key, __proto__ included, and extra patterns only add", () => {
    const args = JSON.parse('{"__proto__": {"x": 1}, "constructor": "c", "ok": 1}');
    const out = redact(args) as Record<string, unknown>;
    expect(Object.keys(out)).toEqual(["__proto__", "constructor", "ok"]);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"x":1},"constructor":"c","ok":1}');
    expect(createSecretRedactor(["pin"])({ PIN: 1, password: "p", spin: 2 })).toEqual({
      PIN: R,
      password: R,
      spin: 2,
    });
  });

  it("is the rule of log lines too: fields, child bindings, messages and errors", () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = createLogger("test", "info", sink);
    log.info({ headers: { authorization: "Bearer abcdefghijkl" }, tool: "t" }, "call");
    log.child({ api_key: "k" }).info("child");
    log.info("token tmk_0123456789abcdef_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG sent");
    log.error({ err: new Error("bad Bearer abcdefghijklmnop") }, "failed");
    const text = lines.join("");
    expect(text).not.toMatch(/abcdefghijkl|"k"|tmk_0123/);
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([
      { headers: { authorization: R }, tool: "t" },
      { api_key: R, msg: "child" },
      { msg: `token ${R} sent` },
      { err: { message: `bad ${R}` } },
    ]);
  });
});
