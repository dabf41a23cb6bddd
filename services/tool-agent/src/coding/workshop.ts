import type { Client } from "@connectrpc/connect";
import type { Logger } from "@toolmesh/log";
import type { DispatcherService, RegistryService } from "@toolmesh/proto";
import { registerTools, serveTools } from "@toolmesh/sdk";
import type Docker from "dockerode";
import type { ChatModel } from "../model/chat-model.js";
import { Router } from "../tasks/router.js";
import type { TaskStore } from "../tasks/task-store.js";
import { Builds } from "./builds.js";
import { CodingAgent } from "./coding-agent.js";
import type { CodingBudgets } from "./coding-prompt.js";
import { codingTools } from "./coding-tools.js";
import type { Sandboxes } from "./sandbox.js";

export interface WorkshopDeps {
  store: TaskStore;
  model: ChatModel | undefined;
  docker: Docker;
  sandboxes: Sandboxes;
  registry: Client<typeof RegistryService>;
  registryUrl: string;
  dispatcher: Client<typeof DispatcherService>;
  tokens: { toolAgent: () => string; codingAgent: () => string };
  budgets: CodingBudgets;
  concurrency: number;
  commandTimeoutMs: number;
  toolsRoot: string;
  uv: string | undefined;
  /** Where the coding tools are served and the address they are registered at. */
  serve: { host: string; port: number; advertise: string | undefined };
  instance: string;
  log: Logger;
}

/**
 * The Router's side of the tool agent, run by the one replica holding its lease: serves the
 * coding tools on a port of its own (127.0.0.1) and registers them there, removes the containers
 * of builds no process runs any more, and runs the Router with the CodingAgent. Resolves with
 * what stops it all.
 */
export async function openWorkshop(deps: WorkshopDeps): Promise<() => Promise<void>> {
  const { log } = deps;
  const builds = new Builds();
  const tools = codingTools({
    builds,
    sandboxes: deps.sandboxes,
    docker: deps.docker,
    registry: deps.registry,
    token: deps.tokens.toolAgent,
    toolsRoot: deps.toolsRoot,
    uv: deps.uv,
    commandTimeoutMs: deps.commandTimeoutMs,
  });
  const served = await serveTools(tools, {
    host: deps.serve.host,
    port: deps.serve.port,
    ...(deps.serve.advertise ? { advertiseAddress: deps.serve.advertise } : {}),
  });
  const registered = registerWithRetry(tools, served.address, deps);
  await deps.sandboxes
    .removeStray((taskId) => builds.has(taskId))
    .catch((error: unknown) => log.warn({ err: error }, "could not look for stray sandboxes"));
  const model = deps.model;
  const coding = model
    ? new CodingAgent({
        model,
        dispatcher: deps.dispatcher,
        registry: deps.registry,
        token: deps.tokens.codingAgent,
        tasks: deps.store,
        builds,
        sandboxes: deps.sandboxes,
        budgets: deps.budgets,
        log,
      })
    : undefined;
  if (!coding) log.warn("no model is configured (TOOLMESH_MODEL_URL): tasks stay queued");
  const router = new Router({
    store: deps.store,
    run: coding
      ? async (task, signal) => {
          // A build needs its tools registered; the first one after a start may wait for that.
          await registered.wait(signal);
          return coding.run(task, signal);
        }
      : undefined,
    concurrency: deps.concurrency,
    instance: deps.instance,
    log,
  });
  await router.start();
  log.info({ tools_address: served.address }, "Router running; coding tools served");
  return async () => {
    registered.stop();
    await router.stop();
    await served.close();
  };
}

/** Registers the coding tools, again and again until the Registry takes them. */
function registerWithRetry(
  tools: Parameters<typeof registerTools>[0],
  address: string,
  deps: WorkshopDeps,
): { wait(signal: AbortSignal): Promise<void>; stop(): void } {
  let stopped = false;
  let done = false;
  const waiters = new Set<() => void>();
  void (async () => {
    for (let attempt = 0; !stopped; attempt++) {
      const token = deps.tokens.toolAgent();
      try {
        if (token === "")
          throw new Error(
            "no credential: TOOLMESH_TOOL_AGENT_TOKEN is unset and the Permission service has not written tool-agent.token",
          );
        await registerTools(tools, address, { url: deps.registryUrl, token });
        done = true;
        deps.log.info({ address, tools: tools.length }, "coding tools registered");
        for (const wake of waiters) wake();
        return;
      } catch (error) {
        deps.log.warn({ err: error, attempt }, "coding tools not registered yet; trying again");
        await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 200 * 2 ** attempt)));
      }
    }
  })();
  return {
    wait(signal) {
      if (done) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const wake = () => {
          waiters.delete(wake);
          resolve();
        };
        waiters.add(wake);
        signal.addEventListener("abort", () => {
          waiters.delete(wake);
          reject(signal.reason);
        });
      });
    },
    stop() {
      stopped = true;
    },
  };
}
