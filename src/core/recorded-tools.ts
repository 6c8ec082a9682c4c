import { canonicalJson } from './canonical-json';

/*
 * `wakegate shadow --tools recorded`: a shadow run answers a tool call from the recorded run's history
 * when the recorded run made the same call (same tool, same item, same arguments), and calls the tool
 * live otherwise. Pure and deterministic: the run workflow and its subagents use it.
 */

/** What a tool hands back to the run: JSON the model reads. `nothingToDo` ends a precheck `no_op`. */
export interface ToolResult {
  content: string;
  changed: boolean;
  nothingToDo?: boolean;
}

/** One tool call the recorded run made and the answer it got (src/shadow/recorded-tools.ts reads them from its history). */
export interface RecordedToolCall {
  tool: string;
  /** A subagent's call: the item it read. */
  item?: string;
  args: Record<string, unknown>;
  result: ToolResult;
}

/** How a shadow run's tool calls were answered: from the recorded run's history, or by the tool. */
export interface ToolAnswers {
  recorded: number;
  live: number;
}

const callKey = (tool: string, args: Record<string, unknown>, item?: string) => canonicalJson({ tool, item, args });

/**
 * The recorded calls of one run, answered in the order they were made: the first call matching a
 * recorded one takes its answer, the next identical call the next such answer; once a call's
 * recorded answers are all taken, it takes the last of them again (tools only read).
 */
export class RecordedTools {
  private readonly byKey = new Map<string, { results: ToolResult[]; next: number }>();

  constructor(
    calls: readonly RecordedToolCall[],
    /** Counted into: the run's record of how its calls were answered. */
    readonly counts: ToolAnswers = { recorded: 0, live: 0 },
  ) {
    for (const c of calls) {
      const key = callKey(c.tool, c.args, c.item);
      const entry = this.byKey.get(key) ?? { results: [], next: 0 };
      entry.results.push(c.result);
      this.byKey.set(key, entry);
    }
  }

  /** The recorded answer to this call, counted as such; undefined (counted live) when the recorded run never made it. */
  answer(tool: string, args: Record<string, unknown>, item?: string): ToolResult | undefined {
    const entry = this.byKey.get(callKey(tool, args, item));
    if (!entry) {
      this.counts.live += 1;
      return undefined;
    }
    this.counts.recorded += 1;
    const result = entry.results[Math.min(entry.next, entry.results.length - 1)]!;
    entry.next += 1;
    return result;
  }

  /** A subagent's counts, added to the run's. */
  add(child: ToolAnswers): void {
    this.counts.recorded += child.recorded;
    this.counts.live += child.live;
  }

  /** The recorded calls one subagent may be answered from (its item's). */
  static forItem(calls: readonly RecordedToolCall[], item: string): RecordedToolCall[] {
    return calls.filter((c) => c.item === item);
  }
}
