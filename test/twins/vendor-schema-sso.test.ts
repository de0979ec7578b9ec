/**
 * The vendored descriptions of the AWS, Okta, Google, Microsoft and Apple twins refuse what the vendors' own
 * descriptions refuse: a missing required field and a wrong type (the twin tests send every answer
 * through these checks; here the checks themselves are shown to bite).
 */
import t from 'tap';
import { checkResponse } from './vendor-schema.ts';
import { readVendorSchemaJson } from './vendor-schema-dir.ts';
import { checkShape } from './smithy-check.ts';

t.test('apple: a token response without its id_token, or with a string expires_in, is invalid', async (t) => {
  const token = { access_token: 'a.b', token_type: 'Bearer', expires_in: 3600, id_token: 'x.y.z' };
  const ok = checkResponse('apple', { method: 'POST', path: '/auth/token', status: 200, body: token });
  t.same(ok.errors, []);
  const { id_token: _id, ...noIdToken } = token;
  const missing = checkResponse('apple', {
    method: 'POST',
    path: '/auth/token',
    status: 200,
    body: noIdToken,
  });
  t.match(missing.errors.join('\n'), /required property 'id_token'/);
  const wrong = checkResponse('apple', {
    method: 'POST',
    path: '/auth/token',
    status: 200,
    body: { ...token, expires_in: '3600' },
  });
  t.match(wrong.errors.join('\n'), /\/expires_in must be number/);
  const error = checkResponse('apple', {
    method: 'POST',
    path: '/auth/token',
    status: 400,
    body: { error: 'not_an_apple_error' },
  });
  t.equal(error.valid, false, 'an error code Apple does not document');
  t.equal(
    checkResponse('apple', { method: 'GET', path: '/auth/authorize', status: 200, body: '<html>' }).unchecked,
    true,
    'the sign-in page is a web page, not checked',
  );
});

t.test('okta: a user with a numeric id, or an error without errorCode, is invalid', async (t) => {
  const user = {
    id: '00u1',
    status: 'ACTIVE',
    created: '2026-01-01T00:00:00.000Z',
    profile: {
      login: 'ada@acme.example.com',
      email: 'ada@acme.example.com',
      firstName: 'Ada',
      lastName: 'L',
    },
  };
  const ok = checkResponse('okta', { method: 'GET', path: '/api/v1/users/00u1', status: 200, body: user });
  t.same(ok.errors, []);
  const wrong = checkResponse('okta', {
    method: 'GET',
    path: '/api/v1/users/00u1',
    status: 200,
    body: { ...user, id: 1 },
  });
  t.match(wrong.errors.join('\n'), /\/id must be string/);
  const badStatus = checkResponse('okta', {
    method: 'GET',
    path: '/api/v1/users/00u1',
    status: 200,
    body: { ...user, status: 'HAPPY' },
  });
  t.match(badStatus.errors.join('\n'), /\/status must be equal to one of the allowed values/);
  // 401 is listed for no management operation: Okta's Error schema applies (check.error_schema).
  const unauthorized = checkResponse('okta', {
    method: 'GET',
    path: '/api/v1/users',
    status: 401,
    body: { errorCode: 'E0000011', errorSummary: 'Invalid token provided', errorCauses: [] },
  });
  t.same(unauthorized.errors, []);
  const tokenOk = checkResponse('okta', {
    method: 'POST',
    path: '/oauth2/default/v1/token',
    status: 200,
    body: { access_token: 'x', token_type: 'Bearer', expires_in: 3600, scope: 'openid' },
  });
  t.same(tokenOk.errors, []);
  const tokenBad = checkResponse('okta', {
    method: 'POST',
    path: '/oauth2/default/v1/token',
    status: 200,
    body: { access_token: 'x', token_type: 'Bearer', expires_in: '3600' },
  });
  t.match(tokenBad.errors.join('\n'), /\/expires_in must be integer/);
});

