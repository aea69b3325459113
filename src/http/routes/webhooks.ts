/**
 * Operator routes for an instance's webhook (DESIGN.md "Operator interface"), mounted behind admin auth:
 *
 *   PUT    /admin/v1/instances/:id/webhook              {url, secret, events?, allowPrivate?, enabled?}
 *   GET    /admin/v1/instances/:id/webhook
 *   DELETE /admin/v1/instances/:id/webhook
 *   POST   /admin/v1/instances/:id/webhook/test         {message?}  → 202 {eventId}
 *   GET    /admin/v1/instances/:id/webhook/deliveries   ?limit&cursor&state
 *   POST   /admin/v1/instances/:id/webhook/deliveries/:eventId/redeliver   → 202 {eventId, state: 'pending'}
 *
 * The secret is accepted, never shown. The URL is checked against the SSRF rules at PUT unless the webhook
 * (allowPrivate) or the gateway (WEBHOOK_ALLOW_PRIVATE) allows private targets; the sender checks again
 * at every connection.
 */
import Router from '@koa/router';
import { createRouter, takes } from '../router.js';
import { enums, object, optional, defaulted } from 'superstruct';
import { ok } from '../envelope.js';
import { DomainError, validationFailed } from '../../errors.js';
import { chars, parse, queryInteger } from '../validate.js';
import { assertPublicUrl, checkUrlSyntax, type Resolver } from '../../media/ssrf.js';
import type { Clock } from '../../clock.js';
import type { Queryable } from '../../store/pool.js';
import { deleteWebhook, getWebhook, holdsMask, putWebhook, toView, WebhookInput } from '../../webhooks/config.js';
import { decodeCursor, DELIVERY_STATES, listDeliveries, redeliver } from '../../webhooks/deliveries.js';
import { EVENT_NAMES, maxAttemptsFor, NORMAL_ATTEMPTS } from '../../webhooks/events.js';
import { enqueueEvent } from '../../webhooks/outbox.js';
import { settleForChange } from '../../webhooks/pending.js';
import { existingInstanceId } from '../../store/instances.js';

export interface WebhookAdminDeps {
  db: Queryable;
  clock: Clock;
  /** wake the instance's webhook sender after an event was committed */
  wake(instanceId: string): void;
  /** the instance's webhook was replaced, disabled or removed: its sender reads it again before its next attempt */
  receiverChanged(instanceId: string): void;
  /** WEBHOOK_ALLOW_PRIVATE */
  allowPrivate?: boolean;
  resolver?: Resolver;
}

export const TestInput = object({ message: optional(chars(1, 1000)) });
export const DeliveriesQuery = object({
  limit: defaulted(queryInteger(1, 200), 50),
  cursor: optional(chars(1, 100)),
  state: optional(enums(DELIVERY_STATES)),
});

/** The configured per-delivery maximum of every event: a redelivery's fresh budget. */
const BUDGETS: ReadonlyMap<string, number> = new Map(EVENT_NAMES.map((e) => [e, maxAttemptsFor(e)]));
const EVENT_ID = /^ev_[A-Za-z0-9_-]{1,80}$/;

