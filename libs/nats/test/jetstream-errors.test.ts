import { JetStreamApiCodes, retryBetweenLeaders, retrySetup } from "@toolmesh/nats";
import { describe, expect, it } from "vitest";

/** A refusal as nats.js raises it: a 503 no responders, or a JetStream API error by its code. */
const noResponders = () => Object.assign(new Error("503"), { code: "503" });
const apiError = (err_code: number) =>
  Object.assign(new Error("refused"), { api_error: { code: 503, err_code, description: "" } });

/** The between-leaders rule: a write that stored nothing is tried again, within its budget. */
describe("retryBetweenLeaders", () => {
  it("tries a write refused between leaders again, backing off, until it is taken", async () => {
    let calls = 0;
    const startedAt = Date.now();
    const value = await retryBetweenLeaders(async () => {
      calls++;
      if (calls === 1) throw noResponders();
      if (calls === 2) throw apiError(JetStreamApiCodes.ClusterNotAvailable);
      return "stored";
    });
    expect(value).toBe("stored");
    expect(calls).toBe(3);
    // 100 ms, then 200 ms.
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(300);
  });

  it("throws the refusal once the next wait would end past the budget", async () => {
    let calls = 0;
    const refusal = noResponders();
    const write = async () => {
      calls++;
      throw refusal;
    };
    await expect(retryBetweenLeaders(write, 250)).rejects.toBe(refusal);
    // Tried at once and after 100 ms; a wait of 200 ms more would end past 250 ms.
    expect(calls).toBe(2);
  });

  it("throws any other error at once", async () => {
    let calls = 0;
    const conflict = apiError(JetStreamApiCodes.WrongLastSequence);
    await expect(
      retryBetweenLeaders(async () => {
        calls++;
        throw conflict;
      }),
    ).rejects.toBe(conflict);
    expect(calls).toBe(1);
  });
});

/** Set-up requests may be sent twice: they are also tried again when no answer came in time. */
describe("retrySetup", () => {
  it("tries a set-up request again after no responders and a timeout, until it is answered", async () => {
    let calls = 0;
    const value = await retrySetup(async () => {
      calls++;
      if (calls === 1) throw noResponders();
      if (calls === 2) throw Object.assign(new Error("TIMEOUT"), { code: "TIMEOUT" });
      return "bound";
    });
    expect(value).toBe("bound");
    expect(calls).toBe(3);
  });

  it("throws any other error at once", async () => {
    let calls = 0;
    const missing = apiError(JetStreamApiCodes.StreamNotFound);
    await expect(
      retrySetup(async () => {
        calls++;
        throw missing;
      }),
    ).rejects.toBe(missing);
    expect(calls).toBe(1);
  });
});
