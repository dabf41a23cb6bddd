import { create } from "@bufbuild/protobuf";
import {
  AWAITING_APPROVAL,
  awaitsApproval,
  CallbackEventSchema,
  CallStatus,
  DispatchResponseSchema,
  OutcomeSchema,
} from "@toolmesh/proto";
import { describe, expect, it } from "vitest";

// Which statuses are final and how they are spelt is checked against the shared vectors in
// test/parity.test.ts; here, what makes a call "held for approval" in each shape it travels in.
describe("awaitsApproval", () => {
  const heldError = { code: AWAITING_APPROVAL, message: "held until an approver decides" };

  it("is true for a held call's outcome, callback event and Dispatch reply", () => {
    const outcome = create(OutcomeSchema, {
      status: CallStatus.PENDING,
      reason: AWAITING_APPROVAL,
      error: heldError,
    });
    const event = create(CallbackEventSchema, {
      status: CallStatus.PENDING,
      reason: AWAITING_APPROVAL,
    });
    const reply = create(DispatchResponseSchema, { status: CallStatus.PENDING, error: heldError });
    expect([outcome, event, reply].map(awaitsApproval)).toEqual([true, true, true]);
  });

  it("is false for an asynchronous tool's PENDING and for the end of a held call", () => {
    const accepted = create(OutcomeSchema, { status: CallStatus.PENDING });
    const denied = create(CallbackEventSchema, {
      status: CallStatus.REFUSED,
      reason: "approval_denied",
      error: { code: "approval_denied", message: "denied by boss" },
    });
    const otherReason = create(OutcomeSchema, {
      status: CallStatus.PENDING,
      reason: "accepted",
      error: heldError,
    });
    expect([accepted, denied, otherReason].map(awaitsApproval)).toEqual([false, false, false]);
  });
});
