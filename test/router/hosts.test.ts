import t from 'tap';
import { parseSandboxHost, sandboxHosts } from '../../server/router/index.ts';

const id = '3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b';

t.test('sandbox hosts: the app, a twin; case and port do not matter', async (t) => {
  t.same(parseSandboxHost(`${id}.localhost`, 'localhost'), { id });
  t.same(parseSandboxHost(`${id}.localhost:3000`, 'localhost'), { id });
  t.same(parseSandboxHost(`${id.toUpperCase()}.LocalHost:3000`, 'localhost'), { id });
  t.same(parseSandboxHost(`${id}--github.localhost:3000`, 'localhost'), { id, twin: 'github' });
  t.same(parseSandboxHost(`${id}--my-twin-2.sandboxes.example.com`, 'sandboxes.example.com'), {
    id,
    twin: 'my-twin-2',
  });
});

t.test('anything else is not a sandbox host', async (t) => {
  const domain = 'sandboxes.example.com';
  for (const host of [
    undefined,
    '',
    'localhost:3000',
    '127.0.0.1:3000',
    '[::1]:3000',
    'twinbox.example.com',
    `${id}.example.com`,
    `${id}.sandboxes.example.com.`, // trailing dot: not the exact suffix
    `${id}.sandboxes.example.com:port`,
    `${id}.sandboxes.example.com:123456`,
    `x${id}.sandboxes.example.com`,
    `${id}x.sandboxes.example.com`,
    `a.${id}.sandboxes.example.com`, // nested label
    `${id}.a.sandboxes.example.com`,
    `${id}.evilsandboxes.example.com`,
    `${id}sandboxes.example.com`,
    `3f2b8c1e9a4d4e6f8b7a1c2d3e4f5a6b.sandboxes.example.com`, // no hyphens
    `3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6g.sandboxes.example.com`, // not hex
    `${id}-github.sandboxes.example.com`,
    `${id}--.sandboxes.example.com`,
    `${id}---github.sandboxes.example.com`,
    `${id}--github-.sandboxes.example.com`,
    `${id}--git_hub.sandboxes.example.com`,
    `${id}--${'a'.repeat(26)}.sandboxes.example.com`, // label over 63 characters
    `${id}--a.b.sandboxes.example.com`,
  ]) {
    t.equal(parseSandboxHost(host, domain), undefined, String(host));
  }
  t.same(parseSandboxHost(`${id}--${'a'.repeat(25)}.x`, 'x'), { id, twin: 'a'.repeat(25) }, '63 is fine');
});

t.test('URLs keep the public scheme and port', async (t) => {
  const local = sandboxHosts('localhost', new URL('http://localhost:3000'));
  t.equal(local.appUrl(id), `http://${id}.localhost:3000`);
  t.equal(local.twinUrl(id, 'stripe'), `http://${id}--stripe.localhost:3000`);
  t.same(local.parse(new URL(local.twinUrl(id, 'stripe')).host), { id, twin: 'stripe' }, 'round trip');

  const production = sandboxHosts('Sandboxes.Example.com', new URL('https://twinbox.example.com'));
  t.equal(production.domain, 'sandboxes.example.com');
  t.equal(production.appUrl(id), `https://${id}.sandboxes.example.com`, 'no :443');
  t.equal(production.twinUrl(id, 'github'), `https://${id}--github.sandboxes.example.com`);

  t.throws(() => sandboxHosts('bad domain', new URL('http://localhost')), /Not a host name/);
});
