/** Raised when a process of the stack cannot come up; the message says which and why. */
export class StackError extends Error {
  override name = "StackError";
}
