import t from 'tap';
import { execFileSync } from 'node:child_process';
import { parseEnv } from 'node:util';
import { EXIT } from '../../client/cli/exit-codes.ts';
import { startLiveTwinbox } from '../client/helpers.ts';
import { createUser } from '../helpers/twinbox.ts';
import { cliHome, runCli } from './run-cli.ts';

// `twinbox twins ...` of the committed dist/cli.js against a live Twinbox. The scripted deployer
// (test/client/helpers.ts) stands in for the deploy engine; twin sets deployed for real are in
// test/e2e/twin-sets.test.ts and test/action/twins-mode.test.ts.

/** A value a shell or a .env reader would mangle if it were written naively. */
const TRICKY = `it's "quoted" $HOME \`pwd\` \\ back; and=more`;

t.test('twins create --export: lines a shell evaluates back to the exact values', async (t) => {
  const { baseUrl, user, tb, deployer } = await startLiveTwinbox(t);
  deployer.delayMs = 300;
  const home = await cliHome(t, { TWINBOX_API_URL: baseUrl, TWINBOX_API_KEY: user.key });
  const created = await runCli(home, [
    'twins',
    'create',
    '--twins',
    'stripe,github',
    '--env',
    `TRICKY=${TRICKY}`,
    '--ttl-minutes',
    '20',
    '--export',
  ]);
  t.equal(created.code, 0, created.stderr);
  const lines = created.stdout.trim().split('\n');
  t.ok(
    lines.every((line) => /^export [A-Za-z_][A-Za-z0-9_]*='/.test(line)),
    'stdout holds export lines only',
  );
  const id = /^export TWINBOX_TWIN_SET_ID='([^']+)'$/m.exec(created.stdout)?.[1];
  t.ok(id, 'TWINBOX_TWIN_SET_ID is set too');
  t.match(created.stderr, `Twin set ${id} is ready`);
  const record = (await tb.store.sandboxes.get(id!))!;
  t.equal(record.kind, 'twins');
  t.equal(record.ttl_minutes, 20);
  t.same(record.twin_names, ['stripe', 'github']);

  // What a shell makes of the lines: every variable exactly as the API has it.
  const names = [...Object.keys(record.env_vars), 'TWINBOX_TWIN_SET_ID'];
  const script = `${created.stdout}\nfor n in ${names.join(' ')}; do eval "printf '%s\\0%s\\0' \\"\\$n\\" \\"\\$$n\\""; done`;
  const out = execFileSync('/bin/sh', ['-c', script], { env: { PATH: process.env.PATH ?? '' } }).toString();
  const parts = out.split('\0').slice(0, -1);
  const evaluated: Record<string, string> = {};
  for (let i = 0; i < parts.length; i += 2) evaluated[parts[i]!] = parts[i + 1]!;
  t.same(evaluated, { ...record.env_vars, TWINBOX_TWIN_SET_ID: id }, 'the shell reads back every value');
  t.equal(evaluated.TRICKY, TRICKY);

  // --dotenv refuses a value no .env reader would read back...
  const refused = await runCli(home, ['twins', 'env', id!, '--dotenv']);
  t.equal(refused.code, EXIT.usage);
  t.match(refused.stderr, /The value of TRICKY cannot be written to a \.env file/);
  t.equal(refused.stdout, '', 'and prints no half file');
  // ...and writes the others so that Node's own .env parser reads them back exactly.
  const dotenv = await runCli(home, [
    'twins',
    'create',
    '--twins',
    'slack',
    '--env',
    "QUOTED=it's a value # not a comment",
    '--env',
    'MULTI=-----BEGIN KEY-----\nabc\n-----END KEY-----',
    '--dotenv',
  ]);
  t.equal(dotenv.code, 0, dotenv.stderr);
  const read = parseEnv(dotenv.stdout);
  const second = (await tb.store.sandboxes.get(read.TWINBOX_TWIN_SET_ID!))!;
  t.same(read, { ...second.env_vars, TWINBOX_TWIN_SET_ID: second.id });
  t.equal(read.MULTI, '-----BEGIN KEY-----\nabc\n-----END KEY-----');

  // Human output: names, never values.
  const shown = await runCli(home, ['twins', 'get', id!]);
  t.equal(shown.code, 0);
  t.match(shown.stdout, `Twin set:   ${id}`);
  t.match(shown.stdout, /Status:\s+ready/);
  t.match(shown.stdout, /Variables:.*STRIPE_TOKEN/);
  t.match(shown.stdout, `twinbox twins env ${id}`);
  t.notMatch(shown.stdout, record.env_vars.STRIPE_TOKEN!, 'no secret value');
  t.notMatch(shown.stdout, record.twin_admin_token, 'no admin token');
  const json = JSON.parse((await runCli(home, ['twins', 'get', id!, '--json'])).stdout);
  t.equal(json.id, id);
  t.same(json.env_vars, record.env_vars);

  const listed = await runCli(home, ['twins', 'list']);
  t.equal(listed.code, 0);
  t.match(listed.stdout, new RegExp(`${id}\\s+ready\\s+stripe,github`));

  const deleted = await runCli(home, ['twins', 'delete', id!]);
  t.equal(deleted.code, 0);
  t.match(deleted.stdout, `Deleted twin set ${id} (status: deleted).`);
  const noVars = await runCli(home, ['twins', 'env', id!]);
  t.equal(noVars.code, EXIT.usage);
  t.match(noVars.stderr, `Twin set ${id} is deleted: only a ready twin set has variables.`);
});

