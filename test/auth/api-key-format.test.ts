import t from 'tap';
import {
  API_KEY_PREFIX,
  generateApiKey,
  hasValidChecksum,
  hashApiKey,
} from '../../server/auth/api-key-format.ts';

t.test('keys carry the prefix, 192 random bits and a checksum', async (t) => {
  const keys = new Set(Array.from({ length: 200 }, generateApiKey));
  t.equal(keys.size, 200, 'no two keys alike');
  for (const key of keys) {
    t.match(key, /^twinbox_sk_[0-9A-Za-z]{39}$/);
    t.ok(hasValidChecksum(key));
  }
});

t.test('a changed character, a wrong length or another prefix fails the checksum', async (t) => {
  const key = generateApiKey();
  const body = key.slice(API_KEY_PREFIX.length);
  const flipped = body[5] === 'a' ? 'b' : 'a';
  t.notOk(hasValidChecksum(`${API_KEY_PREFIX}${body.slice(0, 5)}${flipped}${body.slice(6)}`));
  t.notOk(hasValidChecksum(key.slice(0, -1)));
  t.notOk(hasValidChecksum(`${key}0`));
  t.notOk(hasValidChecksum(key.replace('twinbox_sk_', 'other_sk_')));
  t.notOk(hasValidChecksum(''));
});

t.test('the stored hash is SHA-256 hex and does not contain the key', async (t) => {
  const key = generateApiKey();
  const hash = hashApiKey(key);
  t.match(hash, /^[0-9a-f]{64}$/);
  t.notOk(hash.includes(key.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + 8)));
});
