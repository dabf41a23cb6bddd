import type { NatsCluster, NatsServer } from "@toolmesh/launcher";

/** One node of a test stack's JetStream cluster. */
export interface TestClusterNode {
  /** Its server name (toolmesh-1 …), as JetStream names leaders. */
  readonly name: string;
  readonly url: string;
  /** Its process id (0 while it is down). */
  readonly pid: number;
  /** SIGKILL, as a crash would; the store stays and nothing restarts it until start(). */
  kill(): Promise<void>;
  /** Starts it again with the same ports, store and config. */
  start(): Promise<void>;
  /** SIGSTOP: the process stays, silent, holding its sockets (a hung machine). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
}

/** A test stack's three-node cluster and what a fault test asks of it. */
export interface TestCluster {
  readonly nodes: TestClusterNode[];
  /** The node that is the JetStream meta leader now. */
  metaLeader(): Promise<TestClusterNode>;
  /** Resolves once every running node is healthy (JetStream current with a meta leader). */
  ready(timeoutMs?: number): Promise<void>;
}

/** The test view of a launcher's cluster. */
export function testCluster(cluster: NatsCluster): TestCluster {
  const nodes = cluster.nodes.map(testNode);
  return {
    nodes,
    async metaLeader() {
      const name = await cluster.metaLeader();
      const node = nodes.find((n) => n.name === name);
      if (!node) throw new Error(`no node is the meta leader now (reported: ${name})`);
      return node;
    },
    ready: (timeoutMs) => cluster.ready(timeoutMs),
  };
}

function testNode(server: NatsServer): TestClusterNode {
  const pid = () => server.current?.process.pid ?? 0;
  const signal = (sig: NodeJS.Signals) => {
    const id = pid();
    if (id) process.kill(id, sig);
  };
  return {
    name: server.serverName ?? "",
    url: server.url,
    get pid() {
      return pid();
    },
    kill: () => server.kill(),
    start: () => server.start(),
    pause: () => signal("SIGSTOP"),
    resume: () => signal("SIGCONT"),
  };
}
