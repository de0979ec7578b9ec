import { TwinboxClient } from '../client.ts';
import { CliError, EXIT } from './exit-codes.ts';
import { resolveSettings, type Settings } from './config.ts';

/** What every command gets: where to write, and how to reach Twinbox. */
export interface CliContext {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  json: boolean;
  apiUrlFlag: string | undefined;
}

export function print(context: CliContext, text: string): void {
  context.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

export function printJson(context: CliContext, value: unknown): void {
  context.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A client with the resolved key; a missing key is an auth error before any request is made. */
export async function authenticatedClient(
  context: CliContext,
): Promise<{ client: TwinboxClient; settings: Settings }> {
  const settings = await resolveSettings(context.apiUrlFlag);
  if (!settings.apiKey) {
    throw new CliError(
      'Not signed in: run `twinbox login`, or set TWINBOX_API_KEY to an API key.',
      EXIT.auth,
    );
  }
  const client = new TwinboxClient({
    baseUrl: settings.apiUrl,
    apiKey: settings.apiKey,
    userAgent: 'twinbox-cli',
  });
  return { client, settings };
}
