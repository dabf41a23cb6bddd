import { createHash } from "node:crypto";
import { invalidField } from "@toolmesh/errors";

/** Default and largest page sizes of the list RPCs. */
export const pageSizes = { default: 100, max: 1000 } as const;

/** A page size from a request: 0 means the default; over the maximum is INVALID_ARGUMENT. */
export function pageSize(requested: number): number {
  if (requested === 0) return pageSizes.default;
  if (requested > pageSizes.max)
    throw invalidField("page_size", `is ${requested}; at most ${pageSizes.max} allowed`);
  return requested;
}

/** A short digest of a list request's filters; a token is valid only with the same filters. */
export function filterFingerprint(filters: unknown): string {
  return createHash("sha256").update(JSON.stringify(filters)).digest("base64url").slice(0, 12);
}

/** An opaque token: base64url of the last id returned and the filter fingerprint. */
export function encodePageToken(lastId: string, fingerprint: string): string {
  return Buffer.from(JSON.stringify({ a: lastId, f: fingerprint })).toString("base64url");
}

/** The id after which the page starts ("" for the first page); INVALID_ARGUMENT for a bad token. */
export function decodePageToken(token: string, fingerprint: string): string {
  if (token === "") return "";
  let value: { a?: unknown; f?: unknown } | undefined;
  if (/^[A-Za-z0-9_-]{1,200}$/.test(token)) {
    try {
      value = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    } catch {
      value = undefined;
    }
  }
  if (!value || typeof value.a !== "string" || !/^[a-f0-9]{1,40}$/.test(value.a)) {
    throw invalidField(
      "page_token",
      "is not a token this server issued; pass next_page_token from the previous response",
    );
  }
  if (value.f !== fingerprint) {
    throw invalidField(
      "page_token",
      "was issued for different filters; repeat the request with the same filters or no token",
    );
  }
  return value.a;
}
