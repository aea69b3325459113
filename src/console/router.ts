/**
 * The operator console at /console: one page (src/console/page.ts), its script bundled from
 * src/console/client/ with esbuild on the first request (cached for the process; no build step, no CDN), and
 * the sign-in (POST /console/session). Two routers, mounted as two families by the composition root:
 *
 * - consoleRouter (auth 'none'): the page, its script and style, GET/POST /console/session;
 * - consoleApiRouter (auth 'admin', guard requireAdminOrConsole): sign-out (DELETE /console/session), the
 *   server-sent event stream of the instances (GET /console/events, read every 2 s on the server) and the
 *   structure of the instance and job machines for the state diagrams (GET /console/machines, machines.ts).
 *
 * Everything else the page does goes through the existing /admin/v1 routes, authenticated by the session
 * cookie (src/console/auth.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { createRouter } from '../http/router.js';
import { ok } from '../http/envelope.js';
import { DomainError, validationFailed } from '../errors.js';
import type { InstanceAdmin } from '../http/routes/admin-instances.js';
import type { InstancePort } from '../actors/port.js';
import type { Logger } from '../log.js';
import { CONSOLE_COOKIE, type ConsoleSessions } from './sessions.js';
import { checkConsoleRequest } from './auth.js';
import { requireAdmin } from '../http/auth.js';
import { CONSOLE_CSS, CONSOLE_HTML } from './page.js';
import { consoleMachines } from './machines.js';
import { consoleReadings } from './readings.js';

export type { ConsoleItem, ConsoleSnapshot, QueueCounts } from './readings.js';

export interface ConsoleDeps {
  adminToken: string;
  sessions: ConsoleSessions;
  instances: Pick<InstanceAdmin, 'list' | 'describe'>;
  /** the way into an instance, for its queue counts (left out: the console shows none) */
  portOf?: (instanceId: string) => Pick<InstancePort, 'ask'>;
  /** how often the event stream reads the instances (default 2 s) */
  pollMs?: number;
  log?: Logger;
}

// the page's own script, style and images only; data: for the QR image
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

const digest = (s: string) => createHash('sha256').update(s).digest();

let bundle: Promise<string> | null = null;

/** The client bundled once per process: from the TypeScript sources, or the compiled ones under dist/. */
export function consoleBundle(): Promise<string> {
  bundle ??= (async () => {
    const { build } = await import('esbuild');
    const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'client');
    const ts = path.join(dir, 'main.ts');
    const entry = existsSync(ts) ? ts : path.join(dir, 'main.js');
    const out = await build({ entryPoints: [entry], bundle: true, write: false, format: 'iife', target: 'es2020', minify: true, legalComments: 'none', logLevel: 'silent' });
    const file = out.outputFiles[0];
    if (!file) throw new Error('esbuild produced no console bundle');
    return file.text;
  })();
  bundle.catch(() => {
    bundle = null; // the next request tries again
  });
  return bundle;
}

function page(ctx: Context, type: string, body: string): void {
  ctx.set('Content-Security-Policy', CSP);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Cache-Control', 'no-cache');
  ctx.type = type;
  ctx.body = body;
}

