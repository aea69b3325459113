/**
 * The admin guard with the console's cookie as a second way in. A request with an Authorization header is
 * checked by the admin guard exactly as before (src/http/auth.ts requireAdmin). Without one, a valid console
 * session cookie (src/console/sessions.ts) authenticates it as the operator; a cookie-authenticated request
 * that changes something (any method but GET, HEAD, OPTIONS) must also carry `X-Console: 1`, which a cross-site
 * form or image cannot send (CSRF), and is refused when the browser says it comes from another site.
 * A cookie that names no session is refused as such (401); anything else is answered by the admin guard (401 for
 * a missing header), so the refusals stay the same.
 */
import type { Context, Middleware, Next } from 'koa';
import { DomainError } from '../errors.js';
import { requireAdmin } from '../http/auth.js';
import { CONSOLE_COOKIE, type ConsoleSessions } from './sessions.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The refusal of a console cookie that names no session: signed out, expired (12 h), made before this node
 * restarted, or made by another node (sessions are kept in each node's memory: README, *Running several nodes*).
 */
export const SESSION_ENDED = 'the console session has ended (signed out, expired, or not made by this node since it started): sign in again';

/** The checks every cookie-authenticated request passes (the console's own routes use them too). */
export function checkConsoleRequest(ctx: Context): void {
  // Sec-Fetch-Site is sent by current browsers; absent from other clients, which carry no cookie anyway
  if (ctx.get('sec-fetch-site') === 'cross-site') throw new DomainError('FORBIDDEN', 'the console cookie is accepted from the console only');
  if (!SAFE_METHODS.has(ctx.method) && ctx.get('x-console') !== '1') {
    throw new DomainError('FORBIDDEN', 'a console request that changes something needs the header X-Console: 1');
  }
}

export function requireAdminOrConsole(adminToken: string, sessions: ConsoleSessions): Middleware {
  const admin = requireAdmin(adminToken);
  return async function adminOrConsoleAuth(ctx: Context, next: Next): Promise<void> {
    if (ctx.state.authenticated === 'admin' || ctx.get('authorization') !== '') return admin(ctx, next);
    const id = sessions.idOf(ctx);
    if (!sessions.valid(id)) {
      // a console cookie no session has: say so, not "Authorization header missing" (found from the outside)
      if (ctx.cookies.get(CONSOLE_COOKIE)) throw new DomainError('UNAUTHORIZED', SESSION_ENDED);
      return admin(ctx, next);
    }
    checkConsoleRequest(ctx);
    ctx.state.authenticated = 'admin';
    ctx.state.console = true;
    await next();
  };
}
