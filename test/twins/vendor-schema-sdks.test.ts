/**
 * The vendored descriptions of the Resend and Twilio twins bite: real answers of the twins pass, the same
 * answers with a field of the wrong type or a required field removed fail; and the clients of the Resend,
 * Twilio, Vercel and MongoDB Atlas twin tests go through the check.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { tempHost } from './helpers.ts';
import { checkResponse } from './vendor-schema.ts';

t.test('Twilio: a real message passes, a wrong type or a bad error body fails', async (t) => {
  const { host } = await tempHost(t);
  const env = (
    await host.start('sb', ['twilio'], {
      adminToken: 'admin',
      seeds: { twilio: { phone_numbers: [{ phone_number: '+15005550006', friendly_name: 'Alerts' }] } },
    })
  ).twilio!.env_vars;
  const sid = env.TWILIO_ACCOUNT_SID!;
  const auth = `Basic ${Buffer.from(`${sid}:${env.TWILIO_AUTH_TOKEN}`).toString('base64')}`;
  const path = `/2010-04-01/Accounts/${sid}/Messages.json`;
  const res = await fetch(`${env.TWILIO_BASE_URL}${path}`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ To: '+15550001111', From: '+15005550006', Body: 'hi' }),
  });
  const message = (await res.json()) as Record<string, unknown>;
  t.equal(res.status, 201);
  t.match(checkResponse('twilio', { method: 'POST', path, status: 201, body: message }), { valid: true });

  const wrongStatus = checkResponse('twilio', {
    method: 'POST',
    path,
    status: 201,
    body: { ...message, status: 'teleported' },
  });
  t.equal(wrongStatus.valid, false, 'a status outside the enum fails');
  t.match(wrongStatus.errors.join('\n'), /\/status/);
  const wrongType = checkResponse('twilio', {
    method: 'POST',
    path,
    status: 201,
    body: { ...message, to: 42 },
  });
  t.match(wrongType, { valid: false, operation: 'POST /2010-04-01/Accounts/{AccountSid}/Messages.json' });
  t.match(wrongType.errors.join('\n'), /\/to must be string/);

  const missing = await fetch(
    `${env.TWILIO_BASE_URL}/2010-04-01/Accounts/${sid}/Messages/SM${'1'.repeat(32)}.json`,
    {
      headers: { authorization: auth },
    },
  );
  const error = (await missing.json()) as Record<string, unknown>;
  const errorPath = `/2010-04-01/Accounts/${sid}/Messages/SM${'1'.repeat(32)}.json`;
  t.match(checkResponse('twilio', { method: 'GET', path: errorPath, status: 404, body: error }), {
    valid: true,
  });
  const { code: _code, ...withoutCode } = error;
  const bad = checkResponse('twilio', { method: 'GET', path: errorPath, status: 404, body: withoutCode });
  t.equal(bad.valid, false, 'an error body without its code fails');
  t.match(bad.errors.join('\n'), /must have required property 'code'/);
});

t.test('Resend: an error body without its name, or an email with a numeric subject, fails', async (t) => {
  const ok = checkResponse('resend', {
    method: 'GET',
    path: '/emails/4ef9a417-02e9-4d39-ad75-9611e0fcc33c',
    status: 404,
    body: { statusCode: 404, name: 'not_found', message: 'Email not found' },
  });
  t.match(ok, { valid: true, operation: 'GET /emails/{email_id}' });
  t.match(
    checkResponse('resend', {
      method: 'GET',
      path: '/emails/4ef9a417-02e9-4d39-ad75-9611e0fcc33c',
      status: 404,
      body: { statusCode: 404, message: 'Email not found' },
    }),
    { valid: false, errors: [/must have required property 'name'/] },
  );
  t.match(
    checkResponse('resend', {
      method: 'GET',
      path: '/emails/4ef9a417-02e9-4d39-ad75-9611e0fcc33c',
      status: 200,
      body: { object: 'email', id: '4ef9a417-02e9-4d39-ad75-9611e0fcc33c', subject: 7 },
    }),
    { valid: false, errors: [/\/subject must be string/] },
  );
  t.match(
    checkResponse('resend', { method: 'POST', path: '/domains', status: 200, body: { id: 'd' } }),
    { valid: false, errors: [/status 200 is not documented/] },
    'a create answered 200 where Resend documents 201 fails',
  );
});

t.test('MongoDB Atlas: a project without its required name fails', async (t) => {
  const group = {
    id: '5f43f5a1c1b2a3d4e5f60718',
    name: 'Acme',
    orgId: '5f43f5a1c1b2a3d4e5f60719',
    clusterCount: 1,
    created: '2026-11-23T12:00:00Z',
    links: [],
  };
  const path = `/api/atlas/v2/groups/${group.id}`;
  t.match(checkResponse('mongoatlas', { method: 'GET', path, status: 200, body: group }), { valid: true });
  const { name: _name, ...nameless } = group;
  t.match(checkResponse('mongoatlas', { method: 'GET', path, status: 200, body: nameless }), {
    valid: false,
    operation: 'GET /api/atlas/v2/groups/{groupId}',
    errors: [/must have required property 'name'/],
  });
  t.match(
    checkResponse('mongoatlas', { method: 'GET', path, status: 200, body: { ...group, clusterCount: '1' } }),
    { valid: false, errors: [/\/clusterCount must be integer/] },
  );
});

t.test(
  'the Resend, Twilio, Vercel and MongoDB Atlas twin tests send their calls through the check',
  async (t) => {
    const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8');
    t.match(
      read('./resend.test.ts'),
      /checkGlobalFetch\(\s*t,\s*'resend'/,
      'resend-node through the checked fetch',
    );
    t.notMatch(read('./resend.test.ts'), /new Resend\([^)]*\{/, 'no Resend client with options of its own');
    const twilio = read('./twilio.test.ts');
    t.match(twilio, /assertVendorResponse\('twilio'/, "twilio-node's http client checks every answer");
    t.equal(
      twilio.match(/httpClient: /g)?.length,
      1,
      'one twilio client builder, with the checking http client',
    );
    const vercel = read('./vercel.test.ts');
    t.equal(vercel.match(/new Vercel\(/g)?.length, 1, 'one @vercel/sdk client builder');
    t.match(vercel, /fetcher: vendorFetch\('vercel'\)/, 'with the checking fetcher');
    const atlas = read('./mongoatlas.test.ts');
    t.match(
      atlas,
      /const atlasFetch = vendorFetch\('mongoatlas'\)/,
      'Admin API calls through the checked fetch',
    );
    t.notMatch(
      atlas,
      /await fetch\(`\$\{env\.MONGODB_ATLAS_BASE_URL\}\/api\/atlas\/v2\$\{path\}/,
      'not the bare one',
    );
  },
);
