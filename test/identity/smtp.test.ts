import t, { type Test } from 'tap';
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { post, startIdentityTwinbox } from './helpers.ts';
import { readOutbox } from '../../server/mail/outbox.ts';

interface Received {
  from: string;
  to: string[];
  data: string;
}

/** A real SMTP server on a free loopback port that keeps what it receives. */
async function startSmtp(t: Test) {
  const received: Received[] = [];
  const server = new SMTPServer({
    // Plain SMTP on loopback: no TLS certificate to trust, no credentials to check.
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, done) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          data: Buffer.concat(chunks).toString('utf8'),
        });
        done();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { received, port: (server.server.address() as AddressInfo).port };
}

t.test('SMTP_URL: codes go through a real SMTP server, to the normalized address', async (t) => {
  const smtp = await startSmtp(t);
  const twinbox = await startIdentityTwinbox(t, {
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    TWINBOX_MAIL_FROM: 'Twinbox <login@twinbox.test>',
  });
  t.equal(twinbox.identity.mail.kind, 'smtp');
  const signup = await post(twinbox, '/auth/email/signup', { email: ' Mail.Me@Example.COM' });
  t.equal(signup.status, 201);
  t.equal(smtp.received.length, 1);
  const [message] = smtp.received;
  t.same(message!.to, ['mail.me@example.com']);
  t.equal(message!.from, 'login@twinbox.test');
  const code = /Your Twinbox code: (\d{6})/.exec(message!.data)![1]!;
  t.notMatch(twinbox.logs.text(), code, 'the code is not logged');
  t.same(await readOutbox(`${twinbox.dataDir}/outbox`), [], 'nothing in the outbox when SMTP is configured');

  const verified = await post(twinbox, '/auth/email-verification/verify', {
    email: 'mail.me@example.com',
    code,
  });
  t.equal(verified.status, 200);
});
