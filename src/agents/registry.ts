import type { AgentDefinition } from './types';

/** Agents by name. */
export type AgentRegistry = Readonly<Record<string, AgentDefinition>>;
