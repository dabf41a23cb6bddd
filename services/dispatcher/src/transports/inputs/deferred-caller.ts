import type { JsonObject } from "@bufbuild/protobuf";
import {
  type AskingCall,
  CallerRefusal,
  type CallerSide,
  type InputRequest,
} from "../../runtimes/runtime.js";

interface Question {
  request: InputRequest;
  resolve: (answer: JsonObject) => void;
  reject: (error: Error) => void;
}

/**
 * A caller that answers later (an MCP 2026-07-28 client, a gRPC caller): the tool's questions
 * wait here, the transport answers its request with them at each stop, and the answers arrive
 * with a later request.
 */
export class DeferredCaller implements CallerSide {
  private readonly questions = new Map<string, Question>();
  private stopped: (() => void) | undefined;
  private stop: Promise<void> | undefined;
  /** The call asking, known from its first question. */
  asking: AskingCall | undefined;
  /** Hears the first question of the call (the input desk files the call then). */
  onFirstQuestion: ((call: AskingCall) => void) | undefined;

  constructor(
    readonly capabilities: JsonObject,
    readonly presupplied?: Record<string, JsonObject> | undefined,
    readonly logLevel?: string | undefined,
  ) {}

  ask(key: string, request: InputRequest, call: AskingCall): Promise<JsonObject> {
    if (!this.asking) {
      this.asking = call;
      this.onFirstQuestion?.(call);
    }
    let unique = key;
    for (let n = 2; this.questions.has(unique); n++) unique = `${key}-${n}`;
    return new Promise((resolve, reject) => {
      this.questions.set(unique, { request, resolve, reject });
      // Questions asked together stop the call together: the stop is told after this tick.
      const stopped = this.stopped;
      if (stopped) setImmediate(stopped);
    });
  }

  /** Resolves once a question waits for its answer. */
  nextStop(): Promise<void> {
    if (this.questions.size > 0) return new Promise((resolve) => setImmediate(resolve));
    if (!this.stop)
      this.stop = new Promise((resolve) => {
        this.stopped = () => {
          this.stopped = undefined;
          this.stop = undefined;
          resolve();
        };
      });
    return this.stop;
  }

  /** The questions waiting now, by key. */
  waiting(): Record<string, InputRequest> {
    return Object.fromEntries([...this.questions].map(([key, q]) => [key, q.request]));
  }

  /** Delivers the answers to the questions they name; returns the keys answered. */
  answer(responses: Record<string, JsonObject>): string[] {
    const answered: string[] = [];
    for (const [key, answer] of Object.entries(responses)) {
      const question = this.questions.get(key);
      if (!question) continue;
      this.questions.delete(key);
      question.resolve(answer);
      answered.push(key);
    }
    return answered;
  }

  /** Ends every waiting question (the call ended, or its caller went away). */
  abandon(reason: string): void {
    for (const question of this.questions.values())
      question.reject(new CallerRefusal(-32603, reason));
    this.questions.clear();
  }
}
