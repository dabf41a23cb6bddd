// oidc-provider ships no types; the few parts the test authorization server uses.
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    // biome-ignore lint/suspicious/noExplicitAny: the event listeners' arguments differ by event
    on(event: string, listener: (...args: any[]) => void): this;
    // biome-ignore lint/suspicious/noExplicitAny: Koa middleware over oidc-provider's context
    use(middleware: (ctx: any, next: () => Promise<void>) => Promise<void>): this;
    registerGrantType(
      name: string,
      // biome-ignore lint/suspicious/noExplicitAny: oidc-provider's context
      handler: (ctx: any) => Promise<void>,
      parameters: string[],
      allowedDuplicates: string[],
    ): void;
    readonly AccessToken: new (
      fields: Record<string, unknown>,
    ) => { resourceServer: unknown; expiration: number; save(): Promise<string> };
    readonly ResourceServer: new (
      identifier: string,
      info: Record<string, unknown>,
    ) => unknown;
  }
  export const errors: {
    InvalidGrant: new (description: string) => Error;
    InvalidRequest: new (description: string) => Error;
  };
}
