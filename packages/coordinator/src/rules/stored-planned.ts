import type { ToolSpec } from '@tool-dispatch/shared';
import type { PlannedCall, StoredPlanned } from '../model.js';

/** A pass-1 decision as the store keeps it (the spec is re-read from the catalog on resume). */
export function storedOf(p: PlannedCall): StoredPlanned {
  const { spec: _spec, paths, ...rest } = p;
  return paths ? { ...rest, paths } : rest;
}

/** Pass 1's kept decisions of a round taken over, with each spec read again from the session's catalog view. */
export function restorePlanned(stored: readonly StoredPlanned[], specs: ReadonlyMap<string, ToolSpec>): PlannedCall[] {
  return stored.map((p) => ({ ...p, paths: p.paths, spec: specs.get(p.name) }));
}
