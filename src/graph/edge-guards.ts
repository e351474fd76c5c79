import type { EntityManager } from 'typeorm';

/** What a guard sees of an edge about to be written. */
export interface GuardedEdge {
  type: string;
  source_node_id: string;
  target_node_id: string;
}

/**
 * A rule another feature holds over the graph's edges (agents: no CONTAINS edge may join two
 * sessions' claims), run inside the writer's transaction before a new edge is inserted, once both
 * ends are found live and locked. It refuses by throwing a domain error, which rolls the write back.
 * The graph names no feature above it: a feature declares its guards in its manifest (`edgeGuards`)
 * and the composition root installs them (src/app/runtime.ts).
 */
export type EdgeGuard = (m: EntityManager, workspaceId: string, edge: GuardedEdge) => Promise<void>;

let installed: readonly EdgeGuard[] = [];

/** The guards every edge write runs, in order; replaces any installed before (one composition per process). */
export function installEdgeGuards(guards: readonly EdgeGuard[]): void {
  installed = [...guards];
}

/** Runs every installed guard on the edge about to be written. */
export async function guardEdgeWrite(m: EntityManager, workspaceId: string, edge: GuardedEdge): Promise<void> {
  for (const guard of installed) await guard(m, workspaceId, edge);
}
