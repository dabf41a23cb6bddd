import type { JetStreamManager } from "nats";
import { type Call, closedLoop } from "./closed-loop.js";
import { consumersDone } from "./sustained.js";

/** One round: the proxy's and the chain's throughput, measured one right after the other. */
export interface RatioRound {
  proxyRps: number;
  chainRps: number;
}

/** The chain ÷ proxy ratio of alternating rounds, and their median. */
export interface RatioRounds {
  concurrency: number;
  seconds: number;
  rounds: RatioRound[];
  /** The median of the rounds' ratios. */
  median: number;
}

/**
 * The chain's throughput against the proxy's, measured in short alternating windows rather than
 * in two cells a minute apart: this machine is a VM whose speed drifts by tens of percent within
 * minutes (the proxy's own c64 rate went 4,700–7,500 rps between runs of one day), and a ratio
 * of two windows taken far apart measures that drift as much as the chain. The order alternates
 * (proxy then chain, then chain then proxy) so a steady drift cancels, and every chain window is
 * followed by the consumers finishing its calls before the next window starts, so the proxy
 * never shares the machine with the chain's leftover work.
 */
export async function ratioRounds(options: {
  proxy: Call;
  chain: Call;
  concurrency: number;
  seconds: number;
  rounds: number;
  jsm: JetStreamManager;
}): Promise<RatioRounds> {
  const { proxy, chain, concurrency, seconds, jsm } = options;
  const window = async (call: Call, name: string, isChain: boolean) => {
    await consumersDone(jsm);
    const run = await closedLoop(name, call, seconds * 1000, concurrency, false);
    if (isChain) await consumersDone(jsm);
    return run.calls / run.elapsed;
  };
  const rounds: RatioRound[] = [];
  for (let i = 0; i < options.rounds; i++) {
    const proxyFirst = i % 2 === 0;
    const first = await window(proxyFirst ? proxy : chain, `round ${i}`, !proxyFirst);
    const second = await window(proxyFirst ? chain : proxy, `round ${i}`, proxyFirst);
    const round = proxyFirst
      ? { proxyRps: first, chainRps: second }
      : { proxyRps: second, chainRps: first };
    rounds.push(round);
    process.stderr.write(
      `ratio round ${i + 1}: chain ${round.chainRps.toFixed(0)} / proxy ${round.proxyRps.toFixed(0)} rps = ${(round.chainRps / round.proxyRps).toFixed(2)}×\n`,
    );
  }
  const ratios = rounds.map((r) => r.chainRps / r.proxyRps).sort((a, b) => a - b);
  const mid = Math.floor(ratios.length / 2);
  const median =
    ratios.length % 2 === 1
      ? (ratios[mid] ?? Number.NaN)
      : ((ratios[mid - 1] ?? Number.NaN) + (ratios[mid] ?? Number.NaN)) / 2;
  return { concurrency, seconds, rounds, median };
}
