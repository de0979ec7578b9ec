/**
 * Finished answers to an engine twin's reads, kept while the engine's store is unchanged.
 *
 * For a read whose answer the engine builds from its store alone (Twilio's and Atlas's GETs: no clock, no
 * random value, no counter in the body), the same request against the same store gets the same bytes. The
 * engine's routing, its handler and the Response it streams back cost as much as the rest of the twin
 * together, so an app that polls one resource pays that on every call. An answer is kept with the
 * store's write count (Engine.writes) read before the engine was asked; any write since, by any caller
 * (a request, a webhook delivery the engine records, a seed, a reset, a restore), makes it stale.
 *
 * The key is the whole request as the engine sees it: method, URL, and every header in order (a header
 * the engine reads, the caller's credentials first of all, can change its answer). Bounded in count and in
 * bytes; the least recently used go first.
 */
import { BoundedLru } from '../runtime/bounded-lru.ts';
import { answerBytes, bytesAnswer } from '../runtime/http.ts';
import type { Engine } from './emulate.ts';

interface Kept {
  writes: number;
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
}

export class KeptAnswers {
  /** Sized by body and key: a key is kept as long as its answer. */
  private readonly answers: BoundedLru<Kept>;

  constructor(
    private readonly engine: Engine,
    maxAnswers = 64,
    maxBytes = 1024 * 1024,
  ) {
    this.answers = new BoundedLru(maxAnswers, maxBytes);
  }

  /** The request as the engine sees it, as a key. */
  static keyOf(request: Request): string {
    let key = `${request.method} ${request.url}`;
    request.headers.forEach((value, name) => {
      key += `\n${name}: ${value}`;
    });
    return key;
  }

  /**
   * The answer to a read under `key`: the kept one while the store has taken no write since, else the one
   * `build` makes (the engine asked, its answer shaped), kept for next time when it is a 200. No key: not
   * a read to keep, and `build` answers.
   */
  async serve(key: string | undefined, build: () => Promise<Response>): Promise<Response> {
    if (key === undefined) return build();
    const kept = this.answer(key);
    if (kept) return kept;
    const writes = this.writes();
    const answer = await build();
    if (answer.status !== 200) return answer;
    const body = await answerBytes(answer);
    this.keep(key, writes, answer.status, answer.headers, body);
    return bytesAnswer(body, { status: answer.status, headers: answer.headers });
  }

  /** The store's write count now: read it before asking the engine, and keep the answer with it. */
  writes(): number {
    return this.engine.writes();
  }

  /** The kept answer to `key`, as a new Response, while the store has taken no write since it was kept. */
  answer(key: string): Response | undefined {
    const kept = this.answers.get(key);
    if (!kept) return undefined;
    if (kept.writes !== this.engine.writes()) {
      this.answers.delete(key);
      return undefined;
    }
    return bytesAnswer(kept.body, { status: kept.status, headers: kept.headers });
  }

  /**
   * Keeps an answer made from the store as it was at `writes`; one made while the store changed (a write
   * in between, so a count that is no longer the store's) is not kept.
   */
  keep(key: string, writes: number, status: number, headers: Headers, body: Buffer): void {
    if (writes !== this.engine.writes()) return;
    const list: Array<[string, string]> = [];
    headers.forEach((value, name) => list.push([name, value]));
    this.answers.set(key, { writes, status, headers: list, body }, body.length + key.length);
  }
}
