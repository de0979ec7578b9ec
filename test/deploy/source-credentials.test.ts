/**
 * The source step's credentials seam and its failures that must not hang: which token a sandbox's fetch
 * uses (installation, owner's connection, development token), and a GitHub that never answers.
 */
import t from 'tap';
import { createServer, type Server } from 'node:http';
import { pino } from 'pino';
import { GitHubSource } from '../../server/deploy/steps/source.ts';
import { sandboxSourceCredentials } from '../../server/deploy/steps/source-credentials.ts';

const silent = pino({ level: 'silent' });

t.test(
  'credentials: the installation first, then the owner’s connection, then the server token',
  async (t) => {
    const asked: string[] = [];
    const credentials = sandboxSourceCredentials({
      installationToken: async (id) => {
        asked.push(`installation ${id}`);
        if (id === 13) throw new Error('uninstalled');
        return `ghs_installation_${id}`;
      },
      connectionToken: async (accountId) => {
        asked.push(`connection ${accountId}`);
        return accountId === 'acc_connected' ? 'ghu_connection' : undefined;
      },
      serverToken: 'ghp_server',
      logger: silent,
    });
    t.same(await credentials.tokenFor({ repo: 'o/r', owner_id: 'acc_connected', installation_id: 7 }), {
      token: 'ghs_installation_7',
      via: 'installation',
    });
    t.same(
      await credentials.tokenFor({ repo: 'o/r', owner_id: 'acc_connected', installation_id: 13 }),
      {
        token: 'ghu_connection',
        via: 'connection',
      },
      'an installation that cannot mint falls back to the owner',
    );
    t.same(await credentials.tokenFor({ repo: 'o/r', owner_id: 'acc_none' }), {
      token: 'ghp_server',
      via: 'server',
    });
    t.same(asked, ['installation 7', 'installation 13', 'connection acc_connected', 'connection acc_none']);
    const production = sandboxSourceCredentials({ connectionToken: async () => undefined, logger: silent });
    t.equal(
      await production.tokenFor({ repo: 'o/r', owner_id: 'acc_none', installation_id: 7 }),
      undefined,
      'no App, no connection, no server token: anonymous',
    );
  },
);

t.test('a GitHub that never answers fails the source step with a clear error, not a hang', async (t) => {
  const held: Array<() => void> = [];
  const server: Server = createServer((_request, response) => held.push(() => response.destroy()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const release of held) release();
    server.close();
  });
  const address = server.address() as { port: number };
  const source = new GitHubSource({
    apiUrl: `http://127.0.0.1:${address.port}`,
    webHosts: ['github.com'],
    resolveTimeoutMs: 300,
  });
  await t.rejects(source.resolve({ repo: 'o/r', branch: 'main', pr_url: null }), {
    message: 'Source fetch failed: GitHub did not answer in time (the branch or pull request of o/r).',
  });
  const hanging = new GitHubSource({
    apiUrl: `http://127.0.0.1:${address.port}`,
    webHosts: ['github.com'],
    resolveTimeoutMs: 300,
    credentials: { tokenFor: () => new Promise(() => {}) },
  });
  await t.rejects(hanging.resolve({ repo: 'o/r', branch: 'main', pr_url: null }), {
    message: 'Source fetch failed: GitHub did not answer in time (a GitHub token for o/r).',
  });
});
