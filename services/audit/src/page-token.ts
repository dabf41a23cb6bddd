import { createHash } from "node:crypto";
import { invalidField } from "@toolmesh/errors";
import type { RecordFilter } from "./audit-log.js";

/** A token is tied to the filter it was issued for, so it cannot be replayed on another query. */
function fingerprint(filter: RecordFilter): string {
  return createHash("sha256")
    .update(
      JSON.stringify([
        filter.agentId,
        filter.userId,
        filter.tool,
        filter.status,
        filter.traceId,
        filter.callId,
        filter.startMs ?? null,
        filter.endMs ?? null,
      ]),
    )
    .digest("base64url")
    .slice(0, 16);
}

/** An opaque token: continue below this sequence with the same filter. */
export function encodePageToken(beforeSequence: bigint, filter: RecordFilter): string {
  return Buffer.from(`v1:${beforeSequence}:${fingerprint(filter)}`).toString("base64url");
}

/** The sequence to continue below; 0n for no token; INVALID_ARGUMENT for anything not issued by us. */
export function decodePageToken(token: string, filter: RecordFilter): bigint {
  if (token === "") return 0n;
  const bad = (why: string) =>
    invalidField(
      "page_token",
      `${why}; pass the next_page_token of the previous response unchanged, or omit it for the first page`,
    );
  if (token.length > 200 || !/^[A-Za-z0-9_-]+$/.test(token)) throw bad("malformed page token");
  const match = /^v1:([1-9]\d{0,19}):([A-Za-z0-9_-]{16})$/.exec(
    Buffer.from(token, "base64url").toString("utf8"),
  );
  if (!match) throw bad("malformed page token");
  if (match[2] !== fingerprint(filter))
    throw bad("page token was issued for a query with other filters");
  return BigInt(match[1] as string);
}
