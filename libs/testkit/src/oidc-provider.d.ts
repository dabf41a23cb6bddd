// oidc-provider ships no types; the few parts the test authorization server uses.
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    // biome-ignore lint/suspicious/noExplicitAny: the event listeners' arguments differ by event
    on(event: string, listener: (...args: any[]) => void): this;
  }
}
