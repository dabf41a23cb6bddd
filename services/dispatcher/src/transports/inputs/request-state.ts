import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { invalidField } from "@toolmesh/errors";

/** What a request state binds: the call, its caller, the round of questions and until when. */
export interface StateClaims {
  /** The Dispatcher instance running the call: only it can deliver the answers. */
  instance: string;
  callId: string;
  tool: string;
  agentId: string;
  userId: string;
  /** Which stop of the call this answers; one answered already is refused. */
  round: number;
  /** Epoch ms after which the state is refused. */
  expiresMs: number;
}

/** The longest request state accepted; a longer one is not one of ours. */
const MAX_STATE_LENGTH = 2048;

/**
 * Request states (MCP 2026-07-28 `requestState`, AnswerInput's `request_state`): the claims,
 * readable, with an HMAC-SHA256 over them under a key only this process holds. The state goes
 * back to the instance it names, which alone can verify it, so replicas share no key.
 */
export class RequestStates {
  constructor(private readonly key: Buffer = randomBytes(32)) {}

  sign(claims: StateClaims): string {
    const payload = Buffer.from(
      JSON.stringify([
        1,
        claims.instance,
        claims.callId,
        claims.tool,
        claims.agentId,
        claims.userId,
        claims.round,
        claims.expiresMs,
      ]),
    ).toString("base64url");
    return `${payload}.${this.mac(payload)}`;
  }

  /** The claims of a state this process signed; INVALID_ARGUMENT naming `field` otherwise. */
  verify(field: string, state: string): StateClaims {
    const claims = readState(field, state);
    const [payload = "", mac = ""] = state.split(".");
    const expected = Buffer.from(this.mac(payload));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw tampered(field);
    return claims;
  }

  private mac(payload: string): string {
    return createHmac("sha256", this.key).update(payload).digest("base64url");
  }
}

/**
 * The claims a state says it carries, unverified: enough to send it to the instance it names,
 * which verifies it. INVALID_ARGUMENT when it is not a state at all.
 */
export function readState(field: string, state: string): StateClaims {
  if (state.length > MAX_STATE_LENGTH) throw tampered(field);
  const [payload = "", mac, extra] = state.split(".");
  if (mac === undefined || extra !== undefined) throw tampered(field);
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    throw tampered(field);
  }
  if (!Array.isArray(fields) || fields[0] !== 1 || fields.length !== 8) throw tampered(field);
  const [, instance, callId, tool, agentId, userId, round, expiresMs] = fields;
  if (
    typeof instance !== "string" ||
    typeof callId !== "string" ||
    typeof tool !== "string" ||
    typeof agentId !== "string" ||
    typeof userId !== "string" ||
    typeof round !== "number" ||
    typeof expiresMs !== "number"
  )
    throw tampered(field);
  return { instance, callId, tool, agentId, userId, round, expiresMs };
}

function tampered(field: string) {
  return invalidField(
    field,
    "is not a request state this call gave out, or was changed: send back the requestState of the input-required answer you are answering, unchanged",
  );
}