t.test('microsoft: Graph users and errors are checked against the converted CSDL', async (t) => {
  const user = { id: '1', displayName: 'Adele', mail: 'adele@contoso.example', businessPhones: [] };
  t.same(
    checkResponse('microsoft', { method: 'GET', path: '/v1.0/users', status: 200, body: { value: [user] } })
      .errors,
    [],
  );
  const wrong = checkResponse('microsoft', {
    method: 'GET',
    path: '/v1.0/users',
    status: 200,
    body: { value: [{ ...user, businessPhones: 'none', accountEnabled: 'yes' }] },
  });
  t.match(wrong.errors.join('\n'), /\/value\/0\/businessPhones must be array/);
  t.match(wrong.errors.join('\n'), /\/value\/0\/accountEnabled must be boolean/);
  const noCode = checkResponse('microsoft', {
    method: 'GET',
    path: '/v1.0/me',
    status: 401,
    body: { error: { message: 'Access token is empty.' } },
  });
  t.match(noCode.errors.join('\n'), /required property 'code'/);
  const token = checkResponse('microsoft', {
    method: 'POST',
    path: '/oauth2/v2.0/token',
    status: 200,
    body: { token_type: 'Bearer', expires_in: 3599 },
  });
  t.match(token.errors.join('\n'), /required property 'access_token'/);
});

t.test('aws: outputs are checked against the Smithy shapes, required members included', async (t) => {
  const model = (service: string) =>
    readVendorSchemaJson<Parameters<typeof checkShape>[0]>('aws', `${service}.json`);
  const s3 = model('s3');
  const listed = {
    Name: 'app-uploads',
    KeyCount: 1,
    IsTruncated: false,
    Contents: [{ Key: 'a.txt', Size: 3, LastModified: new Date(), StorageClass: 'STANDARD' }],
  };
  t.same(checkShape(s3, 'com.amazonaws.s3#ListObjectsV2Output', listed), []);
  const errors = checkShape(s3, 'com.amazonaws.s3#ListObjectsV2Output', {
    ...listed,
    KeyCount: '1',
    Contents: [{ Key: 'a.txt', Size: 3, LastModified: '2026-01-01', StorageClass: 'CHEAP' }],
  });
  t.match(errors.join('\n'), /\/KeyCount must be an integer/);
  t.match(errors.join('\n'), /\/Contents\/0\/LastModified must be a timestamp/);
  t.match(errors.join('\n'), /\/Contents\/0\/StorageClass must be one of/);
  const sts = model('sts');
  const assumed = checkShape(sts, 'com.amazonaws.sts#AssumeRoleResponse', {
    Credentials: { AccessKeyId: 'ASIA', SecretAccessKey: 's', Expiration: new Date() },
    AssumedRoleUser: { AssumedRoleId: 'AROA:x', Arn: 'arn:aws:sts::123456789012:assumed-role/r/x' },
  });
  t.same(assumed, ["/Credentials must have required member 'SessionToken'"]);
});

t.test('google: Gmail answers are checked against the converted Discovery document', async (t) => {
  const message = {
    id: '18c',
    threadId: '18c',
    labelIds: ['INBOX'],
    historyId: '1042',
    internalDate: '1700000000000',
  };
  t.same(
    checkResponse('google', {
      method: 'GET',
      path: '/gmail/v1/users/me/messages/18c',
      status: 200,
      body: message,
    }).errors,
    [],
  );
  const wrong = checkResponse('google', {
    method: 'GET',
    path: '/gmail/v1/users/me/messages/18c',
    status: 200,
    body: { ...message, historyId: 1042, labelIds: 'INBOX' },
  });
  t.match(wrong.errors.join('\n'), /\/historyId must be string/);
  t.match(wrong.errors.join('\n'), /\/labelIds must be array/);
  const notDigits = checkResponse('google', {
    method: 'GET',
    path: '/gmail/v1/users/me/profile',
    status: 200,
    body: { emailAddress: 'ada@acme.dev', historyId: 'h1' },
  });
  t.match(notDigits.errors.join('\n'), /\/historyId must match pattern/, 'a uint64 is a string of digits');
  const error = checkResponse('google', {
    method: 'GET',
    path: '/gmail/v1/users/me/messages',
    status: 401,
    body: { error: { code: 401, message: 'Invalid Credentials' } },
  });
  t.match(error.errors.join('\n'), /required property 'status'/);
  const token = checkResponse('google', {
    method: 'POST',
    path: '/oauth2/token',
    status: 200,
    body: { access_token: 'ya29.x', token_type: 'Bearer' },
  });
  t.match(token.errors.join('\n'), /required property 'expires_in'/);
});
