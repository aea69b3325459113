/**
 * The operator console: its routes, its sign-in sessions and the admin guard that accepts them.
 *
 * Mounted by the composition root (src/gateway.ts):
 *   const consoleSessions = new ConsoleSessions(clock);
 *   const adminAuth = requireAdminOrConsole(admin.token, consoleSessions);   // instead of requireAdmin(admin.token)
 *   const consoleDeps = { adminToken: admin.token, sessions: consoleSessions, instances, portOf: portOfInstance, log };
 *   families: { name: 'console', auth: 'none', guard: null, router: consoleRouter(consoleDeps) },
 *             adminFamily('console-api', consoleApiRouter(consoleDeps)),
 *   stop():   consoleSessions.close();   // before the server closes: open event streams end
 */
export { consoleRouter, consoleApiRouter, consoleBundle, type ConsoleDeps, type ConsoleSnapshot } from './router.js';
export { ConsoleSessions, CONSOLE_COOKIE, CONSOLE_SESSION_TTL_MS } from './sessions.js';
export { requireAdminOrConsole } from './auth.js';
