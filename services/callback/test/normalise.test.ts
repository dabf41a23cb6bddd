import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  awaitsApproval,
  CallbackEventSchema,
  CallStatus,
  isFinal,
  OutcomeSchema,
  statusWord,
  TraceEventKind,
} from "@toolmesh/proto";
import { describe, expect, it } from "vitest";
import { callbackKind, normalise, sameResult } from "../src/normalise.js";

const base = {
  callId: "c1",
  traceId: "t1",
  parentId: "p1",
  tool: "data.query",
  agentId: "a1",
  userId: "u1",
  durationMs: 9,
  attempts: 2,
  finishedAt: timestampFromMs(1_700_000_000_000),
};

describe("normalise", () => {
  it("keeps only what each status means", () => {
    const everything = {
      ...base,
      output: { rows: 1 },
      error: { code: "x", message: "y" },
      reason: "timeout",
    };
    const ok = normalise(create(OutcomeSchema, { ...everything, status: CallStatus.SUCCESS }));
    const { finishedAt: _, ...ids } = base;
    expect(ok).toMatchObject({
      ...ids,
      status: CallStatus.SUCCESS,
      output: { rows: 1 },
      reason: "",
    });
    expect(ok.error).toBeUndefined();
    expect(ok.time).toEqual(base.finishedAt);

    const failed = normalise(create(OutcomeSchema, { ...everything, status: CallStatus.FAILURE }));
    expect(failed).toMatchObject({ status: CallStatus.FAILURE, error: { code: "x" }, reason: "" });
    expect(failed.output).toBeUndefined();

    const stopped = normalise(
      create(OutcomeSchema, { ...everything, status: CallStatus.INTERRUPTED }),
    );
    expect(stopped).toMatchObject({ status: CallStatus.INTERRUPTED, reason: "timeout" });
    expect(stopped.output).toBeUndefined();
    expect(stopped.error).toBeUndefined();
  });

  it("fills what a backend left out, so subscribers never see a half event", () => {
    const failed = normalise(create(OutcomeSchema, { ...base, status: CallStatus.FAILURE }));
    expect(failed.error?.code).toBe("unknown");
    const ok = normalise(create(OutcomeSchema, { ...base, status: CallStatus.SUCCESS }));
    expect(ok.output).toEqual({});
  });

  it("names subjects and trace kinds by status", () => {
    expect(statusWord(CallStatus.INTERRUPTED)).toBe("interrupted");
    expect(callbackKind(CallStatus.SUCCESS)).toBe(TraceEventKind.CALLBACK_SUCCESS);
    expect(callbackKind(CallStatus.FAILURE)).toBe(TraceEventKind.CALLBACK_FAILURE);
    expect(callbackKind(CallStatus.INTERRUPTED)).toBe(TraceEventKind.CALLBACK_INTERRUPTED);
  });

  it("treats reports with the same result as duplicates, whatever their key order or timing", () => {
    const a = create(CallbackEventSchema, {
      status: CallStatus.SUCCESS,
      output: { a: 1, b: { c: 2, d: 3 } },
      durationMs: 1,
    });
    const b = create(CallbackEventSchema, {
      status: CallStatus.SUCCESS,
      output: { b: { d: 3, c: 2 }, a: 1 },
      durationMs: 7,
    });
    expect(sameResult(a, b)).toBe(true);
    expect(
      sameResult(a, create(CallbackEventSchema, { status: CallStatus.SUCCESS, output: { a: 2 } })),
    ).toBe(false);
    expect(
      sameResult(
        a,
        create(CallbackEventSchema, { status: CallStatus.FAILURE, error: { code: "x" } }),
      ),
    ).toBe(false);
  });

  it("keeps a held call's reason while PENDING, and the error and reason once REFUSED", () => {
    const held = normalise(
      create(OutcomeSchema, {
        ...base,
        status: CallStatus.PENDING,
        reason: "awaiting_approval",
        error: { code: "awaiting_approval", message: "held" },
      }),
    );
    expect(awaitsApproval(held)).toBe(true);
    expect(isFinal(held.status)).toBe(false);
    const denied = normalise(
      create(OutcomeSchema, {
        ...base,
        status: CallStatus.REFUSED,
        reason: "approval_denied",
        error: { code: "approval_denied", message: "denied by boss" },
        output: { leaked: true },
      }),
    );
    expect(denied).toMatchObject({ reason: "approval_denied", error: { code: "approval_denied" } });
    expect(denied.output).toBeUndefined();
    expect(isFinal(denied.status)).toBe(true);
    expect(awaitsApproval(denied)).toBe(false);
    expect(callbackKind(CallStatus.REFUSED)).toBe(TraceEventKind.CALLBACK_REFUSED);
    expect(statusWord(CallStatus.REFUSED)).toBe("refused");
  });
});
