import { access, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Twinbox } from './twinbox.ts';

/**
 * First start outside production, with no accounts: creates a local owner (plan pro) and an API key,
 * so a newcomer can call the API at once. The key goes to `<data dir>/dev-api-key` (mode 0600), never
 * to the log; what is printed reads it from there.
 */
export async function bootstrapLocalOwner(twinbox: Twinbox): Promise<string | undefined> {
  const { config } = twinbox;
  if (config.env === 'production') return undefined;
  const keyFile = join(config.dataDir, 'dev-api-key');
  if ((await twinbox.store.accounts.count()) === 0) {
    const owner = await twinbox.accounts.create(config.ownerEmail, 'pro');
    const { key } = await twinbox.apiKeys.issue(owner.id, 'local owner (dev-api-key)');
    // Written whole, then renamed into place: whoever sees the file (a script, `$(cat ...)`) reads the
    // whole key, never an empty or half-written file.
    const partial = `${keyFile}.${process.pid}.partial`;
    await writeFile(partial, `${key}\n`, { mode: 0o600 });
    await rename(partial, keyFile);
    twinbox.logger.info(
      { email: owner.email, key_file: keyFile },
      'created the local owner account and an API key',
    );
  }
  try {
    await access(keyFile);
    return keyFile;
  } catch {
    return undefined;
  }
}

/**
 * A curl command that works as pasted, reading the key from its file. octocat/Hello-World at `master`
 * is public, tiny and long-lived; it holds only a README, which deploys as a static page (profile.ts).
 */
export function sampleCurl(baseUrl: string, keyFile: string): string {
  return [
    `curl -s -X POST ${baseUrl}/sandboxes \\`,
    `  -H "Authorization: Bearer $(cat ${keyFile})" \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d '{"repo":"octocat/Hello-World","branch":"master","ttl_minutes":30}'`,
  ].join('\n');
}
