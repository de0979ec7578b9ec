/** What Twinbox knows of the Sign in with Apple twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import type { TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { accountsSchema } from '../../kit/oauth-accounts.ts';
import { describeAppleChange } from './changes.ts';
import { summarizeApple } from './summary.ts';
import { applePresets } from './presets.ts';

export interface AppleSeed {
  /** Apple Accounts that can sign in; `is_private_email` gives the app a private relay address. */
  users?: Array<{
    email: string;
    name?: string;
    given_name?: string;
    family_name?: string;
    is_private_email?: boolean;
  }>;
  /** Return URLs of the twin's Services ID (APPLE_CLIENT_ID). */
  redirect_uris?: string[];
}

const schema = Joi.object<AppleSeed>({
  users: accountsSchema(
    { name: 200, given_name: 100, family_name: 100 },
    { is_private_email: Joi.boolean() },
  ),
  redirect_uris: Joi.array().items(Joi.string().uri({ scheme: ['http', 'https'] })),
});

const validateAppleSeed = seedValidator('apple', schema);

export const appleDescriptor: TwinDescriptor<AppleSeed, 'apple'> = {
  name: 'apple',
  description:
    'Sign in with Apple (authorization code, refresh, revoke, RS256 ID tokens, JWKS) with ES256 client secrets checked as Apple checks them, on the emulate engine',
  hosts: ['appleid.apple.com'],
  envVarNames: ['APPLE_CLIENT_ID', 'APPLE_TEAM_ID', 'APPLE_KEY_ID', 'APPLE_PRIVATE_KEY', 'APPLE_ISSUER'],
  summarize: summarizeApple,
  validateSeed: validateAppleSeed,
  presets: applePresets,
  describeChange: describeAppleChange,
};
