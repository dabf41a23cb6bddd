import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Listens on a free port of 127.0.0.1: the port, and a stop that drops every connection. */
export async function listenLocal(
  server: Server,
): Promise<{ port: number; stop(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
