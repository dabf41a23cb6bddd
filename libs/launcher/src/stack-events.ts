// What a running stack reports of its processes; apart from stack.ts so the bus and the stack
// file can name them without importing the stack.

/** A process of the stack and where it listens. */
export interface RunningEndpoint {
  name: string;
  /** http://host:port, or undefined for a process without a port. */
  url?: string;
  pid: number;
}

/** How a process of the stack ended when nobody asked it to. */
export interface UnexpectedExit {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  lastLines: string;
}
