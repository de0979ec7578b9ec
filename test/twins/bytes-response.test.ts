import t from 'tap';
import { answerBytes, bytesAnswer, BytesResponse, json } from '../../server/twins/runtime/http.ts';

// bytesAnswer's Response keeps its bytes for the runtime; to anyone reading it, it must be a Response.

t.test('the runtime takes the bytes it was made with, unread', async (t) => {
  const body = Buffer.from('{"a":1}');
  const response = bytesAnswer(body, { status: 201, headers: { 'content-type': 'application/json' } });
  t.ok(response instanceof Response, 'a Response');
  t.ok(response instanceof BytesResponse, 'kept as bytes');
  t.equal(response.status, 201);
  t.equal(response.ok, true);
  t.equal(response.headers.get('content-type'), 'application/json');
  t.equal(response.headers.get('content-length'), null, 'no length header, as new Response gives none');
  t.equal(response.bodyUsed, false);
  t.equal(await answerBytes(response), body, 'the same Buffer, not a copy');
});

t.test('a reader sees what a plain Response shows, and its body is then used', async (t) => {
  const response = json(200, { b: [1, 2] }, { 'x-extra': 'yes' });
  t.equal(response.headers.get('x-extra'), 'yes');
  const copy = response.clone();
  t.same(await copy.json(), { b: [1, 2] }, 'a clone reads the body');
  t.equal(response.bodyUsed, false, 'the clone read left the original unread');
  t.equal(await response.text(), '{"b":[1,2]}');
  t.equal(response.bodyUsed, true);
  await t.rejects(response.text(), TypeError, 'a body reads once');
  t.throws(() => response.clone(), TypeError, 'a used body is not cloned');
  await t.rejects(answerBytes(response), TypeError, 'nor taken by the runtime after a reader');
});

t.test('its body stream can be passed on to another Response', async (t) => {
  const original = json(200, { c: 3 });
  const passed = new Response(original.body, { status: 202 });
  t.equal(passed.status, 202);
  t.equal(await passed.text(), '{"c":3}');
  const reads = ['arrayBuffer', 'blob', 'bytes'] as const;
  let readsChecked = 0;
  for (const read of reads) {
    const response = json(200, { d: read });
    const value = await (
      response as unknown as Record<string, () => Promise<ArrayBuffer | Blob | Uint8Array>>
    )[read]!();
    const bytes = value instanceof Blob ? await value.arrayBuffer() : value;
    t.equal(Buffer.from(bytes as ArrayBuffer).toString(), `{"d":"${read}"}`, `${read}() reads the bytes`);
    readsChecked++;
  }
  t.equal(readsChecked, reads.length, 'every read was checked');
});

t.test('a status without a body refuses bytes, as new Response does', async (t) => {
  const statuses = [204, 304];
  let checked = 0;
  for (const status of statuses) {
    t.throws(() => bytesAnswer(Buffer.from('x'), { status }), TypeError, `${status}`);
    checked++;
  }
  t.equal(checked, statuses.length, 'every status was checked');
});
