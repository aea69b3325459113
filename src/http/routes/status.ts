/** GET /api/status and GET /api/qr (SPEC.md "Status object", "Status and link endpoints"). */
import Router from '@koa/router';
import { createRouter } from '../router.js';
import type { Context } from 'koa';
import { ok } from '../envelope.js';
import { DEADLINES, type InstancePort } from '../../actors/port.js';
import type { Instance } from '../../store/instances.js';
import { staleWhileRevalidate } from '../../memo.js';
import type { Pool } from '../../store/pool.js';
import type { Clock } from '../../clock.js';
import { qrImage } from '../../qr-image.js';

export interface StatusRouteDeps {
  pool: Pool;
  clock: Clock;
  portOf(ctx: Context): InstancePort;
}

const QR_WAIT_MESSAGES: Record<string, string> = {
  initializing: 'the session is starting; the QR code will be available shortly',
  authenticated: 'signed in; finishing the link',
  disconnected: 'the session is not running; an operator restart or re-link is needed',
  error: 'the session failed and is restarting; the QR code will be available after the restart',
  waiting_qr: 'waiting for the QR code to be generated',
};

export function statusRouter(deps: StatusRouteDeps): Router {
  const router = createRouter('/api');
  const receivedOf = staleWhileRevalidate(1_000, async (instanceId: string) => {
    const { rows } = await deps.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM inbound_messages WHERE instance_id = $1 AND received_at > $2',
      [instanceId, new Date(deps.clock.now() - 86_400_000)],
    );
    return rows[0]?.n ?? 0;
  });

  router.get('/status', async (ctx) => {
    const port = deps.portOf(ctx);
    const [v, summary] = await Promise.all([port.ask({ type: 'view' }, DEADLINES.queueStatus), port.ask({ type: 'queue.summary' }, DEADLINES.queueStatus)]);
    const { mode, nextAt } = summary;
    // counts kept by the queue (no query; also while PostgreSQL is unreachable); messages received in the last
    // 24 h are answered from memory and refreshed in the background at most once a second per instance, so a
    // slow or unreachable store never holds the answer (it keeps the last count; 0 if it never answered)
    const c = summary.counts;
    const received = await receivedOf(port.instanceId).catch(() => 0);
    ok(ctx, {
      status: v.status,
      phoneNumber: v.phoneNumber ?? (ctx.state.instance as Instance).phoneNumber ?? '',
      connected: v.connected,
      browser: v.browser,
      queue: {
        sent: c.sent,
        failed: c.failed,
        queued: c.queued,
        pending: c.queued + c.scheduled,
        scheduled: c.scheduled,
        sending: c.sending,
        inFlight: c.sending,
        unknown: c.unknown,
        sent24h: c.sent24h,
        failed24h: c.failed24h,
        unknown24h: c.unknown24h,
        mode,
        degraded: mode === 'memory-degraded',
        nextAt: nextAt === null ? null : new Date(nextAt).toISOString(),
        limits: summary.limits,
      },
      messages: { sent: c.sent24h, received, failed: c.failed24h },
    });
  });

  router.get('/qr', async (ctx) => {
    const v = await deps.portOf(ctx).ask({ type: 'view' }, DEADLINES.read);
    if (v.connected) return ok(ctx, { status: 'connected', phoneNumber: v.phoneNumber ?? (ctx.state.instance as Instance).phoneNumber ?? '' });
    if (v.qrText !== null) return ok(ctx, { qr: qrImage(v.qrText), status: 'waiting_qr' });
    ok(ctx, { status: v.status, message: QR_WAIT_MESSAGES[v.status] ?? 'no QR code available yet' });
  });

  return router;
}
