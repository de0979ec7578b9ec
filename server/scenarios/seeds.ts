import { TwinInputError } from '../twins/contract.ts';
import { twinDescriptors } from '../twins/descriptors.ts';
import { badRequest } from '../errors.ts';

/** Seed documents keyed by twin name (docs/twins.md, "Seeds"). */
export type SeedDocument = Record<string, unknown>;

/**
 * Validates each twin's part of a seed document with that twin's own schema, the one the twin applies
 * at start, so a seed accepted here cannot fail later. A bad one is a 400 whose detail names the twin
 * and the field.
 */
export function validateSeedDocument(seed: SeedDocument, twins: readonly string[]): SeedDocument {
  const valid: SeedDocument = {};
  for (const [twin, part] of Object.entries(seed)) {
    const descriptor = twinDescriptors.get(twin);
    if (!descriptor) throw badRequest(`seed: "${twin}" is not a twin name.`, 'invalid_seed');
    if (!twins.includes(twin)) {
      throw badRequest(
        `seed: "${twin}" is seeded but not among the twins (${twins.join(', ') || 'none'}).`,
        'invalid_seed',
      );
    }
    try {
      descriptor.validateSeed(part);
    } catch (error) {
      if (error instanceof TwinInputError) throw badRequest(error.message, 'invalid_seed');
      throw error;
    }
    valid[twin] = part;
  }
  return valid;
}

/** Like validateSeedDocument, for seeds we made ourselves (the planner): drops a bad part with a note. */
export function keepValidParts(seed: SeedDocument, twins: readonly string[], notes: string[]): SeedDocument {
  const kept: SeedDocument = {};
  for (const [twin, part] of Object.entries(seed)) {
    if (!twins.includes(twin)) {
      notes.push(
        `${twin}: the prompt describes ${twin} data, but ${twin} is not among this sandbox's twins; not seeded.`,
      );
      continue;
    }
    try {
      twinDescriptors.get(twin)?.validateSeed(part);
      kept[twin] = part;
    } catch (error) {
      notes.push(
        `${twin}: the planned seed was not valid and was not applied (${(error as Error).message}).`,
      );
    }
  }
  return kept;
}
