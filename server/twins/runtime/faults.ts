import Joi from 'joi';

/**
 * Fault injection: a rule makes the next `count` matching requests (or a `ratio` share of them) fail
 * with a status, a latency, or the vendor's rate-limit error, so an app's error handling can be tested.
 */
export interface FaultRule {
  id: number;
  /** HTTP status of an injected error (e.g. 500, 503). */
  status?: number;
  /** Delay added before the request is served (or failed). */
  latency_ms?: number;
  /** Answer with the vendor's rate-limit error (GitHub 403/429, Stripe 429, Slack 429 `ratelimited`). */
  rate_limit?: boolean;
  /** Number of matching requests the rule applies to; omitted means until removed. */
  count?: number;
  /** Share (0..1] of matching requests the rule applies to. */
  ratio?: number;
  /** Only requests whose path starts with this prefix. */
  path_prefix?: string;
  method?: string;
}

export const faultSchema = Joi.object({
  status: Joi.number().integer().min(400).max(599),
  latency_ms: Joi.number().integer().min(0).max(60_000),
  rate_limit: Joi.boolean(),
  count: Joi.number().integer().min(1),
  ratio: Joi.number().greater(0).max(1),
  path_prefix: Joi.string().pattern(/^\//),
  method: Joi.string().uppercase(),
})
  .or('status', 'latency_ms', 'rate_limit')
  .oxor('status', 'rate_limit');

export type FaultDecision = Pick<FaultRule, 'id' | 'status' | 'latency_ms' | 'rate_limit'>;

export class FaultInjector {
  private rules: FaultRule[] = [];
  private nextId = 1;

  constructor(private readonly random: () => number = Math.random) {}

  add(rule: Omit<FaultRule, 'id'>): FaultRule {
    const created = { id: this.nextId++, ...rule };
    this.rules.push(created);
    return created;
  }

  list(): FaultRule[] {
    return this.rules.map((rule) => ({ ...rule }));
  }

  clear(): void {
    this.rules = [];
  }

  /** The first rule that fires for this request; consumes one unit of its count. */
  decide(method: string, path: string): FaultDecision | undefined {
    for (const rule of this.rules) {
      if (rule.method && rule.method !== method) continue;
      if (rule.path_prefix && !path.startsWith(rule.path_prefix)) continue;
      if (rule.ratio !== undefined && this.random() >= rule.ratio) continue;
      if (rule.count !== undefined) {
        rule.count -= 1;
        if (rule.count <= 0) this.rules = this.rules.filter((r) => r !== rule);
      }
      return { id: rule.id, status: rule.status, latency_ms: rule.latency_ms, rate_limit: rule.rate_limit };
    }
    return undefined;
  }
}
