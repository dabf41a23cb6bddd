import type { JetStreamManager } from "nats";
import { type Call, closedLoop, percentile } from "./closed-loop.js";
import { consumersDone } from "./sustained.js";

/** One round: the proxy's and the chain's throughput and p50, one right after the other. */
export interface RatioRound {
  proxyRps: number;
  chainRps: number;
  proxyP50: number;
  chainP50: number;
}

/** Alternating rounds of the proxy and the chain at one concurrency, and their medians. */
export interface RatioRounds {
  concurrency: number;
  seconds: number;
  rounds: RatioRound[];
  /** The median of the rounds' chain ÷ proxy throughput. */
  median: number;
  /** The median of the rounds' chain p50 − proxy p50, in ms. */
  addedP50: number;
}

/**
 * The chain's throughput and p50 against the proxy's, measured in short alternating windows
 * rather than in two cells a minute apart: this machine is a VM whose speed drifts by tens of
 * percent within minutes (the proxy's own c64 rate went 4,700–7,500 rps between runs of one day),
 * and a ratio of two windows taken far apart measures that drift as much as the chain. The order alternates
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
    const run = await closedLoop(name, call, seconds * 1000, concurrency, true);
    if (isChain) await consumersDone(jsm);
    const sorted = run.latencies.sort((a, b) => a - b);
    return {
      rps: run.calls / run.elapsed,
      p50: percentile(sorted, 0.5),
    };
  };
  const rounds: RatioRound[] = [];
  for (let i = 0; i < options.rounds; i++) {
    const proxyFirst = i % 2 === 0;
    const first = await window(proxyFirst ? proxy : chain, `round ${i}`, !proxyFirst);
    const second = await window(proxyFirst ? chain : proxy, `round ${i}`, proxyFirst);
    const [proxyRun, chainRun] = proxyFirst ? [first, second] : [second, first];
    const round = {
      proxyRps: proxyRun.rps,
      chainRps: chainRun.rps,
      proxyP50: proxyRun.p50,
      chainP50: chainRun.p50,
    };
    rounds.push(round);
    process.stderr.write(
      `c${concurrency} round ${i + 1}: chain ${round.chainRps.toFixed(0)} / proxy ${round.proxyRps.toFixed(0)} rps = ${(round.chainRps / round.proxyRps).toFixed(2)}×, p50 ${round.chainP50.toFixed(3)} − ${round.proxyP50.toFixed(3)} ms\n`,
    );
  }
  return {
    concurrency,
    seconds,
    rounds,
    median: median(rounds.map((r) => r.chainRps / r.proxyRps)),
    addedP50: median(rounds.map((r) => r.chainP50 - r.proxyP50)),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? Number.NaN) + (sorted[mid] ?? Number.NaN)) / 2;
}
