import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { TwinboxClient } from '../client.ts';
import { TwinboxApiError } from '../errors.ts';
import { InputError } from '../parse.ts';
import { readConfig, resolveSettings, writeConfig } from './config.ts';
import { CliError, EXIT } from './exit-codes.ts';
import { print, printJson, type CliContext } from './context.ts';
import { Prompter } from './prompt.ts';

/**
 * `twinbox login`: e-mail code sign-in, then a new API key stored in the config file. The session
 * (JWT) is used for that one request and thrown away: the key is revocable by itself, the session
 * could mint more keys. `--code` skips mailing a new code, for scripts that got one from an earlier
 * `--send-code` run.
 */
export async function login(context: CliContext, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      email: { type: 'string' },
      code: { type: 'string' },
      'send-code': { type: 'boolean', default: false },
      name: { type: 'string' },
    },
  });
  const settings = await resolveSettings(context.apiUrlFlag);
  const anonymous = new TwinboxClient({ baseUrl: settings.apiUrl, userAgent: 'twinbox-cli' });
  const prompter = new Prompter(process.stdin, context.stderr);
  try {
    const email = values.email?.trim() || (await prompter.ask('E-mail: '));
    if (!email) throw new InputError('No e-mail address given: pass --email or type it at the prompt.');
    let code = values.code?.trim();
    if (!code) {
      await anonymous.requestLoginCode(email);
      if (values['send-code']) {
        // The same Twinbox must verify the code: a hint without the --api-url given would ask another.
        const apiUrl = context.apiUrlFlag ? ` --api-url ${shellWord(context.apiUrlFlag)}` : '';
        const finish = `twinbox login${apiUrl} --email ${shellWord(email)} --code <code>`;
        if (context.json) printJson(context, { code_sent_to: email, finish_with: finish });
        else print(context, `Sent a sign-in code to ${email}. Finish with: ${finish}`);
        return;
      }
      code = await prompter.ask(`We sent a code to ${email}. Code: `);
      if (!code) throw new InputError('No code entered: run `twinbox login` again, or pass --code.');
    }
    let signedIn;
    try {
      signedIn = await anonymous.verifyLoginCode(email, code);
    } catch (error) {
      // A wrong or expired code is the user's to fix, like a bad password: say so as an auth failure.
      if (error instanceof TwinboxApiError && error.status === 400 && error.code === 'invalid_code') {
        throw new CliError(`${error.detail} Run \`twinbox login\` again for a new code.`, EXIT.auth);
      }
      throw error;
    }
    const session = new TwinboxClient({
      baseUrl: settings.apiUrl,
      apiKey: signedIn.token,
      userAgent: 'twinbox-cli',
    });
    const key = await session.createApiKey(values.name ?? `twinbox CLI on ${hostname()}`);
    const stored = await readConfig(settings.configPath);
    await writeConfig(settings.configPath, { ...stored, api_url: settings.apiUrl, api_key: key.key, email });
    const result = {
      email,
      api_url: settings.apiUrl,
      api_key_id: key.id,
      api_key_prefix: key.prefix,
      config: settings.configPath,
    };
    if (context.json) printJson(context, result);
    else print(context, `Signed in as ${email}. API key ${key.prefix}... saved to ${settings.configPath}.`);
    if (settings.keySource === 'TWINBOX_API_KEY' && !context.json) {
      context.stderr.write('Note: TWINBOX_API_KEY is set and overrides the saved key until you unset it.\n');
    }
  } finally {
    prompter.close();
  }
}

/** `text` as one shell word: as is when that is safe, else single-quoted. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
