import { ConnectError } from "@toolmesh/errors";

/** The error a call failed with, as a ConnectError; throws when the call succeeded. */
export async function failure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected the call to fail, it succeeded");
}
