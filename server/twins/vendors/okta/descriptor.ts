/** What Twinbox knows of the Okta twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import { TwinInputError, type TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { describeOktaChange } from './changes.ts';
import { summarizeOkta } from './summary.ts';
import { oktaPresets } from './presets.ts';

export interface OktaSeed {
  users?: Array<{
    login: string;
    email?: string;
    first_name?: string;
    last_name?: string;
    status?: 'ACTIVE' | 'STAGED' | 'SUSPENDED' | 'DEPROVISIONED';
  }>;
  /** Groups; `members` are user logins. Every org also has Okta's built-in `Everyone`. */
  groups?: Array<{ name: string; description?: string; members?: string[] }>;
  /** Redirect URIs of the twin's OIDC app (OKTA_OAUTH2_CLIENT_ID). */
  redirect_uris?: string[];
}

const schema = Joi.object<OktaSeed>({
  users: Joi.array().items(
    Joi.object({
      login: Joi.string().email().required(),
      email: Joi.string().email(),
      first_name: Joi.string().max(50),
      last_name: Joi.string().max(50),
      status: Joi.string().valid('ACTIVE', 'STAGED', 'SUSPENDED', 'DEPROVISIONED'),
    }),
  ),
  groups: Joi.array().items(
    Joi.object({
      name: Joi.string().min(1).max(255).required(),
      description: Joi.string().allow(''),
      members: Joi.array().items(Joi.string().email()),
    }),
  ),
  redirect_uris: Joi.array().items(Joi.string().uri({ scheme: ['http', 'https'] })),
});

const validateOktaSeed = seedValidator('okta', schema, {
  check(value) {
    for (const [i, group] of (value.groups ?? []).entries()) {
      for (const [k, login] of (group.members ?? []).entries()) {
        if (!value.users?.some((u) => u.login === login)) {
          throw new TwinInputError(
            400,
            `okta seed: "groups[${i}].members[${k}]" "${login}" is not a seeded user`,
          );
        }
      }
    }
  },
});

export const oktaDescriptor: TwinDescriptor<OktaSeed, 'okta'> = {
  name: 'okta',
  description:
    'Okta management API (users and their lifecycle, groups, apps) with SSWS API tokens, and the OAuth 2.0 / OIDC authorization servers, on the emulate engine',
  hosts: ['*.okta.com', '*.oktapreview.com'],
  envVarNames: [
    'OKTA_CLIENT_ORGURL',
    'OKTA_CLIENT_TOKEN',
    'OKTA_OAUTH2_ISSUER',
    'OKTA_OAUTH2_CLIENT_ID',
    'OKTA_OAUTH2_CLIENT_SECRET',
  ],
  summarize: summarizeOkta,
  describeChange: describeOktaChange,
  validateSeed: validateOktaSeed,
  presets: oktaPresets,
};
