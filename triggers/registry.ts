import type { TriggerDefinition } from './definition';
import { pingTrigger } from './ping';
import { campaignsTrigger } from './campaigns';
import { depsTrigger } from './deps';
import { scheduleTrigger } from './schedule';

/** The trigger definitions this deployment accepts, by source. */
export class TriggerRegistry {
  private readonly bySource = new Map<string, TriggerDefinition>();

  constructor(defs: readonly TriggerDefinition[]) {
    for (const def of defs) {
      if (this.bySource.has(def.source)) throw new Error(`trigger source "${def.source}" is defined twice`);
      this.bySource.set(def.source, def);
    }
  }

  get(source: string): TriggerDefinition | undefined {
    return this.bySource.get(source);
  }

  sources(): string[] {
    return [...this.bySource.keys()].sort();
  }
}

/** Every built-in trigger definition. */
export const builtinTriggers: readonly TriggerDefinition[] = [pingTrigger, scheduleTrigger, campaignsTrigger, depsTrigger];

export function defaultRegistry(): TriggerRegistry {
  return new TriggerRegistry(builtinTriggers);
}
