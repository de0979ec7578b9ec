/** What Twinbox knows of the Microsoft Entra ID twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import type { TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { accountsSchema } from '../../kit/oauth-accounts.ts';
import { describeMicrosoftChange } from './changes.ts';
import { summarizeMicrosoft } from './summary.ts';
import { microsoftPresets } from './presets.ts';

export interface MicrosoftSeed {
  /** Users of the tenant (Entra ID accounts); they sign in on the twin's account picker. */
  users?: Array<{ email: string; name?: string; given_name?: string; family_name?: string }>;
  /** Redirect URIs of the twin's app registration (AZURE_CLIENT_ID). */
  redirect_uris?: string[];
}

const schema = Joi.object<MicrosoftSeed>({
  users: accountsSchema({ name: 256, given_name: 64, family_name: 64 }),
  redirect_uris: Joi.array().items(Joi.string().uri({ scheme: ['http', 'https'] })),
});

const validateMicrosoftSeed = seedValidator('microsoft', schema);

export const microsoftDescriptor: TwinDescriptor<MicrosoftSeed, 'microsoft'> = {
  name: 'microsoft',
  description:
    'Microsoft Entra ID v2.0 OAuth 2.0 / OpenID Connect (authorization code with PKCE, refresh tokens, client credentials, JWKS) and Microsoft Graph users (/me, /users), on the emulate engine',
  hosts: ['login.microsoftonline.com', 'graph.microsoft.com'],
  envVarNames: [
    'AZURE_CLIENT_ID',
    'AZURE_CLIENT_SECRET',
    'AZURE_TENANT_ID',
    'AZURE_AUTHORITY_HOST',
    'AZURE_OAUTH2_TOKEN_URL',
    'AZURE_OAUTH2_AUTHORIZE_URL',
    'AZURE_ISSUER',
    'MICROSOFT_GRAPH_BASE_URL',
  ],
  summarize: summarizeMicrosoft,
  validateSeed: validateMicrosoftSeed,
  presets: microsoftPresets,
  describeChange: describeMicrosoftChange,
};
