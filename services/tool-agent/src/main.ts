import { randomUUID } from "node:crypto";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { loadOrExit } from "@toolmesh/config";
import { holdLease } from "@toolmesh/nats";
import { DispatcherService, ImStatusSchema, RegistryService } from "@toolmesh/proto";
import { runService } from "@toolmesh/service";
import Docker from "dockerode";
import { AgentToolbox } from "./chat/agent-tools.js";
import { ServiceAgent } from "./chat/service-agent.js";
import { serviceTools } from "./chat/service-tools.js";
import { SessionStore } from "./chat/session-store.js";
import { resolveBinary, Sandboxes } from "./coding/sandbox.js";
import { openWorkshop } from "./coding/workshop.js";
import { toolAgentConfig } from "./config.js";
import { identityTokens, imCredential } from "./identity.js";
import { ImClient } from "./im/im-client.js";
import { modelsOf } from "./model/models.js";
import { createToolAgentServer } from "./server.js";
import { TaskDesk } from "./tasks/task-desk.js";
import { TaskStore } from "./tasks/task-store.js";

await runService({
  name: "tool-agent",
  config: toolAgentConfig,
  async start({ config, log, nc, js, jsm, authenticatedRpc }) {
    const models = loadOrExit(() => modelsOf(config));
    const imToken = config.imUrl ? loadOrExit(() => imCredential(config.imTokenFile)) : "";
    const sessions = await SessionStore.open({
      js,
      jsm,
      replicas: config.jetstreamReplicas,
      ttlMs: config.chatSessionTtlSeconds * 1000,
      log,
    });
    const store = await TaskStore.open({
      js,
      jsm,
      replicas: config.jetstreamReplicas,
      ttlMs: config.taskTtlDays * 24 * 3600 * 1000,
      logLimit: config.taskLogEntries,
      log,
    });
    const desk = new TaskDesk(store, { maxQueuedPerOwner: config.codingMaxQueuedPerOwner });
    const registry = createClient(
      RegistryService,
      createGrpcTransport({ baseUrl: config.registryUrl }),
    );
    const dispatcher = createClient(
      DispatcherService,
      createGrpcTransport({ baseUrl: config.dispatcherUrl }),
    );
    const agent = new ServiceAgent({
      model: models.service,
      sessions,
      toolbox: new AgentToolbox(serviceTools({ registry, tasks: desk }), log),
      settings: {
        maxMessageChars: config.chatMaxMessageChars,
        historyMessages: config.chatHistoryMessages,
        maxSteps: config.chatMaxSteps,
        timeoutMs: config.chatTimeoutMs,
      },
      log,
    });
    const rpc = await authenticatedRpc();
    const docker = new Docker({ socketPath: config.dockerSocket });
    const uv = config.codingUvEnabled ? resolveBinary(config.codingUv) : undefined;
    const sandboxes = new Sandboxes(
      docker,
      {
        root: path.resolve(config.dataDir, "tool-agent", "tasks"),
        image: config.codingImage,
        busybox: config.codingBusybox,
        network: config.codingNetwork,
        memoryBytes: config.codingMemoryBytes,
        cpuMillis: config.codingCpuMillis,
        pids: config.codingPids,
        commandTimeoutMs: config.codingCommandTimeoutMs,
        uv,
      },
      log,
    );
    const instance = randomUUID();
    // The Router runs in one replica at a time; every replica chats and answers status.
    const lease = await holdLease({
      nc,
      service: "tool-agent",
      instance,
      replicas: config.jetstreamReplicas,
      log,
      work: () =>
        openWorkshop({
          store,
          model: models.coding,
          docker,
          sandboxes,
          registry,
          registryUrl: config.registryUrl,
          dispatcher,
          tokens: identityTokens(config),
          budgets: {
            maxSteps: config.codingMaxSteps,
            timeoutMs: config.codingTimeoutMs,
            maxTokens: config.codingMaxTokens,
          },
          concurrency: config.codingConcurrency,
          commandTimeoutMs: config.codingCommandTimeoutMs,
          toolsRoot: path.resolve(config.dataDir, "tool-agent", "tools"),
          serve: {
            host: config.codingToolsHost,
            port: config.codingToolsPort,
            advertise: config.codingToolsAdvertise,
          },
          uv,
          instance,
          log,
        }),
    });
    const im = config.imUrl
      ? new ImClient({
          url: config.imUrl,
          contact: config.imContact,
          agent,
          sessions,
          authorization: `Bearer ${imToken}`,
          principal: () => rpc.authenticateRequest(`Bearer ${imToken}`, "im"),
          maxBackoffMs: config.imMaxBackoffMs,
          log,
        })
      : undefined;
    im?.start();
    const server = createToolAgentServer({
      ...rpc,
      agent,
      desk,
      status: {
        registry,
        store,
        desk,
        sessions,
        im: () => im?.status() ?? create(ImStatusSchema, { configured: false }),
        model: models.status,
        concurrency: config.codingConcurrency,
        log,
      },
    });
    return {
      server,
      async stop() {
        im?.stop();
        await lease.stop();
        sessions.stop();
        store.stop();
      },
    };
  },
});
