import { fromJson, type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { subjects } from "@toolmesh/nats";
import {
  type DispatchResponse,
  DispatchResponseSchema,
  type Principal,
  PrincipalSchema,
} from "@toolmesh/proto";
import type { NatsConnection, Subscription } from "nats";
import type { InputRequest } from "../runtimes/runtime.js";

/** What one Dispatcher asks another about a call the other runs. */
export interface ReplicaLink {
  /** Answers a call's questions with its request state; the call's next stop. */
  answer(
    instance: string,
    state: string,
    responses: Record<string, JsonObject>,
    principal: Principal,
  ): Promise<DispatchResponse>;
  /** Answers some of a task's questions (tasks/update). */
  update(
    instance: string,
    callId: string,
    responses: Record<string, JsonObject>,
    principal: Principal,
  ): Promise<void>;
  /** Cancels a running call of the caller's; false when that instance does not run it. */
  cancel(instance: string, callId: string, principal: Principal): Promise<boolean>;
  /** The questions a call waits on, or undefined when it waits on none. */
  waiting(
    instance: string,
    callId: string,
    principal: Principal,
  ): Promise<Record<string, InputRequest> | undefined>;
  /** Delivers a 2025-11-25 client's POSTed answer to the instance that asked; true when taken. */
  deliver(instance: string, response: JsonObject, principal: Principal): Promise<boolean>;
}

/** What an instance answers the others with: the calls it runs. */
export type ReplicaHandlers = {
  [Op in keyof ReplicaLink]: (
    ...args: Parameters<ReplicaLink[Op]> extends [string, ...infer Rest] ? Rest : never
  ) => ReturnType<ReplicaLink[Op]>;
};

/** How long one replica waits for another (a stop of a call may take that long to come). */
const ASK_TIMEOUT_MS = 10 * 60 * 1000;
const QUICK_TIMEOUT_MS = 5000;

/**
 * Replicas asking each other over the bus, request and reply on
 * `toolmesh.dispatchers.<instance>`, which only Dispatchers may publish to (bus-access): the
 * asking replica authenticated the caller and passes its principal along.
 */
export class NatsReplicaLink implements ReplicaLink {
  private subscription: Subscription | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly instance: string,
    private readonly log: Logger,
  ) {}

  /** Answers the other replicas about this instance's calls until stopped. */
  serve(handlers: ReplicaHandlers): () => void {
    const sub = this.nc.subscribe(subjects.dispatcherInstance(this.instance));
    this.subscription = sub;
    void (async () => {
      for await (const msg of sub) {
        void (async () => {
          let reply: JsonObject;
          try {
            const ask = JSON.parse(new TextDecoder().decode(msg.data)) as {
              op: keyof ReplicaLink;
              args: JsonValue[];
              principal: JsonValue;
            };
            const principal = fromJson(PrincipalSchema, ask.principal);
            reply = { value: await this.run(handlers, ask.op, ask.args, principal) };
          } catch (error) {
            const refusal = ConnectError.from(error);
            reply = { error: { code: refusal.code, message: refusal.rawMessage } };
          }
          msg.respond(new TextEncoder().encode(JSON.stringify(reply)));
        })().catch((error: unknown) => this.log.warn({ err: error }, "replica request failed"));
      }
    })();
    return () => sub.unsubscribe();
  }

  private async run(
    handlers: ReplicaHandlers,
    op: keyof ReplicaLink,
    args: JsonValue[],
    principal: Principal,
  ): Promise<JsonValue> {
    switch (op) {
      case "answer": {
        const [state, responses] = args as [string, Record<string, JsonObject>];
        return toJson(DispatchResponseSchema, await handlers.answer(state, responses, principal));
      }
      case "update": {
        const [callId, responses] = args as [string, Record<string, JsonObject>];
        await handlers.update(callId, responses, principal);
        return null;
      }
      case "cancel":
        return handlers.cancel(String(args[0]), principal);
      case "waiting":
        return ((await handlers.waiting(String(args[0]), principal)) ?? null) as JsonValue;
      case "deliver":
        return handlers.deliver(args[0] as JsonObject, principal);
      default:
        throw new ConnectError(`unknown replica request ${String(op)}`, Code.InvalidArgument);
    }
  }

  private async ask(
    instance: string,
    op: keyof ReplicaLink,
    args: JsonValue[],
    principal: Principal,
    timeoutMs = QUICK_TIMEOUT_MS,
  ): Promise<JsonValue> {
    const body = { op, args, principal: toJson(PrincipalSchema, principal) };
    let data: Uint8Array;
    try {
      data = (
        await this.nc.request(
          subjects.dispatcherInstance(instance),
          new TextEncoder().encode(JSON.stringify(body)),
          { timeout: timeoutMs },
        )
      ).data;
    } catch (error) {
      throw new ConnectError(
        `the Dispatcher that runs this call (${instance}) cannot be reached (${String((error as Error)?.message ?? error)}); it may have stopped`,
        Code.NotFound,
      );
    }
    const reply = JSON.parse(new TextDecoder().decode(data)) as {
      value?: JsonValue;
      error?: { code: Code; message: string };
    };
    if (reply.error) throw new ConnectError(reply.error.message, reply.error.code);
    return reply.value ?? null;
  }

  async answer(
    instance: string,
    state: string,
    responses: Record<string, JsonObject>,
    principal: Principal,
  ): Promise<DispatchResponse> {
    const value = await this.ask(instance, "answer", [state, responses], principal, ASK_TIMEOUT_MS);
    return fromJson(DispatchResponseSchema, value ?? {});
  }

  async update(
    instance: string,
    callId: string,
    responses: Record<string, JsonObject>,
    principal: Principal,
  ): Promise<void> {
    await this.ask(instance, "update", [callId, responses], principal);
  }

  async cancel(instance: string, callId: string, principal: Principal): Promise<boolean> {
    return (await this.ask(instance, "cancel", [callId], principal)) === true;
  }

  async waiting(
    instance: string,
    callId: string,
    principal: Principal,
  ): Promise<Record<string, InputRequest> | undefined> {
    const value = await this.ask(instance, "waiting", [callId], principal);
    return (value ?? undefined) as Record<string, InputRequest> | undefined;
  }

  async deliver(instance: string, response: JsonObject, principal: Principal): Promise<boolean> {
    return (await this.ask(instance, "deliver", [response], principal)) === true;
  }

  close(): void {
    this.subscription?.unsubscribe();
  }
}
