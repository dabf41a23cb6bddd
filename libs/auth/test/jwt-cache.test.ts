import { Code } from "@toolmesh/errors";
import { mintJwt } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";
import { createJwtVerifier } from "../src/index.js";

const secret = "a-test-secret-that-is-at-least-32-bytes-long";
const settings = {
  secret,
  issuer: "toolmesh",
  audience: "toolmesh",
  userClaim: "on_behalf_of",
  rolesClaim: "roles",
};

function jwt(expSeconds: number): Promise<string> {
  return mintJwt(secret, { sub: "agent-1" }, { expiresIn: expSeconds });
}

describe("JWT verification cache", () => {
  it("never outlives the token's exp", async () => {
    const verify = createJwtVerifier({ ...settings, cacheMs: 60_000 });
    const exp = Math.floor(Date.now() / 1000) + 1;
    const token = await jwt(exp);
    expect((await verify(token)).agentId).toBe("agent-1");
    // Wait until the second of exp has passed, awaiting the clock rather than a fixed sleep.
    await new Promise((resolve) => setTimeout(resolve, exp * 1000 - Date.now() + 10));
    await expect(verify(token)).rejects.toMatchObject({
      code: Code.Unauthenticated,
      rawMessage: expect.stringContaining("expired"),
    });
  });

  it("does not cache refusals", async () => {
    const verify = createJwtVerifier({ ...settings, cacheMs: 60_000 });
    const token = await jwt(Math.floor(Date.now() / 1000) + 60);
    const tampered = `${token.slice(0, -2)}xx`;
    await expect(verify(tampered)).rejects.toMatchObject({ code: Code.Unauthenticated });
    await expect(verify(tampered)).rejects.toMatchObject({ code: Code.Unauthenticated });
    expect((await verify(token)).roles).toEqual(["agent"]);
  });
});
