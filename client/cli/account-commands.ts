import { parseArgs } from 'node:util';
import { TwinboxClient } from '../client.ts';
import { TwinboxApiError } from '../errors.ts';
import type { ApiKeyInfo } from '../types.ts';
import { readConfig, resolveSettings, writeConfig } from './config.ts';
import { authenticatedClient, print, printJson, type CliContext } from './context.ts';
import { table } from './format.ts';

/** `twinbox whoami`: the account behind the key in use (GET /me), and where that key came from. */
export async function whoami(context: CliContext, args: string[]): Promise<void> {
  parseArgs({ args, options: {} });
  const { client, settings } = await authenticatedClient(context);
  const me = await client.me();
  const github = me.identities.find((identity) => identity.provider === 'github');
  const source =
    settings.keySource === 'TWINBOX_API_KEY' ? 'from TWINBOX_API_KEY' : `saved in ${settings.configPath}`;
  if (context.json) {
    printJson(context, { ...me, api_url: settings.apiUrl, key_source: settings.keySource });
    return;
  }
  const rows = [
    ['E-mail:', me.account.email],
    ['Plan:', me.account.plan ?? '(unknown)'],
    ['Token:', me.token_type === 'api_key' ? `API key, ${source}` : `session token, ${source}`],
    ['GitHub:', github ? github.login : 'not connected (connect it in the web app)'],
    ['API:', settings.apiUrl],
  ];
  print(context, table(rows).join('\n'));
}

type Revocation =
  { revoked: true; key: ApiKeyInfo } | { revoked: false; why: string; alreadyRevoked?: boolean };

/**
 * `twinbox logout`: revokes the saved API key on its Twinbox (`DELETE /api-keys/current`), then forgets
 * it. The key is forgotten even when Twinbox cannot be reached: the output says what was done, and
 * where a key still works, how to end it.
 */
export async function logout(context: CliContext, args: string[]): Promise<void> {
  parseArgs({ args, options: {} });
  const settings = await resolveSettings(context.apiUrlFlag);
  const stored = await readConfig(settings.configPath);
  const envNote =
    settings.keySource === 'TWINBOX_API_KEY'
      ? 'TWINBOX_API_KEY is set in your environment and still signs you in: unset it (logout never revokes it).'
      : undefined;
  if (!stored.api_key) {
    if (context.json) {
      printJson(context, {
        forgotten: false,
        revoked: false,
        config: settings.configPath,
        note: envNote ?? null,
      });
    } else {
      print(context, `No API key saved in ${settings.configPath}: nothing to forget.`);
      if (envNote) context.stderr.write(`Note: ${envNote}\n`);
    }
    return;
  }
  // The key belongs to the Twinbox it was made on, whatever --api-url says now.
  const apiUrl = stored.api_url ?? settings.apiUrl;
  const revocation = await revoke(apiUrl, stored.api_key);
  const { api_key: _key, email: _email, ...rest } = stored;
  await writeConfig(settings.configPath, rest);
  if (context.json) {
    printJson(context, {
      forgotten: true,
      revoked: revocation.revoked,
      api_key_id: revocation.revoked ? revocation.key.id : null,
      revoke_error: revocation.revoked ? null : revocation.why,
      api_url: apiUrl,
      config: settings.configPath,
      note: envNote ?? null,
    });
    return;
  }
  const who = stored.email ? ` of ${stored.email}` : '';
  if (revocation.revoked) {
    print(context, `Revoked the API key ${revocation.key.prefix}...${who} on ${apiUrl}.`);
  } else if (revocation.alreadyRevoked) {
    print(context, `The API key${who} was no longer accepted by ${apiUrl} (already revoked).`);
  } else {
    context.stderr.write(
      `twinbox: could not revoke the API key${who} on ${apiUrl}: ${revocation.why}. It still works until you revoke it in the web app.\n`,
    );
  }
  print(context, `Forgot the API key saved in ${settings.configPath}.`);
  if (envNote) context.stderr.write(`Note: ${envNote}\n`);
}

async function revoke(apiUrl: string, apiKey: string): Promise<Revocation> {
  const client = new TwinboxClient({ baseUrl: apiUrl, apiKey, userAgent: 'twinbox-cli' });
  try {
    return { revoked: true, key: await client.revokeCurrentApiKey() };
  } catch (error) {
    if (!(error instanceof TwinboxApiError)) throw error;
    if (error.status === 401) return { revoked: false, alreadyRevoked: true, why: error.detail };
    return { revoked: false, why: error.message };
  }
}
