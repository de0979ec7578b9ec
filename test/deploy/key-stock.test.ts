import t, { type Test } from 'tap';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { RsaKeyStock } from '../../server/deploy/pods/key-stock.ts';
import { podCall } from '../../server/deploy/pods/pod-control.ts';
import { PodManager } from '../../server/deploy/pods/pods.ts';
import { podLayout } from '../../server/pod/layout.ts';
import { checkExpectedTwins } from '../../server/pod/protocol.ts';
import { isolationFor, requireHost, runnableModes, scratch } from '../security/isolation-fixtures.ts';
import {
  giveRsaKeys,
  makeRsaKey,
  rsaKey,
  RSA_MODULUS_BITS,
  takeGivenRsaKey,
} from '../../server/twins/runtime/rsa-keys.ts';

const bits = (pem: string) => createPrivateKey(pem).asymmetricKeyDetails?.modulusLength;

/**
 * A pod pool on a data dir of its own with its own key stock, in the strictest isolation this host runs (in a user namespace the
 * pod reads Twinbox's file as another uid), which must be bubblewrap's.
 */
async function podsWithStock(t: Test, spares: number) {
  const dataDir = await scratch(t, 'twinbox-podkeys-');
  const mode = runnableModes()[0]!;
  t.not(mode, 'process-group', `bubblewrap runs here (${mode})`);
  const stock = new RsaKeyStock(1);
  const pods = new PodManager({
    dataDir,
    isolation: isolationFor(t, mode),
    installEgress: [],
    memoryBytes: 512 * 1024 * 1024,
    twinBodyBytes: 1024 * 1024,
    logger: pino({ level: 'silent' }),
    readyTimeoutMs: 120_000,
    spares,
    rsaKeys: stock,
  });
  t.teardown(() => pods.close());
  return { pods, stock, dataDir };
}

t.test('a stock makes its key at fill, gives it once, and waits only for one being made', async (t) => {
  const stock = new RsaKeyStock(1);
  t.same(await stock.take(1), [], 'nothing is made before fill: take does not start a key');
  stock.fill();
  stock.fill();
  const [key, ...more] = await stock.take(2);
  t.equal(more.length, 0, 'one key for a stock of one, however many are asked for');
  t.equal(bits(key!), RSA_MODULUS_BITS, 'an RSA key of the size the twins hand out');
  t.match(key, /^-----BEGIN RSA PRIVATE KEY-----/, 'PKCS#1 PEM, as a GitHub App key is');
  t.same(stock.takeNow(1), [], 'taken once');
  stock.fill();
  const again = await stock.take(1);
  t.equal(again.length, 1, 'filled again');
  t.not(again[0], key, 'with a new key');
  stock.fill();
  stock.stop();
  t.same(await stock.take(1), [], 'a stopped stock gives nothing, not even the key it was making');
});

t.test('keys given to a process are taken once each, in order, and only good ones', async (t) => {
  const [one, two] = await Promise.all([makeRsaKey(), makeRsaKey()]);
  const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({
    type: 'pkcs1',
    format: 'pem',
  });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
    type: 'sec1',
    format: 'pem',
  });
  const torn = one!.slice(0, 200);
  t.equal(giveRsaKeys([42, 'text', small, ec, torn, one, two]), 2, 'two of seven kept');
  t.equal(takeGivenRsaKey(), one, 'the first given first');
  t.equal(await rsaKey(), two, 'rsaKey takes a given one');
  t.equal(takeGivenRsaKey(), undefined, 'then none is left');
  const made = await rsaKey();
  t.ok(made !== one && made !== two && bits(made) === RSA_MODULUS_BITS, 'and rsaKey makes a new one');
});

t.test(
  'a pod made for a deploy is given the keys of its twins, and its GitHub twin hands one out',
  async (t) => {
    if (!requireHost(t, { bwrap: true, cgroups: true })) return;
    const { pods, stock } = await podsWithStock(t, 0);
    pods.warm();
    for (let i = 0; i < 600 && stock.stocked === 0; i++) await new Promise((r) => setTimeout(r, 50));
    t.equal(stock.stocked, 1, 'warm() filled the stock');
    const pod = await pods.acquire('sb-keys', ['github', 'stripe']);
    t.equal(stock.stocked, 0, 'the deploy took the key');
    const file = checkExpectedTwins(JSON.parse(await readFile(join(pod.dir, 'expected-twins.json'), 'utf8')));
    t.same(file.names, ['github', 'stripe'], "the pod's file names the deploy's twins");
    t.equal(file.rsa_keys?.length, 1, 'and carries one key: the GitHub twin makes one, Stripe none');
    const twins = await pods.startTwins(pod, ['github', 'stripe'], {
      adminToken: 'admin-token-of-this-test',
    });
    t.equal(
      twins.github!.env_vars.GITHUB_APP_PRIVATE_KEY,
      file.rsa_keys![0],
      "the twin's App key is that key",
    );
  },
);

t.test(
  'a spare that has started when a deploy takes it is given no key: it read its file already',
  async (t) => {
    if (!requireHost(t, { bwrap: true, cgroups: true })) return;
    const { pods, stock, dataDir } = await podsWithStock(t, 1);
    // An earlier deploy's twins: the spare is told to expect Stripe.
    pods.expect(['stripe']);
    pods.warm();
    const control = () =>
      existsSync(join(dataDir, 'pods'))
        ? readdirSync(join(dataDir, 'pods')).filter((slot) =>
            existsSync(podLayout(join(dataDir, 'pods', slot)).control),
          )
        : [];
    for (let i = 0; i < 1200 && (stock.stocked === 0 || control().length === 0); i++)
      await new Promise((r) => setTimeout(r, 50));
    t.equal(control().length, 1, 'the spare started (its control socket listens)');
    t.equal(stock.stocked, 1, 'and the stock has its key');
    // It answers `ready` (as the pool's own probe, which ends the pool's wait for it, does): then a
    // generous pause, so that the pool has seen its start on a loaded machine too.
    const control0 = podLayout(join(dataDir, 'pods', control()[0]!)).control;
    let ready = false;
    for (let i = 0; i < 600 && !ready; i++)
      ready = await podCall(control0, 'ready', undefined).then(
        () => true,
        () => new Promise<boolean>((r) => setTimeout(() => r(false), 50)),
      );
    t.ok(ready, 'the spare answers ready');
    await new Promise((r) => setTimeout(r, 1000));
    const pod = await pods.acquire('sb-spare', ['github']);
    t.equal(stock.stocked, 1, 'the deploy took no key from the stock');
    const file = checkExpectedTwins(JSON.parse(await readFile(join(pod.dir, 'expected-twins.json'), 'utf8')));
    t.same(
      file,
      { names: ['stripe'] },
      "the spare's file is as it was at its spawn: nothing was written for no one",
    );
    const twins = await pods.startTwins(pod, ['github'], { adminToken: 'admin-token-of-this-test' });
    t.match(
      twins.github!.env_vars.GITHUB_APP_PRIVATE_KEY,
      /^-----BEGIN RSA PRIVATE KEY-----/,
      'the twin made its own',
    );
  },
);
