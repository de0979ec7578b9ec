/**
 * The sign-in twins' (Microsoft's, Apple's) seed accounts, apart from their driver base class
 * (engine/oauth-engine-twin.ts): a seed schema belongs to the twin's descriptor, which the main process
 * loads without any driver or the engine.
 */
import Joi from 'joi';

/**
 * The seed's accounts as the sign-in twins take them: a unique email (any domain: sandboxes use example
 * domains, which Joi's list of TLDs refuses) and names up to the vendor's lengths, plus the vendor's own fields.
 */
export function accountsSchema(
  max: { name: number; given_name: number; family_name: number },
  extra: Record<string, Joi.Schema> = {},
): Joi.ArraySchema {
  return Joi.array()
    .items(
      Joi.object({
        email: Joi.string()
          .email({ tlds: { allow: false } })
          .required(),
        name: Joi.string().max(max.name),
        given_name: Joi.string().max(max.given_name),
        family_name: Joi.string().max(max.family_name),
        ...extra,
      }),
    )
    .unique('email');
}
