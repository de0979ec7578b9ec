import Joi from 'joi';
import { faultSchema, type FaultInjector } from './faults.ts';
import { TwinInputError, type TwinDriver, type TwinFactory } from '../contract.ts';
import type { RequestLog } from './request-log.ts';

/** The admin API lives on the instance's own port under this prefix, which no vendor API uses. */
export const ADMIN_PREFIX = '/_twinbox';

const targetSchema = Joi.object({
  url: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .required(),
  secret: Joi.string().min(1),
  events: Joi.array().items(Joi.string()).default(['*']),
});

const deliverSchema = Joi.object({
  event: Joi.string().required(),
  payload: Joi.object().unknown(true).required(),
});

export interface AdminDeps {
  factory: TwinFactory;
  driver: () => TwinDriver;
  faults: FaultInjector;
  log: RequestLog;
  info: () => unknown;
  /** Called after anything that changes persisted state; resolves once the change is on disk. */
  changed: () => Promise<void>;
  reset: () => Promise<void>;
  applySeed: (seed: unknown) => Promise<void>;
  defaultWebhookSecret: () => string;
}

/** An optional integer query parameter of at least `min`; 400 with what was wrong otherwise. */
function integerParam(query: URLSearchParams, name: string, min: number): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  const value = /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < min)
    throw new TwinInputError(400, `${name} must be an integer of at least ${min}`);
  return value;
}

function validate<T>(schema: Joi.Schema, value: unknown): T {
  const { error, value: out } = schema.validate(value ?? {}, { abortEarly: true });
  if (error) throw new TwinInputError(400, error.message);
  return out as T;
}

/** Routes one admin request; the caller has already checked the admin token. */
export async function routeAdmin(
  deps: AdminDeps,
  method: string,
  subpath: string,
  query: URLSearchParams,
  body: unknown,
): Promise<{ status: number; body: unknown }> {
  const ok = (b: unknown, status = 200) => ({ status, body: b });
  const driver = deps.driver();
  const route = `${method} ${subpath}`;
  switch (route) {
    case 'GET /':
      return ok(deps.info());
    case 'GET /state':
      return ok({ twin: deps.factory.name, state: driver.snapshot() });
    case 'POST /reset':
      await deps.reset();
      return ok({ reset: true });
    case 'POST /seed':
      await deps.applySeed(deps.factory.validateSeed(body));
      return ok({ seeded: true });
    case 'GET /requests': {
      const limit = integerParam(query, 'limit', 1) ?? deps.log.capacity;
      const after = integerParam(query, 'after', 0);
      const before = integerParam(query, 'before', 1);
      return ok(deps.log.page({ after, before, limit }));
    }
    case 'DELETE /requests':
      deps.log.clear();
      return ok({ cleared: true });
    case 'GET /faults':
      return ok({ faults: deps.faults.list() });
    case 'POST /faults':
      return ok(deps.faults.add(validate(faultSchema, body)), 201);
    case 'DELETE /faults':
      deps.faults.clear();
      return ok({ cleared: true });
    case 'GET /webhooks': {
      const t = driver.webhooks.target;
      return ok({
        target: t ? { url: t.url, events: t.events } : null,
        deliveries: driver.webhooks.list(),
      });
    }
    case 'PUT /webhooks/target': {
      const t = validate<{ url: string; secret?: string; events: string[] }>(targetSchema, body);
      driver.webhooks.target = {
        url: t.url,
        secret: t.secret ?? deps.defaultWebhookSecret(),
        events: t.events,
      };
      await deps.changed();
      return ok({ target: { url: t.url, events: t.events } });
    }
    case 'DELETE /webhooks/target':
      driver.webhooks.target = undefined;
      await deps.changed();
      return ok({ target: null });
    case 'POST /webhooks/deliveries': {
      const d = validate<{ event: string; payload: unknown }>(deliverSchema, body);
      if (!driver.webhooks.target) throw new TwinInputError(409, 'no webhook target is configured');
      return ok(await driver.webhooks.deliver(d.event, d.payload, { force: true }), 201);
    }
  }
  const redeliver = /^\/webhooks\/deliveries\/(\d+)\/redeliver$/.exec(subpath);
  if (method === 'POST' && redeliver) {
    if (!driver.webhooks.target) throw new TwinInputError(409, 'no webhook target is configured');
    const delivery = await driver.webhooks.redeliver(Number(redeliver[1]));
    if (!delivery) throw new TwinInputError(404, `no delivery ${redeliver[1]}`);
    return ok(delivery, 201);
  }
  const extra = await driver.adminRoutes?.(method, subpath, body);
  if (extra) {
    await deps.changed();
    return extra;
  }
  throw new TwinInputError(404, `no admin route ${method} ${subpath}`);
}
