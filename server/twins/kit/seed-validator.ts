/**
 * The seed check every twin makes the same way (docs/twins.md, "Seeds"): no seed is the twin's empty one,
 * unsafe keys and schema failures are a 400 naming the twin's seed, then the twin's own checks across fields.
 */
import type Joi from 'joi';
import { TwinInputError } from '../contract.ts';
import { assertSafeKeys } from '../runtime/safe-json.ts';

export interface SeedValidatorOptions<T> {
  /** The seed of an instance started without one (default `{}`). */
  empty?: T;
  /** Checks across fields the schema cannot express; throws TwinInputError. */
  check?(seed: T): void;
}

export function seedValidator<T extends object>(
  twin: string,
  schema: Joi.ObjectSchema<T>,
  options: SeedValidatorOptions<T> = {},
): (seed: unknown) => T {
  return (seed) => {
    if (seed === undefined || seed === null) return options.empty ?? ({} as T);
    assertSafeKeys(seed, `${twin} seed`);
    const { error, value } = schema.validate(seed);
    if (error) throw new TwinInputError(400, `${twin} seed: ${error.message}`);
    options.check?.(value);
    return value;
  };
}