export function createWebhookAdminRouter(deps: WebhookAdminDeps): Router {
  const router = createRouter();

  // as the gateway keeps it: the sender is woken by that id
  const instanceId = (raw: string | undefined): Promise<string> => existingInstanceId(deps.db, raw ?? '');
  const noWebhook = (id: string) => new DomainError('NOT_FOUND', 'no webhook configured for this instance', { instanceId: id });

  router.put('/admin/v1/instances/:id/webhook', takes({ body: true }), async (ctx) => {
    const id = await instanceId(ctx.params.id);
    const input = parse(ctx.request.body, WebhookInput);
    // a URL as GET shows it, its credentials masked (a read, edit, write round trip): storing it would send every
    // delivery with `***` for the token; the full URL is needed, as the secret is
    if (holdsMask(input.url)) {
      throw validationFailed('url', 'url holds a part masked as GET shows it (***) where a credential goes: send the full URL');
    }
    const allowPrivate = input.allowPrivate === true || deps.allowPrivate;
    const url = allowPrivate
      ? checkUrlSyntax(input.url, { field: 'url', allowPrivate })
      : await assertPublicUrl(input.url, { field: 'url', resolver: deps.resolver });
    // kept as the URL parser reads it, which is where deliveries go: spaces around it and tabs or line breaks
    // inside it dropped (`http://example.com<TAB>.evil.com` is example.com.evil.com), control characters encoded
    const saved = await putWebhook(deps.db, id, { ...input, url: url.href });
    await settleForChange(deps.db, id, deps.clock.now(), saved.enabled ? saved.events : null);
    // Rows that were pending go to the new receiver now rather than at the next poll, and none of them to the old
    // one after the attempt in flight (found from the outside: the rest of a batch went on to the old URL, signed
    // with the old secret)
    deps.receiverChanged(id);
    ok(ctx, toView(saved));
  });

  router.get('/admin/v1/instances/:id/webhook', takes(), async (ctx) => {
    const id = await instanceId(ctx.params.id);
    const cfg = await getWebhook(deps.db, id);
    if (!cfg) throw noWebhook(id);
    ok(ctx, toView(cfg));
  });

  router.delete('/admin/v1/instances/:id/webhook', takes(), async (ctx) => {
    const id = await instanceId(ctx.params.id);
    const deleted = await deleteWebhook(deps.db, id);
    if (deleted) {
      // what was pending fails now ("webhook removed"); the sender sees it from its next attempt on
      await settleForChange(deps.db, id, deps.clock.now(), null);
      deps.receiverChanged(id);
    }
    ok(ctx, { deleted });
  });

  router.post('/admin/v1/instances/:id/webhook/test', takes({ body: true }), async (ctx) => {
    const id = await instanceId(ctx.params.id);
    const { message } = parse(ctx.request.body, TestInput);
    const cfg = await getWebhook(deps.db, id);
    if (!cfg) throw noWebhook(id);
    const written = await enqueueEvent(deps.db, {
      instanceId: id,
      event: 'test',
      data: { message: message ?? 'Test event from the messaging gateway' },
      now: deps.clock.now(),
    });
    if (!written) {
      throw new DomainError('CONFLICT', 'the webhook is disabled or not subscribed to event test', { instanceId: id });
    }
    deps.wake(id);
    ok(ctx, { eventId: written.eventId }, 202);
  });

  router.get('/admin/v1/instances/:id/webhook/deliveries', takes({ query: Object.keys(DeliveriesQuery.schema) }), async (ctx) => {
    const id = await instanceId(ctx.params.id);
    const query = parse({ ...ctx.query }, DeliveriesQuery);
    if (query.cursor !== undefined && decodeCursor(query.cursor) === null) {
      throw new DomainError('VALIDATION_FAILED', 'cursor is invalid', { field: 'cursor' });
    }
    ok(ctx, await listDeliveries(deps.db, id, { limit: query.limit, cursor: query.cursor, state: query.state }));
  });

  // Put a failed or delivered row back to pending (src/webhooks/deliveries.ts redeliver): one conditional
  // statement, then the sender is woken. It goes out before newer pending rows (the outbox is delivered in id order).
  router.post('/admin/v1/instances/:id/webhook/deliveries/:eventId/redeliver', takes(), async (ctx) => {
    const id = await instanceId(ctx.params.id);
    const eventId = String(ctx.params.eventId ?? '');
    const notFound = () => new DomainError('NOT_FOUND', 'no delivery with this event id for this instance', { instanceId: id, eventId });
    if (!EVENT_ID.test(eventId)) throw notFound();
    const r = await redeliver(deps.db, id, eventId, { now: deps.clock.now(), budgets: BUDGETS, defaultBudget: NORMAL_ATTEMPTS });
    switch (r.kind) {
      case 'not-found':
        throw notFound();
      case 'still-pending':
        throw new DomainError('CONFLICT', 'the delivery is still pending: it is being delivered or waits for its next attempt', { instanceId: id, eventId, state: 'pending' });
      case 'no-webhook':
        throw new DomainError('CONFLICT', 'no enabled webhook for this instance: set or enable the webhook before redelivering', { instanceId: id, eventId, state: r.state });
      case 'pending':
        deps.wake(id);
        ok(ctx, { eventId, state: 'pending' }, 202);
    }
  });

  return router;
}
