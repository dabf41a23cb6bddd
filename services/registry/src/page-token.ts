import { createHash } from "node:crypto";
import { invalidField } from "@toolmesh/errors";
import { canonicalJson } from "@toolmesh/schema";

/** Default and largest page sizes of the list RPCs. */
export const pageSizes = { default: 50, max: 500 } as const;

/** A page size from a request: 0 means the default; over the maximum is INVALID_ARGUMENT. */
export function pageSize(requested: number): number {
  if (requested === 0) return pageSizes.default;
  if (requested > pageSizes.max)
    throw invalidField("page_size", `is ${requested}; at most ${pageSizes.max} allowed`);
  return requested;
}

/** A short digest of the filters of a list request; a token is valid only with the same filters. */
export function filterFingerprint(filters: object): string {
  return createHash("sha256").update(canonicalJson(filters)).digest("base64url").slice(0, 12);
}

/** An opaque page token: base64url of the last name returned and the filter fingerprint. */
export function encodePageToken(lastName: string, fingerprint: string): string {
  return Buffer.from(JSON.stringify({ a: lastName, f: fingerprint })).toString("base64url");
}

/** The name after which the page starts ("" for the first page); INVALID_ARGUMENT for a bad token. */
export function decodePageToken(token: string, fingerprint: string): string {
  if (token === "") return "";
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    parsed = undefined;
  }
  const value = parsed as { a?: unknown; f?: unknown } | undefined;
  if (
    !value ||
    typeof value.a !== "string" ||
    typeof value.f !== "string" ||
    !/^[A-Za-z0-9_-]+$/.test(token)
  )
    throw invalidField(
      "page_token",
      "is malformed; pass the next_page_token of the previous response unchanged",
    );
  if (value.f !== fingerprint)
    throw invalidField(
      "page_token",
      "was issued for different filters; repeat the request with the same filters, or start again without a page_token",
    );
  return value.a;
}
