/**
 * app.yml, the GitHub App manifest, declares what the App uses: every event app/index.ts subscribes to
 * and a permission for every GitHub REST call of the App (app/) and of source fetches with an
 * installation token (server/deploy/steps/source.ts), at the level the call needs. A new call or event
 * without its manifest line fails here, not on a customer's installation ("Resource not accessible by
 * integration").
 */
import t from 'tap';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';

const root = new URL('../../', import.meta.url).pathname;

type Level = 'read' | 'write';

/**
 * The permission each call needs, as GitHub's REST reference lists it for GitHub App installation
 * tokens. Comments on pull requests go through the issues API, hence `issues`.
 */
const NEEDS: Record<string, [permission: string, level: Level]> = {
  'issues.createComment': ['issues', 'write'],
  'issues.listComments': ['issues', 'read'],
  'issues.updateComment': ['issues', 'write'],
  'pulls.get': ['pull_requests', 'read'],
  'repos.createDeployment': ['deployments', 'write'],
  'repos.createDeploymentStatus': ['deployments', 'write'],
  'repos.get': ['metadata', 'read'],
  'repos.getCollaboratorPermissionLevel': ['metadata', 'read'],
  'repos.getBranch': ['contents', 'read'],
  'repos.getContent': ['contents', 'read'],
  'git.getCommit': ['contents', 'read'],
  'git.getTree': ['contents', 'read'],
  'git.getBlob': ['contents', 'read'],
};

/** Events GitHub sends every App whatever its subscriptions (they cannot be listed in default_events). */
const ALWAYS_DELIVERED = new Set(['installation', 'installation_repositories', 'github_app_authorization']);

/** Events whose delivery needs a permission. */
const EVENT_NEEDS: Record<string, string> = {
  pull_request: 'pull_requests',
  issue_comment: 'issues',
};

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sources(path)));
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

const manifest = parse(await readFile(join(root, 'app.yml'), 'utf8')) as {
  name: string;
  url: string;
  hook_attributes: { url: string };
  callback_urls: string[];
  redirect_url: string;
  default_events: string[];
  default_permissions: Record<string, Level>;
};

t.test('the manifest names the App, its webhook and its sign-in callback', async (t) => {
  t.equal(manifest.name, 'Twinbox');
  const base = new URL(manifest.url);
  t.equal(new URL(manifest.hook_attributes.url).pathname, '/github/webhooks', 'the route of app/routes.ts');
  t.equal(new URL(manifest.hook_attributes.url).origin, base.origin);
  t.same(
    manifest.callback_urls.map((url) => new URL(url).pathname),
    ['/auth/github/callback'],
    'the callback of server/identity/github/routes.ts',
  );
  const routes = await readFile(join(root, 'app/routes.ts'), 'utf8');
  t.match(routes, "path: '/github/webhooks'");
  const github = await readFile(join(root, 'server/identity/github/routes.ts'), 'utf8');
  t.match(github, "path: '/auth/github/callback'");
  t.ok(manifest.redirect_url.startsWith(base.origin));
});

t.test('every event the App subscribes to is a default event, and no other', async (t) => {
  const index = await readFile(join(root, 'app/index.ts'), 'utf8');
  const subscribed = new Set([...index.matchAll(/app\.on\(\s*'([a-z_]+)(?:\.[a-z_]+)?'/g)].map((m) => m[1]!));
  t.ok(subscribed.size >= 3, `found the subscriptions: ${[...subscribed].join(', ')}`);
  for (const event of subscribed) {
    if (ALWAYS_DELIVERED.has(event)) continue;
    t.ok(manifest.default_events.includes(event), `${event} is in default_events`);
  }
  for (const event of manifest.default_events) {
    t.ok(subscribed.has(event), `${event} is handled by app/index.ts`);
    const permission = EVENT_NEEDS[event];
    t.ok(permission && manifest.default_permissions[permission], `${event}: its permission is declared`);
  }
});

t.test('every GitHub call of the App has its permission, at its level, and nothing more', async (t) => {
  const files = [...(await sources('app')), 'server/deploy/steps/source.ts'];
  const calls = new Set<string>();
  for (const file of files) {
    const text = await readFile(join(root, file), 'utf8');
    for (const m of text.matchAll(/octokit\.rest\s*\.\s*(\w+)\s*\.\s*(\w+)/g)) calls.add(`${m[1]}.${m[2]}`);
  }
  t.ok(calls.has('repos.createDeployment') && calls.has('git.getTree'), 'the scan finds the calls');
  const used = new Map<string, Level>();
  for (const call of [...calls].sort()) {
    const need = NEEDS[call];
    if (!need) {
      t.fail(`${call}: add the permission it needs to NEEDS here and to app.yml`);
      continue;
    }
    const [permission, level] = need;
    const declared = manifest.default_permissions[permission];
    t.ok(
      declared === 'write' || declared === level,
      `${call} needs ${permission}: ${level}; app.yml says ${declared ?? 'nothing'}`,
    );
    if (used.get(permission) !== 'write') used.set(permission, level);
  }
  for (const event of manifest.default_events) {
    const permission = EVENT_NEEDS[event]!;
    if (!used.has(permission)) used.set(permission, 'read');
  }
  t.same(
    Object.fromEntries(Object.entries(manifest.default_permissions).sort()),
    Object.fromEntries([...used.entries()].sort()),
    'exactly the permissions the calls and events need, at the lowest level that works',
  );
});
