import { create, type JsonObject } from "@bufbuild/protobuf";
import { type FieldViolation, FieldViolationSchema } from "@toolmesh/proto";
import type { ErrorObject } from "ajv";

/** ajv errors as FieldViolations: a JSON pointer, a sentence, the keyword and its params. */
export function toViolations(errors: ErrorObject[] | null | undefined): FieldViolation[] {
  return (errors ?? []).map((e) => {
    let path = e.instancePath;
    let message = e.message ?? "is invalid";
    if (e.keyword === "required") {
      const missing = (e.params as { missingProperty?: string }).missingProperty ?? "";
      path = `${path}/${missing}`;
      message = "is required";
    } else if (e.keyword === "additionalProperties") {
      const extra = (e.params as { additionalProperty?: string }).additionalProperty ?? "";
      path = `${path}/${extra}`;
      message = "is not allowed (no such property)";
    } else if (e.keyword === "enum") {
      const allowed = (e.params as { allowedValues?: unknown[] }).allowedValues ?? [];
      message = `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}`;
    }
    return create(FieldViolationSchema, {
      path,
      message,
      keyword: e.keyword,
      params: toJsonObject(e.params),
      schemaPath: e.schemaPath,
    });
  });
}

function toJsonObject(value: unknown): JsonObject {
  return JSON.parse(JSON.stringify(value ?? {})) as JsonObject;
}
