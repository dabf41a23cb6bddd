import { createRegistry } from "@bufbuild/protobuf";
import { codeToHttpStatus, errorToJson } from "@connectrpc/connect/protocol-connect";
import type { RequestAuthenticator } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  PermissionDenialSchema,
  type Principal,
  ToolNotFoundSchema,
  ValidationFailureSchema,
} from "@toolmesh/proto";

/** Error details are written with their decoded form (`debug`) next to the binary one. */
const detailTypes = createRegistry(
  ValidationFailureSchema,
  ToolNotFoundSchema,
  PermissionDenialSchema,
);

/** A JSON response. */
export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/**
 * An error as the Connect protocol writes it (`{"code","message","details"}`) with the HTTP
 * status of its code, so the plain routes fail exactly like the RPCs. A 401 carries
 * `WWW-Authenticate` pointing at the protected-resource metadata (RFC 9728).
 */
export function errorResponse(error: unknown, resourceMetadataUrl?: string): Response {
  const connectError = ConnectError.from(error);
  const headers: Record<string, string> = {};
  if (connectError.code === Code.Unauthenticated) {
    headers["www-authenticate"] = resourceMetadataUrl
      ? `Bearer resource_metadata="${resourceMetadataUrl}"`
      : "Bearer";
  }
  return json(
    codeToHttpStatus(connectError.code),
    errorToJson(connectError, { registry: detailTypes }),
    headers,
  );
}

/**
 * The caller of a plain HTTP request from `peer`, by its `Authorization: Bearer` header, with the
 * same failure logging and throttling as the RPCs; UNAUTHENTICATED otherwise.
 */
export function authenticateRequest(
  authenticate: RequestAuthenticator,
  request: Request,
  peer: string,
): Promise<Principal> {
  return Promise.resolve().then(() => authenticate(request.headers.get("authorization"), peer));
}
