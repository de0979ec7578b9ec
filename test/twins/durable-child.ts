/**
 * A process that hosts twins and nothing else, for durability.test.ts to kill with SIGKILL: it starts
 * (or, with DURABLE_MODE=restore, restores) one sandbox's twins on DURABLE_DATA_DIR and prints their
 * entries as one JSON line, then waits to be killed.
 */
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { twinFactories } from '../../server/twins/registry.ts';

const dataDir = process.env.DURABLE_DATA_DIR;
if (!dataDir) throw new Error('DURABLE_DATA_DIR is required');
const sandboxId = process.env.DURABLE_SANDBOX ?? 'sb-durable';
const host = new TwinHost({
  factories: twinFactories,
  dataDir,
  publicHost: '127.0.0.1',
  logger: {
    info: () => {},
    warn: (obj, msg) => process.stderr.write(`${msg ?? ''} ${JSON.stringify(obj)}\n`),
    error: (obj, msg) => process.stderr.write(`${msg ?? ''} ${JSON.stringify(obj)}\n`),
  },
});
if (process.env.DURABLE_MODE === 'restore') await host.restore([sandboxId]);
else
  await host.start(sandboxId, (process.env.DURABLE_TWINS ?? '').split(','), {
    adminToken: process.env.DURABLE_ADMIN_TOKEN ?? 'durable-admin',
    seeds: JSON.parse(process.env.DURABLE_SEEDS ?? '{}') as Record<string, unknown>,
  });
process.stdout.write(`${JSON.stringify(host.get(sandboxId) ?? {})}\n`);
// Kept alive until killed: nothing here ever flushes state on its way out.
setInterval(() => {}, 1 << 30);
