import { join } from 'node:path';
import { ConfigError, loadConfig } from './config.ts';
import { EncryptionKeyMissingError } from './identity/secret-box.ts';
import { DataDirLockedError } from './store/data-dir-lock.ts';
import { DatabaseUnavailableError, SchemaMismatchError } from './store/postgres/errors.ts';
import { PartLoadError } from './load-part.ts';
import { IsolationError } from './deploy/index.ts';
import { createTwinbox } from './twinbox.ts';
import { bootstrapLocalOwner, sampleCurl } from './bootstrap.ts';
import { startupHint } from './startup-hint.ts';

// Entry point: read the configuration, build Twinbox, listen. Nothing else belongs here.
try {
  const config = loadConfig();
  const twinbox = await createTwinbox(config);
  await twinbox.server.start();
  const port = Number(twinbox.server.info.port);
  const baseUrl = `http://${config.publicHost}:${port}`;
  twinbox.logger.info({ url: baseUrl, data_dir: config.dataDir }, 'Twinbox is listening');
  // Whatever the log level, a person (or a script) starting Twinbox learns where it listens and where to
  // click or what to paste next.
  process.stdout.write(`Twinbox listening on ${baseUrl} (data in ${config.dataDir})\n`);
  const keyFile = await bootstrapLocalOwner(twinbox);
  process.stdout.write(
    startupHint({
      webUrl: twinbox.identity.urls(port).webUrl,
      outbox: config.smtpUrl ? undefined : join(config.dataDir, 'outbox'),
      sample: keyFile ? sampleCurl(baseUrl, keyFile) : undefined,
    }),
  );
  // Ctrl-C of `npm start` sends SIGINT twice (the terminal's to the process group, then npm's relay):
  // the stop runs once and a repeat only says it is under way. The handlers stay installed, so no
  // signal during the stop ends the process before it has removed what it started.
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      twinbox.logger.info({ signal }, 'already stopping: removing what this Twinbox started');
      return;
    }
    stopping = true;
    twinbox.logger.info({ signal }, 'stopping');
    twinbox.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        twinbox.logger.error({ err: error }, 'the stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
} catch (error) {
  if (
    error instanceof ConfigError ||
    error instanceof DataDirLockedError ||
    error instanceof IsolationError ||
    error instanceof DatabaseUnavailableError ||
    error instanceof SchemaMismatchError ||
    error instanceof EncryptionKeyMissingError ||
    error instanceof PartLoadError
  ) {
    process.stderr.write(`twinbox: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
