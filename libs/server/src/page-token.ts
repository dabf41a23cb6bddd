import { createHash } from "node:crypto";
import { invalidField } from "@toolmesh/errors";

/** Page tokens of one list RPC: sizes, and a position tied to the filters it was issued for. */
export interface PageTokens {
  /** A page size from a request: 0 means the default; over the maximum is INVALID_ARGUMENT. */
  pageSize(requested: number): number;
  /** A short digest of a request's filters (in a fixed order); a token is valid only with the same. */
  fingerprint(filters: unknown): string;
  /** An opaque token: where the next page starts, and the filter fingerprint. */
  encode(position: string, fingerprint: string): string;
  /** The position ("" for no token); INVALID_ARGUMENT for a token not issued here or for other filters. */
  decode(token: string, fingerprint: string): string;
}

/** Characters of a fingerprint. */
const FINGERPRINT_LENGTH = 16;
/** `{"p":"","f":""}`: what a token's JSON holds besides its position and fingerprint. */
const JSON_OVERHEAD = 15;

/**
 * Page tokens for a list RPC. `position` checks the decoded position (an id, a name, a sequence,
 * a key), so a forged token cannot smuggle anything else into a query. Positions are printable
 * ASCII of at most `maxPositionLength` characters, which bounds the token before anything
 * decodes it.
 */
export function pageTokens(options: {
  defaultSize: number;
  maxSize: number;
  position: RegExp;
  maxPositionLength: number;
}): PageTokens {
  const maxPosition = options.maxPositionLength;
  // JSON escapes at most `"` and `\` of printable ASCII, doubling them; base64 adds a third.
  const maxTokenLength = Math.ceil(
    ((JSON_OVERHEAD + FINGERPRINT_LENGTH + 2 * maxPosition) * 4) / 3,
  );
  const fits = (position: string) =>
    position.length <= maxPosition && options.position.test(position);
  const malformed = () =>
    invalidField(
      "page_token",
      "malformed page token; pass the next_page_token of the previous response unchanged, or omit it for the first page",
    );
  return {
    pageSize(requested) {
      if (requested === 0) return options.defaultSize;
      if (requested > options.maxSize)
        throw invalidField("page_size", `is ${requested}; at most ${options.maxSize} allowed`);
      return requested;
    },
    fingerprint(filters) {
      return createHash("sha256")
        .update(JSON.stringify(filters))
        .digest("base64url")
        .slice(0, FINGERPRINT_LENGTH);
    },
    encode(position, fingerprint) {
      // A token decode would refuse is a bug of the RPC, not something to hand a caller.
      if (!fits(position))
        throw new Error(`page position ${JSON.stringify(position)} out of shape`);
      return Buffer.from(JSON.stringify({ p: position, f: fingerprint })).toString("base64url");
    },
    decode(token, fingerprint) {
      if (token === "") return "";
      if (token.length > maxTokenLength || !/^[A-Za-z0-9_-]+$/.test(token)) throw malformed();
      let value: { p?: unknown; f?: unknown } | undefined;
      try {
        value = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
      } catch {
        throw malformed();
      }
      if (typeof value?.p !== "string" || !fits(value.p)) throw malformed();
      if (value.f !== fingerprint)
        throw invalidField(
          "page_token",
          "was issued for different filters; repeat the request with the same filters, or start again without a page_token",
        );
      return value.p;
    },
  };
}