t.test('twins: mistakes and refusals get their exit codes and the API detail', async (t) => {
  const { baseUrl, user, tb, deployer } = await startLiveTwinbox(t);
  deployer.delayMs = 300;
  const home = await cliHome(t, { TWINBOX_API_URL: baseUrl, TWINBOX_API_KEY: user.key });

  const none = await runCli(home, ['twins', 'create']);
  t.equal(none.code, EXIT.usage);
  t.match(none.stderr, /Name the twins: --twins stripe,github/);
  const both = await runCli(home, ['twins', 'create', '--twins', 'stripe', '--export', '--dotenv']);
  t.equal(both.code, EXIT.usage);
  const noWait = await runCli(home, ['twins', 'create', '--twins', 'stripe', '--export', '--no-wait']);
  t.equal(noWait.code, EXIT.usage);
  t.match(noWait.stderr, /drop --no-wait/);
  const unknownSub = await runCli(home, ['twins', 'start']);
  t.equal(unknownSub.code, EXIT.usage);
  t.match(unknownSub.stderr, /Unknown subcommand "twins start"/);
  t.equal((await tb.store.sandboxes.findBy('owner_id', user.id)).length, 0, 'nothing created so far');

  const unknown = await runCli(home, ['twins', 'create', '--twins', 'stripe,paypal']);
  t.equal(unknown.code, EXIT.rejected);
  t.match(unknown.stderr, /Unknown twin name: paypal/);

  const queued = await runCli(home, ['twins', 'create', '--twins', 'slack', '--no-wait', '--json']);
  t.equal(queued.code, 0);
  t.equal(JSON.parse(queued.stdout).status, 'queued');

  const other = await createUser(tb);
  const theirs = await runCli(home, ['twins', 'get', JSON.parse(queued.stdout).id], {
    env: { TWINBOX_API_KEY: other.key },
  });
  t.equal(theirs.code, EXIT.notFound, "another account's set is not found");

  deployer.failWith = 'the pod could not start';
  const failed = await runCli(home, ['twins', 'create', '--twins', 'slack', '--export', '--json']);
  t.equal(failed.code, EXIT.sandboxEnded);
  t.match(failed.stderr, /failed: the pod could not start/);
  const body = JSON.parse(failed.stdout);
  t.equal(body.reason, 'failed');
  t.equal(body.twin_set.status, 'failed');

  const help = await runCli(home, ['twins', '--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /twinbox twins create --twins stripe,github/);
  const overview = await runCli(home, ['--help']);
  t.match(overview.stdout, /twins <subcommand>\s+Twins alone/);
});