export function consoleRouter(deps: ConsoleDeps): Router {
  const router = createRouter();
  const expected = digest(deps.adminToken);

  router.get('/console', (ctx) => page(ctx, 'text/html; charset=utf-8', CONSOLE_HTML));
  router.get('/console/app.css', (ctx) => page(ctx, 'text/css; charset=utf-8', CONSOLE_CSS));
  router.get('/console/app.js', async (ctx) => page(ctx, 'application/javascript; charset=utf-8', await consoleBundle()));

  router.get('/console/session', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ok(ctx, { signedIn: deps.sessions.valid(deps.sessions.idOf(ctx)) });
  });

  // Sign-out needs no valid session: it ends the one the cookie names, if any, and clears the cookie. Found from
  // the outside: behind the admin guard, a cookie this node did not know (signed in on another node of a cluster)
  // was refused 401 before the cookie was cleared, and the page said "Signed out." of a session that stayed valid.
  // The session ends also when the request came with the admin token (it answered signedIn false while the
  // cookie's session stayed valid). From a browser, not from another site and only with X-Console: 1
  // (checkConsoleRequest); with an Authorization header, only the admin token (a page of another site cannot send
  // one without a preflight this server never answers).
  const admin = requireAdmin(deps.adminToken);
  router.delete('/console/session', async (ctx) => {
    if (ctx.get('authorization') === '') checkConsoleRequest(ctx);
    else await admin(ctx, async () => undefined);
    const id = deps.sessions.idOf(ctx);
    if (id !== null) deps.sessions.delete(id);
    ctx.cookies.set(CONSOLE_COOKIE, '', { ...cookieSecurity(ctx), maxAge: 0, overwrite: true });
    ctx.set('Cache-Control', 'no-store');
    ok(ctx, { signedIn: false });
  });

  router.post('/console/session', (ctx) => {
    checkConsoleRequest(ctx);
    const body = ctx.request.body as { token?: unknown } | undefined;
    const token = body?.token;
    if (typeof token !== 'string' || token.length === 0 || token.length > 512) throw validationFailed('token', 'token must be the admin token');
    if (!timingSafeEqual(digest(token), expected)) {
      // said once a refusal (the request line says 401 too): a guessing run stands out in the log. Never the token
      deps.log?.warn({ ip: ctx.ip }, 'console sign-in refused: not the admin token');
      throw new DomainError('UNAUTHORIZED', 'the admin token is not valid');
    }
    const old = deps.sessions.idOf(ctx);
    if (old !== null) deps.sessions.delete(old);
    const id = deps.sessions.create();
    ctx.cookies.set(CONSOLE_COOKIE, id, { ...cookieSecurity(ctx), maxAge: 12 * 60 * 60 * 1000, overwrite: true });
    ctx.set('Cache-Control', 'no-store');
    ok(ctx, { signedIn: true });
  });

  return router;
}

/**
 * The console cookie's attributes: HttpOnly, SameSite=Strict, Path=/, and Secure when the browser reached the
 * console over HTTPS: this server's own TLS, or a proxy in front of it that ended TLS and says so with
 * `X-Forwarded-Proto: https` (found from the outside: behind such a proxy the cookie was never Secure, so a
 * browser would send it over plain HTTP to the same host). The header is believed without a trusted-proxy list:
 * a client that sends it falsely over plain HTTP only gets a cookie its browser will not send back.
 */
function cookieSecurity(ctx: Context): { httpOnly: true; sameSite: 'strict'; path: '/'; secure: boolean } {
  const forwarded = ctx.get('x-forwarded-proto').split(',')[0]?.trim().toLowerCase() === 'https';
  const secure = ctx.secure || forwarded;
  // the cookie jar refuses a Secure cookie on a connection it takes for plain HTTP (this one, behind the proxy)
  if (secure) ctx.cookies.secure = true;
  return { httpOnly: true, sameSite: 'strict', path: '/', secure };
}

/** Sign-out and the event stream; mounted behind requireAdminOrConsole (the cookie or the admin token). */
export function consoleApiRouter(deps: ConsoleDeps): Router {
  const router = createRouter();
  const pollMs = deps.pollMs ?? 2_000;

  // the state diagrams: the machines' own structure (nested and parallel states, transitions with their events)
  router.get('/console/machines', (ctx) => ok(ctx, consoleMachines()));

  // the console's session (ended by signing out) or a bearer client (ended by the gateway stopping)
  router.get('/console/events', (ctx) => {
    const id = ctx.state.console === true ? deps.sessions.idOf(ctx) : null;
    const readings = consoleReadings(deps);
    const stream = new PassThrough();
    let ended = false;
    let busy = false;
    const send = (event: string, data: unknown) => {
      if (!ended) stream.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const tick = async () => {
      if (busy || ended) return;
      busy = true;
      try {
        if (id !== null && !deps.sessions.valid(id)) return stop('signed-out');
        send('instances', await readings.read());
      } catch (err) {
        deps.log?.warn({ err }, 'console event stream: reading the instances failed');
        send('problem', { message: 'the instances could not be read; retrying' });
      } finally {
        busy = false;
      }
    };
    const timer = setInterval(() => void tick(), pollMs);
    timer.unref();
    // signed out: the page is told so; the gateway stopping: the stream just ends (the browser reconnects later)
    const untrack = deps.sessions.track(id, (signedOut) => stop(signedOut ? 'signed-out' : undefined));
    function stop(reason?: string): void {
      if (ended) return;
      if (reason) send(reason, {});
      ended = true;
      clearInterval(timer);
      untrack();
      stream.end();
    }
    ctx.req.on('close', () => stop());
    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    ctx.status = 200;
    ctx.type = 'text/event-stream';
    ctx.set('Cache-Control', 'no-store');
    ctx.set('X-Accel-Buffering', 'no');
    ctx.body = stream;
    stream.write(`retry: ${pollMs}\n\n`);
    void tick();
  });

  return router;
}
