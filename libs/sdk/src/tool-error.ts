import type { JsonObject } from "@bufbuild/protobuf";

/** A tool failure with a stable code the caller sees in CallError.code. */
export class ToolError extends Error {
  override name = "ToolError";
  constructor(
    readonly code: string,
    message: string,
    readonly details?: JsonObject,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
